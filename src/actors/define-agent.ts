/**
 * @module Declaring agents: a name, a handler (function or async generator) or, for worker
 * placement, the module and export that hold it, and a timeout.
 */
import type { ProcessBehaviour } from '../adapters/process-behaviour.js';
import { containerModulePath } from '../tools/container-module.js';
import type {
  AgentDefinition,
  AgentGeneratorHandler,
  AgentHandler,
  ContainerAgentDefinition,
  InlineAgentDefinition,
  ProcessAgentDefinition,
  WorkerAgentDefinition,
} from './agent-runtime.js';
import { agentOutcome } from './agent-result.js';
import {
  DURABLE_DEFAULTS,
  type DurableAgentDefinition,
  type DurableAgentSpec,
  type MailboxPolicy,
} from './durable-agent.js';

interface AgentSpecBase {
  readonly name: string;
  readonly description?: string;
  /** Only a durable agent has it (see {@link DurableAgentSpec}). */
  readonly durable?: never;
  /** Per-invocation timeout; default 30 000 ms (Nerva's in-process default). */
  readonly timeoutMs?: number;
}

/** An agent that runs on the caller's thread (the default placement). */
export interface InlineAgentSpec<TOutput = unknown> extends AgentSpecBase {
  readonly placement?: 'inline';
  readonly handler: AgentHandler<TOutput>;
}

/** An agent that runs in the runtime's worker-thread pool, named by module and export. */
export interface WorkerAgentSpec extends AgentSpecBase {
  readonly placement: 'worker';
  /** A file URL (`import.meta.url`), an absolute path, or a package specifier. */
  readonly module: string;
  /** The export holding the handler (or an agent definition with one). */
  readonly export: string;
}

/** An agent that runs a child process per invocation: a CLI adapter, a subprocess agent. */
export interface ProcessAgentSpec extends AgentSpecBase {
  readonly placement: 'process';
  readonly behaviour: ProcessBehaviour;
}

/**
 * An agent that runs in a container of the runtime's container pool (`createRuntime({
 * container })`), named by module and export as a worker agent is. The module must be
 * JavaScript; its folder is mounted read-only in the container.
 */
export interface ContainerAgentSpec extends AgentSpecBase {
  readonly placement: 'container';
  /** A file URL (`import.meta.url`) or an absolute path of a `.js` / `.mjs` / `.cjs` file. */
  readonly module: string;
  /** The export holding the handler (or an agent definition with one). */
  readonly export: string;
}

/** What {@link defineAgent} takes. */
export type AgentSpec<TOutput = unknown> =
  InlineAgentSpec<TOutput> | WorkerAgentSpec | ProcessAgentSpec | ContainerAgentSpec;

/** The handler of a process agent: the process's output as tokens, its result as the agent's. */
function processHandler(behaviour: ProcessBehaviour): AgentGeneratorHandler {
  return async function* (input, ctx) {
    const result = yield* behaviour.run(input, ctx);
    if (result.status === 'success') return result.output;
    return agentOutcome(result.status, result.message, result.data ?? undefined);
  };
}

/** The default per-invocation agent timeout. */
export const DEFAULT_AGENT_TIMEOUT_MS = 30_000;

const NAME = /^[A-Za-z0-9_.:-]{1,128}$/;

/**
 * Declares an agent. Inline agents carry their handler; worker agents name it by module and
 * export, since functions do not cross threads.
 *
 * @example
 * const echo = defineAgent({ name: 'echo', handler: (input) => input.message });
 * const heavy = defineAgent({ name: 'heavy', placement: 'worker', module: import.meta.url, export: 'heavy' });
 */
export function defineAgent<TOutput>(
  spec: InlineAgentSpec<TOutput>,
): InlineAgentDefinition<TOutput>;
export function defineAgent(spec: WorkerAgentSpec): WorkerAgentDefinition;
export function defineAgent(spec: ProcessAgentSpec): ProcessAgentDefinition;
export function defineAgent(spec: ContainerAgentSpec): ContainerAgentDefinition;
export function defineAgent<TInput, TState, TOutput>(
  spec: DurableAgentSpec<TInput, TState, TOutput>,
): DurableAgentDefinition<TInput, TState, TOutput>;
export function defineAgent<TOutput>(spec: AgentSpec<TOutput>): AgentDefinition<TOutput>;
export function defineAgent<TOutput>(
  spec: AgentSpec<TOutput> | DurableAgentSpec<unknown, unknown, unknown>,
): AgentDefinition<TOutput> | DurableAgentDefinition {
  if (typeof spec.name !== 'string' || !NAME.test(spec.name)) {
    throw new TypeError(
      `defineAgent: name must match ${NAME.source}, got ${JSON.stringify(spec.name)}`,
    );
  }
  if (isDurableSpec(spec)) return defineDurable(spec);
  const timeoutMs = spec.timeoutMs ?? DEFAULT_AGENT_TIMEOUT_MS;
  if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new RangeError(
      `defineAgent(${spec.name}): timeoutMs must be a positive number, got ${timeoutMs}`,
    );
  }
  const base = {
    kind: 'agent' as const,
    name: spec.name,
    description: spec.description ?? '',
    timeoutMs,
  };
  if (spec.placement === 'worker') {
    for (const key of ['module', 'export'] as const) {
      if (typeof spec[key] !== 'string' || spec[key].length === 0) {
        throw new TypeError(
          `defineAgent(${spec.name}): a worker agent needs "${key}" (a non-empty string)`,
        );
      }
    }
    return { ...base, placement: 'worker', module: spec.module, export: spec.export };
  }
  if (spec.placement === 'process') {
    const behaviour = spec.behaviour as Partial<ProcessBehaviour> | undefined;
    if (typeof behaviour?.run !== 'function') {
      throw new TypeError(
        `defineAgent(${spec.name}): a process agent needs "behaviour" (from createCliAdapter, createSubprocessAgent, …)`,
      );
    }
    return {
      ...base,
      placement: 'process',
      behaviour: spec.behaviour,
      handler: processHandler(spec.behaviour),
    };
  }
  if (spec.placement === 'container') {
    const module = containerModulePath(`defineAgent(${spec.name})`, spec.module);
    if (typeof spec.export !== 'string' || spec.export.length === 0) {
      throw new TypeError(
        `defineAgent(${spec.name}): a container agent needs "export" (a non-empty string)`,
      );
    }
    return { ...base, placement: 'container', module, export: spec.export };
  }
  if ((spec.placement as string | undefined) !== undefined && spec.placement !== 'inline') {
    throw new TypeError(
      `defineAgent(${spec.name}): placement must be "inline", "worker", "process" or "container", got ${JSON.stringify(spec.placement)}`,
    );
  }
  if (typeof spec.handler !== 'function')
    throw new TypeError(`defineAgent(${spec.name}): handler must be a function`);
  return { ...base, placement: 'inline', handler: spec.handler };
}

