/**
 * @module Flows and runs of API.md as library calls: flows stored by content (NERVE-4001),
 * runs of a flow with their mode, seed, budgets and policies (NERVE-4002). A run's facts are
 * `facts.ts`'s, its checkpoints and cancels `run-control.ts`'s.
 */
import { z } from 'zod';
import { canonicalHash, canonicalJson } from '../context/canonical-json.js';
import { isoTime, type Clock } from '../context/clock.js';
import type { IdSource } from '../context/id-source.js';
import { NotFoundError } from '../errors/not-found-error.js';
import { SchemaViolationError } from '../errors/schema-violation-error.js';
import { ReplayMismatchError } from '../errors/replay-mismatch-error.js';
import type { Sandbox } from '../policy/sandbox.js';
import type { FlowRecord, RunRecord } from '../store/records.js';
import { flushed, type RunStore } from '../store/run-store.js';
import { compileJsonSchema, type JsonSchema } from '../tools/json-schema.js';
import { schemaContradictions } from '../tools/schema-contradictions.js';
import type { SchemaRegistry } from '../tools/schema-registry.js';
import type { ActorSystem } from '../actors/actor-system.js';
import type { StepDispatch } from '../placement/fleet/fleet-jobs.js';
import { choosePool, type PoolCandidate } from '../placement/pool-choice.js';
import { parseBody, wireBudgetsSchema, wirePlacementSchema } from './request-bodies.js';

/** Who a run is for: its steps run under this user (rate limits, memory scope, policy). */
export interface RunOwner {
  /** The user the run belongs to; default none. */
  readonly userId?: string | null;
  /**
   * Whether the run's creator may read a run owned by `owner` (a user id, or `null` for a
   * run of nobody's): asked of the run `replay_of` names, which is `NotFoundError` when it
   * answers false, exactly as a run that does not exist. Default: every run (embedding code
   * that made no owner check of its own).
   */
  readonly mayRead?: (owner: string | null) => boolean;
}

/** What these operations need from the runtime. */
export interface FlowApiDeps {
  readonly store: RunStore;
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly system: ActorSystem;
  /** Where this runtime runs, for the provenance of the runs it ends (NERVE-4020). */
  readonly poolId: string;
  readonly replicaId: string | null;
  /** The pools a run's `pool_policy` may choose among, as they are now. */
  readonly pools: () => readonly PoolCandidate[];
  /**
   * The fleet submitted steps go to (`createRuntime({ fleet })`), whose steps run in other
   * processes; `null` when they run here.
   */
  readonly dispatch: StepDispatch | null;
  /** The server's sandbox: a run's `fs_policy.roots` must lie inside it. */
  readonly sandbox: Sandbox;
  /** The schemas a fact's `schema_uri` may name. */
  readonly schemas: SchemaRegistry;
  /** The arguments' schema of the registered tool `name`, or `null` when none is registered. */
  readonly toolSchema: (name: string) => Promise<JsonSchema | null>;
}

const jsonObject = z.record(z.string(), z.unknown());

/** The body of `POST /v1/flows` (API.md). */
export const flowInputSchema = z
  .object({
    name: z.string().min(1),
    ast: z.unknown().optional(),
    tools: z
      .array(
        z
          .object({
            name: z.string().min(1),
            description: z.string().optional(),
            parameters: jsonObject,
          })
          .strict(),
      )
      .default([]),
    config: z
      .object({ fact_schemas: z.record(z.string(), jsonObject).optional() })
      .catchall(z.unknown())
      .default({}),
    labels: z.record(z.string(), z.string()).default({}),
  })
  .strict();
export type FlowInput = z.input<typeof flowInputSchema>;

/** API.md's run `policy`: it narrows the server's policy, never widens it. */
const runPolicySchema = z
  .object({
    tools: z
      .object({
        allow: z.array(z.string().min(1)).nullable().optional(),
        deny: z.array(z.string().min(1)).optional(),
      })
      .strict()
      .optional(),
    max_depth: z.number().int().min(1).optional(),
    steps_per_minute: z.number().int().min(1).optional(),
  })
  .strict();

