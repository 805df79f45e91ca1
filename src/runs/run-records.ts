/** @module Opening and closing the run record an invocation works under. */
import { isoTime, type Clock } from '../context/clock.js';
import type { ExecContext, TokenUsage } from '../context/exec-context.js';
import type { IdSource } from '../context/id-source.js';
import type { Logger } from '../observability/logger.js';
import type { RunStatus } from '../store/records.js';
import { flushed, type RunStore } from '../store/run-store.js';
import { usageProvenance } from '../streams/events.js';
import { CancelledError } from '../errors/cancelled-error.js';
import type { AgentResult } from '../actors/agent-result.js';
import type { StepOutcome } from './step-request.js';

/** The run an invocation works under. */
export interface RunHandle {
  readonly runId: string;
  /** True when this call created the run, and so closes it. */
  readonly owned: boolean;
  /** Clock time the run was created (meaningful when owned). */
  readonly createdAt: number;
}

/** The run status a root step's outcome gives. */
export const RUN_STATUS: Readonly<Record<StepOutcome['status'], RunStatus>> = {
  succeeded: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
  // A suspended step is never an owned run's root (only steps submitted to a run wait).
  waiting: 'waiting',
};

/**
 * The status an owned run ends with, from the result of its root agent (or `null` when the
 * agent was refused before it started). The same rule as {@link RUN_STATUS}: an agent that
 * answered `needs_data`, `needs_credentials` or `wrong_handler` ran to its end.
 */
export function runStatusFor(result: AgentResult | null): RunStatus {
  if (result === null) return 'failed';
  if (result.error instanceof CancelledError) return RUN_STATUS.cancelled;
  return RUN_STATUS[
    result.status === 'error' || result.status === 'timeout' ? 'failed' : 'succeeded'
  ];
}

/** What opening and closing runs needs. */
export interface RunRecordsDeps {
  readonly store: RunStore;
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly logger: Logger;
  /** The runs opened (by {@link openRun}) and not closed yet: known to be in the store. */
  readonly open: Set<string>;
  /** Whether a step submitted to run `runId` runs here now: its run is known to be stored. */
  readonly submittedTo: (runId: string) => boolean;
  /** Where this runtime runs, for the provenance of the runs it ends (NERVE-4020). */
  readonly poolId: string;
  readonly replicaId: string | null;
}

/**
 * The context metadata key whose value, an integer, a run opened under the context records as
 * its `seed`: the seed its agents and tools derive their data from (the examples'
 * `seedMetadata`, `axon run --seed`).
 */
export const RUN_SEED_KEY = 'seed';

/** The seed a run opened under `ctx` records: its metadata's {@link RUN_SEED_KEY}, or `null`. */
function seedOf(ctx: ExecContext): number | null {
  const seed = ctx.metadata[RUN_SEED_KEY];
  return typeof seed === 'number' && Number.isSafeInteger(seed) ? seed : null;
}

/**
 * The run of `ctx` if it has one in the store; otherwise a new run (with the context's run
 * id if it names one, and the seed its metadata names), owned by the caller, who must close
 * it.
 */
export async function openRun(
  deps: RunRecordsDeps,
  ctx: ExecContext,
  entry: string,
): Promise<RunHandle> {
  // A run this runtime opened and has not closed yet (a delegation's), or one a submission
  // here read just now (a submitted step's), needs no look-up.
  const id = ctx.runId;
  if (id !== null && (deps.open.has(id) || deps.submittedTo(id) || (await deps.store.getRun(id)))) {
    return { runId: id, owned: false, createdAt: 0 };
  }
  const runId = ctx.runId ?? deps.ids.id('run');
  const createdAt = deps.clock.now();
  await deps.store.createRun({
    run_id: runId,
    flow_id: null,
    mode: 'record',
    seed: seedOf(ctx),
    budgets: {},
    status: 'running',
    budget_usage: { tokens_in: 0, tokens_out: 0, cost_usd: 0, wall_ms: 0 },
    provenance: null,
    entry,
    trace_id: ctx.traceId,
    user_id: ctx.userId,
    created_at: isoTime(createdAt),
    ended_at: null,
    policy: {},
    pool_policy: {},
    fs_policy: null,
    replay_of: null,
    cancel_on_disconnect: false,
  });
  deps.open.add(runId);
  return { runId, owned: true, createdAt };
}

/** Ends an owned run with its status and usage. A store failure is logged, not thrown. */
export async function closeRun(
  deps: RunRecordsDeps,
  run: RunHandle,
  status: RunStatus,
  used: TokenUsage | null,
): Promise<void> {
  deps.open.delete(run.runId);
  const now = deps.clock.now();
  const usage = {
    tokens_in: used?.promptTokens ?? 0,
    tokens_out: used?.completionTokens ?? 0,
    cost_usd: used?.costUsd ?? 0,
    wall_ms: now - run.createdAt,
  };
  try {
    await deps.store.updateRun(run.runId, {
      status,
      ended_at: isoTime(now),
      budget_usage: usage,
      provenance: usageProvenance(usage, null, deps.poolId, deps.replicaId),
    });
    // The caller learns the result next: what it learns is durable first.
    await flushed(deps.store);
  } catch (err) {
    deps.logger.error({ err, run_id: run.runId }, 'run end could not be stored');
  }
}

/** The sum of several usages. */
export function sumUsage(usages: readonly TokenUsage[]): TokenUsage {
  return usages.reduce(
    (a, u) => ({
      promptTokens: a.promptTokens + u.promptTokens,
      completionTokens: a.completionTokens + u.completionTokens,
      totalTokens: a.totalTokens + u.totalTokens,
      costUsd: a.costUsd + u.costUsd,
    }),
    { promptTokens: 0, completionTokens: 0, totalTokens: 0, costUsd: 0 },
  );
}
