/**
 * @module The flow, fact and checkpoint operations of API.md as library calls: flows stored
 * by content (NERVE-4001), runs of a flow, facts checked against the flow's
 * `config.fact_schemas` (NERVE-4004), checkpoints of a run's live steps and log offsets
 * (NERVE-4005).
 */
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { z } from 'zod';
import { canonicalHash, canonicalJson } from '../context/canonical-json.js';
import { isoTime, type Clock } from '../context/clock.js';
import type { ExecContext } from '../context/exec-context.js';
import type { IdSource } from '../context/id-source.js';
import { CancelledError } from '../errors/cancelled-error.js';
import { ConflictError } from '../errors/conflict-error.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import { ReplayMismatchError } from '../errors/replay-mismatch-error.js';
import { toErrorPayload } from '../errors/to-error-payload.js';
import type {
  CheckpointRecord,
  FactQuery,
  FactRecord,
  FlowRecord,
  RunRecord,
  StepRecord,
} from '../store/records.js';
import { flushed, stopWaiting, type RunStore } from '../store/run-store.js';
import { usageProvenance, type Provenance } from '../streams/events.js';
import { checkJsonSchema, compileJsonSchema, type JsonSchema } from '../tools/json-schema.js';
import type { ActorEntry, ActorSystem } from '../actors/actor-system.js';
import { choosePool, type PoolCandidate } from '../placement/pool-choice.js';
import { parseBody, wireBudgetsSchema } from './request-bodies.js';
import { runCallsOf } from './run-calls.js';
import { endStoredStep } from './stored-step-end.js';

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
}

/** A run's provenance when it ends: its seed, its usage, where it ran (NERVE-4020). */
function runProvenance(deps: FlowApiDeps, run: RunRecord): Provenance {
  return usageProvenance(run.budget_usage, run.seed, deps.poolId, deps.replicaId);
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
    placement: z
      .union([
        z.literal('auto'),
        z.object({ pin: z.string().min(1) }).strict(),
        z.object({ affinity: z.object({ tags: z.array(z.string().min(1)) }).strict() }).strict(),
      ])
      .default('auto'),
  })
  .strict();

/** API.md's `fs_policy`: the FS broker's sandbox roots, allow-list globs and byte quota. */
const fsPolicySchema = z
  .object({
    roots: z.array(z.string().min(1)).min(1),
    allow: z.array(z.string().min(1)).optional(),
    quota_bytes: z.number().int().nonnegative().optional(),
  })
  .strict();

