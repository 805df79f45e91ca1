/**
 * @module Controlling a run and its steps (API.md): checkpoints of a run's live steps and log
 * offsets (NERVE-4005), cancelling a run or one step, completing a run.
 */
import { refuseActorRun } from './actor-run-guard.js';
import { isoTime } from '../context/clock.js';
import { CancelledError } from '../errors/cancelled-error.js';
import { ConflictError } from '../errors/conflict-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import { toErrorPayload } from '../errors/to-error-payload.js';
import type { CheckpointRecord, RunRecord, StepRecord } from '../store/records.js';
import { flushed, stopWaiting } from '../store/run-store.js';
import { usageProvenance, type Provenance } from '../streams/events.js';
import type { ActorEntry } from '../actors/actor-system.js';
import type { StepDispatch } from '../placement/fleet/fleet-jobs.js';
import type { FlowApiDeps } from './flow-api.js';
import { endStoredStep } from './stored-step-end.js';

/** A run's provenance when it ends: its seed, its usage, where it ran (NERVE-4020). */
function runProvenance(deps: FlowApiDeps, run: RunRecord): Provenance {
  return usageProvenance(run.budget_usage, run.seed, deps.poolId, deps.replicaId);
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
/** Statuses of a step a fleet worker holds or will: its cancel travels to the fleet. */
const REMOTE: ReadonlySet<string> = new Set(['queued', 'running']);

/**
 * Whether `step` is one of the fleet's, queued or running on a pool — not one a process of
 * the fleet runs itself (submitted with placement `'here'`: a workflow's inline turn).
 */
export function onFleet(step: Pick<StepRecord, 'placement' | 'status'>): boolean {
  return step.placement === 'pool' && REMOTE.has(step.status);
}

/**
 * Cancels a step of the fleet: one still queued is taken off its queue and ended here
 * (`cancelled`, never started); a running one is told over pub/sub, and its worker ends it.
 */
async function cancelRemote(
  deps: FlowApiDeps,
  dispatch: StepDispatch,
  step: StepRecord,
): Promise<void> {
  if (await dispatch.cancel(step)) {
    await endStoredStep(deps, step, {
      status: 'cancelled',
      error: toErrorPayload(
        new CancelledError(`step ${step.step_id} was cancelled before it started`),
      ),
    });
    await flushed(deps.store);
    await dispatch.endedHere(step.step_id, 'cancelled');
  }
}

/** Resolves once a step of the fleet has ended (it may have ended already). */
async function remoteEnd(deps: FlowApiDeps, stepId: string): Promise<void> {
  if (!deps.dispatch) return;
  // Waiting first: an end said between the read below and the wait is not missed.
  const ended = deps.dispatch.ended(stepId);
  const step = await deps.store.getStep(stepId);
  if (step && !onFleet(step)) return;
  await ended;
}

/** The steps of a run that a fleet runs or will: queued or running in the store. */
async function remoteSteps(deps: FlowApiDeps, runId: string): Promise<StepRecord[]> {
  if (!deps.dispatch) return [];
  return (await deps.store.listSteps(runId)).filter((s) => s.parent_step_id === null && onFleet(s));
}

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
  refuseActorRun(run, 'is not cancelled: its messages are');
  if (run.status !== 'running' && run.status !== 'cancelling' && run.status !== 'waiting') {
    throw new ConflictError(`run ${runId} is ${run.status}`, { details: { status: run.status } });
  }
  await deps.store.updateRun(runId, { status: 'cancelling' });
  await flushed(deps.store);
  const reason = new CancelledError(`run ${runId} was cancelled`);
  const live = liveSteps(deps, runId);
  for (const entry of live) entry.ctx?.cancel(reason);
  // Steps of a fleet: taken off their queues, or told to stop where they run.
  const remote = deps.dispatch ? await remoteSteps(deps, runId) : [];
  for (const step of remote) await cancelRemote(deps, deps.dispatch as StepDispatch, step);
  // Steps suspended for an approval have no actor: they are ended in the store.
  for (const step of await deps.store.listSteps(runId)) {
    if (step.status === 'waiting') await cancelWaiting(deps, step, reason);
  }
  const done = (async () => {
    // Each cancelled step ends on its own; the run is cancelled once none is left.
    await Promise.all([
      ...live.map((e) => deps.system.whenUnregistered(e.id)),
      ...remote.map((s) => remoteEnd(deps, s.step_id)),
    ]);
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
  refuseActorRun(run, 'lives as long as its actor, and takes messages');
  if (run.status !== 'running') {
    throw new ConflictError(`run ${runId} is ${run.status}`, { details: { status: run.status } });
  }
  const live = liveSteps(deps, runId).length + (await remoteSteps(deps, runId)).length;
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
  if (deps.dispatch && onFleet(step)) {
    await cancelRemote(deps, deps.dispatch, step);
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