/** Whether `spec` declares a durable agent (it has `durable`). */
function isDurableSpec(spec: object): spec is DurableAgentSpec<unknown, unknown, unknown> {
  return (spec as { durable?: unknown }).durable !== undefined;
}

const POLICIES: readonly MailboxPolicy[] = ['queue', 'reject', 'interrupt', 'merge'];

/** Whether `value` is a zod schema (what `input` and `durable.state` must be). */
function isSchema(value: unknown): value is { safeParse(v: unknown): { success: boolean } } {
  return typeof (value as { safeParse?: unknown } | null)?.safeParse === 'function';
}

/** A durable agent's definition, its options checked (see {@link DurableAgentSpec}). */
function defineDurable(spec: DurableAgentSpec<unknown, unknown, unknown>): DurableAgentDefinition {
  const where = `defineAgent(${spec.name})`;
  const placement = (spec as { placement?: unknown }).placement;
  if (placement !== undefined && placement !== 'inline') {
    throw new TypeError(
      `${where}: a durable agent runs inline; placement ${JSON.stringify(placement)} is not implemented for durable agents`,
    );
  }
  const d = spec.durable as Partial<DurableAgentSpec<unknown, unknown, unknown>['durable']> | null;
  if (typeof d !== 'object' || d === null)
    throw new TypeError(`${where}: durable must be an object`);
  if (!isSchema(d.state)) throw new TypeError(`${where}: durable.state must be a zod schema`);
  if (spec.input !== undefined && !isSchema(spec.input)) {
    throw new TypeError(`${where}: input must be a zod schema`);
  }
  if (!d.state.safeParse(d.initial).success) {
    throw new TypeError(`${where}: durable.initial does not match durable.state`);
  }
  const version = d.version;
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1) {
    throw new RangeError(
      `${where}: durable.version must be an integer >= 1, got ${String(version)}`,
    );
  }
  const idleMs = d.idleMs ?? DURABLE_DEFAULTS.idleMs;
  if (!(Number.isFinite(idleMs) && idleMs > 0)) {
    throw new RangeError(`${where}: durable.idleMs must be a positive number, got ${idleMs}`);
  }
  if (d.migrate !== undefined && typeof d.migrate !== 'function') {
    throw new TypeError(`${where}: durable.migrate must be a function`);
  }
  const mailbox = d.mailbox ?? {};
  const policy = mailbox.policy ?? 'queue';
  if (!POLICIES.includes(policy)) {
    throw new TypeError(
      `${where}: durable.mailbox.policy must be one of ${POLICIES.join(', ')}, got ${JSON.stringify(policy)}`,
    );
  }
  const maxQueue = mailbox.maxQueue ?? DURABLE_DEFAULTS.maxQueue;
  if (!Number.isInteger(maxQueue) || maxQueue < 1) {
    throw new RangeError(
      `${where}: durable.mailbox.maxQueue must be an integer >= 1, got ${maxQueue}`,
    );
  }
  if (policy === 'merge' && typeof mailbox.merge !== 'function') {
    throw new TypeError(`${where}: a "merge" mailbox needs durable.mailbox.merge (a function)`);
  }
  if (policy !== 'merge' && mailbox.merge !== undefined) {
    throw new TypeError(
      `${where}: durable.mailbox.merge is only for policy "merge", not "${policy}"`,
    );
  }
  if (typeof spec.handler !== 'function')
    throw new TypeError(`${where}: handler must be a function`);
  const timeoutMs = spec.timeoutMs ?? DEFAULT_AGENT_TIMEOUT_MS;
  if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new RangeError(`${where}: timeoutMs must be a positive number, got ${timeoutMs}`);
  }
  return {
    kind: 'durable_agent',
    name: spec.name,
    description: spec.description ?? '',
    timeoutMs,
    input: spec.input ?? null,
    durable: {
      state: d.state,
      initial: d.initial,
      version,
      idleMs,
      migrate: d.migrate ?? null,
      mailbox: {
        policy,
        maxQueue,
        merge: mailbox.merge ?? ((messages: readonly unknown[]) => messages[0]),
      },
    },
    handler: spec.handler,
  };
}