/** API.md's `pool_policy`: `auto`, a pinned pool, or pools with the given tags. */
const poolPolicySchema = z
  .object({
    placement: wirePlacementSchema.default('auto'),
    /** What every step of the run needs of its pool (a fleet's capabilities). */
    requires: z
      .object({
        vram_mb: z.number().int().nonnegative().optional(),
        arch: z.string().min(1).optional(),
        features: z.array(z.string().min(1)).optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

/** How many sandbox roots a run's `fs_policy` may name. */
export const MAX_FS_ROOTS = 32;
/** How many allow-list globs a run's `fs_policy` may name. */
export const MAX_FS_GLOBS = 128;
/** The longest root or glob, characters. */
const MAX_PATH_CHARS = 4_096;

/** API.md's `fs_policy`: the FS broker's sandbox roots, allow-list globs and byte quota. */
const fsPolicySchema = z
  .object({
    // Bounded: each root is checked on disk when the run is made, each glob compiled.
    roots: z.array(z.string().min(1).max(MAX_PATH_CHARS)).min(1).max(MAX_FS_ROOTS),
    allow: z.array(z.string().min(1).max(MAX_PATH_CHARS)).max(MAX_FS_GLOBS).optional(),
    quota_bytes: z.number().int().nonnegative().optional(),
  })
  .strict();

/** The longest run `entry` a caller may give (what `GET /v1/runs?entry=` can ask for). */
export const MAX_RUN_ENTRY = 256;
/** The entries of a workflow's threads begin so (`workflow:<name>`): not a flow run's to take. */
const THREAD_ENTRY_PREFIX = 'workflow:';

/**
 * The body of `POST /v1/flows/{flow_id}/runs` (API.md, NERVE-4002), and `entry`: the name the
 * run is listed under (its Run's `entry`, `GET /v1/runs?entry=`), the flow's stored name when
 * absent. A flow is its content, so the name a caller posted it under may not be the stored
 * one (`posted_name`); a run made with `entry` set to that name is listed as its caller calls
 * it.
 */
export const runInputSchema = z
  .object({
    entry: z
      .string()
      .min(1)
      .max(MAX_RUN_ENTRY)
      .refine((e) => !e.startsWith(THREAD_ENTRY_PREFIX), {
        message: `must not begin with "${THREAD_ENTRY_PREFIX}": those are a workflow's threads`,
      })
      .optional(),
    mode: z.enum(['record', 'replay', 'strict_replay']).default('record'),
    seed: z.number().int().nullable().default(null),
    budgets: wireBudgetsSchema.default({}),
    policy: runPolicySchema.default({}),
    pool_policy: poolPolicySchema.default({ placement: 'auto' }),
    fs_policy: fsPolicySchema.nullable().default(null),
    replay_of: z.string().min(1).nullable().default(null),
    cancel_on_disconnect: z.boolean().default(false),
  })
  .strict()
  .superRefine((run, issues) => {
    if (run.mode !== 'record' && run.replay_of === null) {
      issues.addIssue({
        code: 'custom',
        path: ['replay_of'],
        message: `mode ${run.mode} needs replay_of: the recorded run to replay`,
      });
    }
    if (run.mode === 'record' && run.replay_of !== null) {
      issues.addIssue({
        code: 'custom',
        path: ['replay_of'],
        message: 'replay_of is only for the replay and strict_replay modes',
      });
    }
  });
export type RunInput = z.input<typeof runInputSchema>;

/**
 * Stores a flow by its content: the sha256 of the canonical JSON of `{ ast, tools, config }`
 * (NERVE-4001). The same content again gives the same flow (`created: false`); any change, a
 * new one. Each tool's `parameters` and each fact schema must be valid JSON Schema 2020-12
 * (`SchemaViolationError` naming it otherwise), and a tool's `parameters` must not
 * contradict the registered tool of that name (`SchemaViolationError` naming each
 * difference): a `tool_call` of the flow's runs is checked against both.
 */
export async function createFlow(
  deps: FlowApiDeps,
  body: unknown,
): Promise<{ readonly flow: FlowRecord; readonly created: boolean }> {
  const input = parseBody(flowInputSchema, 'flow', body);
  for (const tool of input.tools) compileJsonSchema(`tool ${tool.name}`, tool.parameters);
  // A declaration that contradicts the tool registered under its name could never be called
  // as declared: refused now, each difference named.
  const contradictions = (
    await Promise.all(
      input.tools.map(async (tool, i) => {
        const registered = await deps.toolSchema(tool.name);
        return registered === null
          ? []
          : schemaContradictions(tool.parameters, registered).map((issue) => ({
              path: ['tools', i, 'parameters', ...issue.path],
              message: `tool "${tool.name}": ${issue.message}`,
            }));
      }),
    )
  ).flat();
  if (contradictions.length > 0) {
    throw new SchemaViolationError("the flow's tools against the registered tools", contradictions);
  }
  for (const [type, schema] of Object.entries(input.config.fact_schemas ?? {})) {
    compileJsonSchema(`fact type ${type}`, schema);
  }
  const ast = input.ast ?? null;
  const hash = canonicalHash({ ast, tools: input.tools, config: input.config });
  const stored = await deps.store.putFlow({
    flow_id: deps.ids.id('flow'),
    hash,
    name: input.name,
    ast,
    // zod leaves absent optional keys out, so these fit the stored shapes.
    tools: input.tools as FlowRecord['tools'],
    config: input.config,
    labels: input.labels,
    created_at: isoTime(deps.clock.now()),
  });
  await flushed(deps.store);
  return stored;
}

/**
 * Starts a run of a flow (NERVE-4002), listed under the body's `entry` or else the flow's
 * name. A `pool_policy` no pool of the runtime satisfies (a pin of another pool, tags none
 * has) is refused with `PoolUnavailableError`. A `replay` or `strict_replay` run names the
 * recorded run in `replay_of`: `NotFoundError` if there is none; a `strict_replay` run whose
 * seed or policy is not the recorded run's is refused with `ReplayMismatchError`
 * (NERVE-4022). Its seed and policy default to the recorded run's.
 */
export async function createFlowRun(
  deps: FlowApiDeps,
  flowId: string,
  body: unknown,
  owner: RunOwner = {},
): Promise<RunRecord> {
  const flow = await deps.store.getFlow(flowId);
  if (!flow) throw new NotFoundError('flow', flowId);
  const input = parseBody(runInputSchema, 'run', body ?? {});
  // The roots are the server's to give: one outside its sandbox is refused (422) now.
  if (input.fs_policy) await deps.sandbox.runRoots(input.fs_policy.roots);
  // A pinned pool that does not exist, or tags no pool has, is refused now: the run could
  // never place a step (PLACE-5001). On a fleet, a run that asks nothing of its pools is
  // made even when none is live: its steps placed here run (a workflow's inline roles), and
  // one for the fleet is refused when it is submitted, if no pool is live by then.
  const asksNothing =
    input.pool_policy.placement === 'auto' && input.pool_policy.requires === undefined;
  if (!(deps.dispatch && asksNothing)) {
    await deps.dispatch?.fresh();
    choosePool(input.pool_policy.placement, deps.pools(), {
      requires: input.pool_policy.requires,
    });
  }
  let seed = input.seed;
  let policy = input.policy;
  if (input.replay_of !== null) {
    const recorded = await deps.store.getRun(input.replay_of);
    // Another user's run is not there for this caller: the same 404, nothing of it told.
    if (!recorded || (owner.mayRead && !owner.mayRead(recorded.user_id))) {
      throw new NotFoundError('run', input.replay_of.slice(0, 80));
    }
    const given = (key: string): boolean =>
      body !== null && typeof body === 'object' && key in body;
    if (!given('seed')) seed = recorded.seed;
    if (!given('policy')) policy = recorded.policy;
    if (input.mode === 'strict_replay' && seed !== recorded.seed) {
      throw new ReplayMismatchError(
        'seed',
        `run ${recorded.run_id} was recorded with seed ${String(recorded.seed)}, this run asks for ${String(seed)}`,
        { expected: recorded.seed, actual: seed },
      );
    }
    // The run's policy can change what its steps do (tools allowed, depth): material to the
    // output, so a strict replay must run under the recorded one (NERVE-4022).
    if (
      input.mode === 'strict_replay' &&
      canonicalJson(policy) !== canonicalJson(recorded.policy)
    ) {
      throw new ReplayMismatchError(
        'policy',
        `run ${recorded.run_id} was recorded under another policy than this run's`,
        { expected: recorded.policy, actual: policy },
      );
    }
  }
  const run: RunRecord = {
    run_id: deps.ids.id('run'),
    flow_id: flow.flow_id,
    mode: input.mode,
    seed,
    budgets: input.budgets as RunRecord['budgets'],
    status: 'running',
    budget_usage: { tokens_in: 0, tokens_out: 0, cost_usd: 0, wall_ms: 0 },
    provenance: null,
    entry: input.entry ?? flow.name,
    trace_id: deps.ids.id('request').slice(-32),
    user_id: owner.userId ?? null,
    created_at: isoTime(deps.clock.now()),
    ended_at: null,
    policy,
    pool_policy: input.pool_policy,
    fs_policy: input.fs_policy,
    replay_of: input.replay_of,
    cancel_on_disconnect: input.cancel_on_disconnect,
  };
  await deps.store.createRun(run);
  await flushed(deps.store);
  return run;
}
