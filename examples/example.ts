/** @module The shape of a runnable example, and how a run's seed reaches its agents and tools. */
import type { AgentDefinition } from '../src/actors/agent-runtime.js';
import type { ExecContext } from '../src/context/exec-context.js';
import type { PriceTable } from '../src/engines/price-table.js';
import type { RouteRule } from '../src/orchestrator/rule-router.js';
import { RUN_SEED_KEY } from '../src/runs/run-records.js';
import type { ToolDefinition } from '../src/tools/define-tool.js';

/** Options every example accepts. */
export interface ExampleOptions {
  /** Delay per scripted token; default `AXON_SCRIPTED_TOKEN_MS` or 5 ms. */
  readonly tokenDelayMs?: number;
  /**
   * The price table of the example's own engine (the runtime's, `createRuntime({
   * priceTable })`, so that its calls cost what the runtime's do); default the shipped one.
   */
  readonly priceTable?: PriceTable;
}

/** A runnable example: its agents and tools, and how a message reaches them. */
export interface Example {
  readonly name: string;
  readonly description: string;
  /** The agent a message no rule matches goes to (the rule router's default handler). */
  readonly entry: string;
  /**
   * How `axon run` routes the message through the front door with `--router rules` (the
   * default): first match wins, else {@link entry}. With `--router embedding` the agents'
   * descriptions decide.
   */
  readonly routes: readonly RouteRule[];
  /** The default message. */
  readonly input: string;
  readonly agents: readonly AgentDefinition[];
  readonly tools: readonly ToolDefinition[];
}

/**
 * The context metadata key that carries a run's seed to an example's agents and tools; the
 * run records it as its `seed` (`RUN_SEED_KEY`).
 */
export const SEED_KEY = RUN_SEED_KEY;

/** The seed of a run whose context names none. */
export const DEFAULT_SEED = 42;

/**
 * The metadata that gives a root context, and so every step under it, `seed`.
 *
 * @example
 * const ctx = runtime.createContext({ metadata: seedMetadata(7) });
 * await runtime.invoke('planner', 'Plan a trip to Rome next Friday', ctx); // the same plan for 7, every time
 */
export function seedMetadata(seed: number): Readonly<Record<string, unknown>> {
  if (!Number.isSafeInteger(seed)) throw new RangeError(`seed must be an integer, got ${seed}`);
  return { [SEED_KEY]: seed };
}

/**
 * The seed of the run `ctx` belongs to: what {@link seedMetadata} put in its (or an
 * ancestor's) metadata, else {@link DEFAULT_SEED}. Children inherit metadata, so a tool
 * call three delegations down sees the seed its root context was given.
 */
export function seedOf(ctx: ExecContext): number {
  const seed = ctx.metadata[SEED_KEY];
  return typeof seed === 'number' && Number.isSafeInteger(seed) ? seed : DEFAULT_SEED;
}