/** The body of `POST /v1/flows/{flow_id}/runs` (API.md, NERVE-4002). */
export const runInputSchema = z
  .object({
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

/** The body of `POST /v1/runs/{run_id}/facts`. */
export const factInputSchema = z
  .object({
    type: z.string().min(1),
    data: z.unknown(),
    schema_uri: z.string().nullable().optional(),
  })
  .strict();
export type FactInput = z.input<typeof factInputSchema>;

/**
 * Stores a flow by its content: the sha256 of the canonical JSON of `{ ast, tools, config }`
 * (NERVE-4001). The same content again gives the same flow (`created: false`); any change, a
 * new one. Each tool's `parameters` and each fact schema must be valid JSON Schema 2020-12
 * (`SchemaViolationError` naming it otherwise).
 */
export async function createFlow(
  deps: FlowApiDeps,
  body: unknown,
): Promise<{ readonly flow: FlowRecord; readonly created: boolean }> {
  const input = parseBody(flowInputSchema, 'flow', body);
  for (const tool of input.tools) compileJsonSchema(`tool ${tool.name}`, tool.parameters);
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
 * Starts a run of a flow (NERVE-4002). A `pool_policy` no pool of the runtime satisfies (a
 * pin of another pool, tags none has) is refused with `PoolUnavailableError`. A `replay` or
 * `strict_replay` run names the recorded run in `replay_of`: `NotFoundError` if there is none; a `strict_replay` run whose seed or
 * policy is not the recorded run's is refused with `ReplayMismatchError` (NERVE-4022). Its
 * seed and policy default to the recorded run's.
 */
export async function createFlowRun(
  deps: FlowApiDeps,
  flowId: string,
  body: unknown,
): Promise<RunRecord> {
  const flow = await deps.store.getFlow(flowId);
  if (!flow) throw new NotFoundError('flow', flowId);
  const input = parseBody(runInputSchema, 'run', body ?? {});
  // A pinned pool that does not exist, or tags no pool has, is refused now: the run could
  // never place a step (PLACE-5001).
  choosePool(input.pool_policy.placement, deps.pools());
  let seed = input.seed;
  let policy = input.policy;
  if (input.replay_of !== null) {
    const recorded = await deps.store.getRun(input.replay_of);
    if (!recorded) throw new NotFoundError('run', input.replay_of);
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
    entry: flow.name,
    trace_id: deps.ids.id('request').slice(-32),
    user_id: null,
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

/** Compiled fact schemas, by flow hash and fact type (a flow's content never changes). */
const factValidators = new Map<string, ValidateFunction>();

/**
 * Appends a fact to a run (NERVE-4004). If the run's flow has a schema for the fact's type
 * in `config.fact_schemas`, `data` must match it (`SchemaViolationError` listing each path;
 * nothing is stored). Facts are never updated or deleted.
 */
export async function appendFact(
  deps: FlowApiDeps,
  runId: string,
  body: unknown,
  emittedByStep: string | null = null,
  factId: string | null = null,
): Promise<FactRecord> {
  const input = parseBody(factInputSchema, 'fact', body);
  const run = await deps.store.getRun(runId);
  if (!run) throw new NotFoundError('run', runId);
  if (run.flow_id !== null) {
    const flow = await deps.store.getFlow(run.flow_id);
    const schemas = flow?.config['fact_schemas'] as Record<string, JsonSchema> | undefined;
    const schema = schemas?.[input.type];
    if (flow && schema) {
      const key = `${flow.hash}\u0000${input.type}`;
      let validate = factValidators.get(key);
      if (!validate) {
        validate = compileJsonSchema(`fact type ${input.type}`, schema);
        factValidators.set(key, validate);
      }
      checkJsonSchema(`fact ${input.type}`, validate, input.data);
    }
  }
  const fact: FactRecord = {
    fact_id: factId ?? deps.ids.id('fact'),
    run_id: runId,
    type: input.type,
    schema_uri: input.schema_uri ?? null,
    data: input.data ?? null,
    emitted_by_step: emittedByStep,
    ts: deps.clock.now(),
  };
  try {
    await deps.store.appendFact(fact);
  } catch (err) {
    // An idempotent fact stored before (by the same step, run again): that one stands.
    if (factId === null || !(err instanceof ConflictError)) throw err;
    const stored = (await deps.store.listFacts({ runId, type: input.type })).find(
      (f) => f.fact_id === factId,
    );
    if (!stored) throw err;
    return stored;
  }
  await flushed(deps.store);
  return fact;
}

/** A fact of the run of `ctx`'s step, stored and then published as the step's `fact` event. */
export async function emitStepFact(
  deps: FlowApiDeps,
  fact: { readonly type: string; readonly data: unknown; readonly schema_uri?: string | null },
  ctx: ExecContext,
): Promise<FactRecord> {
  if (ctx.runId === null || ctx.stepId === null) {
    throw new InvalidParamsError('emitFact: ctx must be the context of a running step');
  }
  const factId = runCallsOf(ctx)?.nextFactId(ctx.path) ?? null;
  const stored = await appendFact(deps, ctx.runId, fact, ctx.stepId, factId);
  ctx.stream.emit({ type: 'fact', fact: stored });
  return stored;
}

/** A run's facts (API.md's `?type=&after=&limit=`); `NotFoundError` for an unknown run. */
export async function listRunFacts(
  deps: FlowApiDeps,
  runId: string,
  query: Omit<FactQuery, 'runId' | 'flowId'> = {},
): Promise<FactRecord[]> {
  if (!(await deps.store.getRun(runId))) throw new NotFoundError('run', runId);
  return deps.store.listFacts({ ...query, runId });
}

/** A flow's facts across its runs, in append order (NERVE-4004); `NotFoundError` for an unknown flow. */
export async function listFlowFacts(
  deps: FlowApiDeps,
  flowId: string,
  query: Omit<FactQuery, 'runId' | 'flowId'> = {},
): Promise<FactRecord[]> {
  if (!(await deps.store.getFlow(flowId))) throw new NotFoundError('flow', flowId);
  return deps.store.listFacts({ ...query, flowId });
}

/**
 * Checkpoints a run (NERVE-4005): the persisted snapshot of each of its live steps' actors
 * and the last `seq` of each of its steps' logs, stored as one checkpoint.
 */
export async function checkpointRun(
  deps: FlowApiDeps,
  runId: string,
  options: { readonly label?: string; readonly stepId?: string } = {},
): Promise<CheckpointRecord> {
  if (!(await deps.store.getRun(runId))) throw new NotFoundError('run', runId);
  const snapshots: Record<string, unknown> = {};
  for (const entry of liveSteps(deps, runId)) {
    snapshots[entry.id] = entry.ref.getPersistedSnapshot();
  }
  const logOffsets: Record<string, number> = {};
  for (const step of await deps.store.listSteps(runId)) {
    logOffsets[step.step_id] = (await deps.store.readEvents(step.step_id)).at(-1)?.seq ?? 0;
  }
  const checkpoint: CheckpointRecord = {
    checkpoint_id: deps.ids.id('checkpoint'),
    run_id: runId,
    step_id: options.stepId ?? null,
    label: options.label ?? null,
    snapshots,
    log_offsets: logOffsets,
    ts: deps.clock.now(),
  };
  await deps.store.createCheckpoint(checkpoint);
  await flushed(deps.store);
  return checkpoint;
}

/** The live steps of a run, as the actor system knows them. */
function liveSteps(deps: FlowApiDeps, runId: string): ActorEntry[] {
  return deps.system.list('step').filter((e) => e.runId === runId);
}

/**
 * Cancels a run (`POST /v1/runs/{run_id}/cancel`): its status becomes `cancelling`, every
 * live step of it ends with `error` `CANCELLED`, and then the run is `cancelled`. Resolves
 * with the status at once; `done` settles when the run is `cancelled`. A run that already
 * ended is refused with `ConflictError`.
 */
export async function cancelRun(
  deps: FlowApiDeps,
  runId: string,
): Promise<{ readonly status: 'cancelling'; readonly done: Promise<void> }> {
  const run = await deps.store.getRun(runId);
  if (!run) throw new NotFoundError('run', runId);
  if (run.status !== 'running' && run.status !== 'cancelling' && run.status !== 'waiting') {
    throw new ConflictError(`run ${runId} is ${run.status}`, { details: { status: run.status } });
  }
  await deps.store.updateRun(runId, { status: 'cancelling' });
  await flushed(deps.store);
  const reason = new CancelledError(`run ${runId} was cancelled`);
  const live = liveSteps(deps, runId);
  for (const entry of live) entry.ctx?.cancel(reason);
  // Steps suspended for an approval have no actor: they are ended in the store.
  for (const step of await deps.store.listSteps(runId)) {
    if (step.status === 'waiting') await cancelWaiting(deps, step, reason);
  }
  const done = (async () => {
    // Each cancelled step ends on its own; the run is cancelled once none is left.
    await Promise.all(live.map((e) => deps.system.whenUnregistered(e.id)));
    // Read again: the cancelled steps have added their usage meanwhile.
    const last = (await deps.store.getRun(runId)) ?? run;
    await deps.store.updateRun(runId, {
      status: 'cancelled',
      ended_at: isoTime(deps.clock.now()),
      provenance: runProvenance(deps, last),
    });
    await flushed(deps.store);
  })();
  return { status: 'cancelling', done };
}

/** Marks a running run `completed` (`POST /v1/runs/{run_id}/complete`); `ConflictError` otherwise. */
export async function completeRun(deps: FlowApiDeps, runId: string): Promise<RunRecord> {
  const run = await deps.store.getRun(runId);
  if (!run) throw new NotFoundError('run', runId);
  if (run.status !== 'running') {
    throw new ConflictError(`run ${runId} is ${run.status}`, { details: { status: run.status } });
  }
  const live = liveSteps(deps, runId).length;
  if (live > 0) {
    throw new ConflictError(`run ${runId} still has steps running`, {
      details: { live_steps: live },
    });
  }
  const ended = {
    status: 'completed',
    ended_at: isoTime(deps.clock.now()),
    provenance: runProvenance(deps, run),
  } as const;
  await deps.store.updateRun(runId, ended);
  await flushed(deps.store);
  return { ...run, ...ended };
}

/**
 * Cancels one live step (`POST /v1/steps/{step_id}/cancel`): it ends with `error`
 * `CANCELLED`. An unknown step is `NotFoundError`; one that already ended, `ConflictError`.
 */
export async function cancelStep(
  deps: FlowApiDeps,
  stepId: string,
): Promise<{ readonly status: 'cancelling' }> {
  const entry = deps.system.list('step').find((e) => e.id === stepId);
  if (entry?.ctx) {
    entry.ctx.cancel(new CancelledError(`step ${stepId} was cancelled`));
    return { status: 'cancelling' };
  }
  const step = await deps.store.getStep(stepId);
  if (!step) throw new NotFoundError('step', stepId);
  if (step.status === 'waiting') {
    await cancelWaiting(deps, step, new CancelledError(`step ${stepId} was cancelled`));
    await flushed(deps.store);
    return { status: 'cancelling' };
  }
  throw new ConflictError(`step ${stepId} is ${step.status}`, { details: { status: step.status } });
}

/** Ends a step suspended for an approval `CANCELLED` (its approval stays undecided). */
async function cancelWaiting(
  deps: FlowApiDeps,
  step: StepRecord,
  reason: CancelledError,
): Promise<void> {
  await endStoredStep(deps, step, { status: 'cancelled', error: toErrorPayload(reason) });
  await stopWaiting(deps.store, step.run_id, step.step_id);
}
