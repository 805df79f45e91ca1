/**
 * @module Ending a step that no actor runs any more — one a stopped runtime left running, one
 * suspended for an approval — from its log: its lifecycle is rebuilt (from a persisted
 * snapshot of it when there is one, NERVE-4005), the closing events appended, the record
 * ended.
 */
import type { SnapshotFrom } from 'xstate';
import { isoTime, type Clock } from '../context/clock.js';
import type { ErrorPayload } from '../errors/to-error-payload.js';
import { STEP_ENDED, type StepRecord } from '../store/records.js';
import { flushed, type RunStore } from '../store/run-store.js';
import { StepActor } from '../actors/step-actor.js';
import { StepLifecycle } from '../actors/step-lifecycle.js';
import type { EscalationFields, stepMachine } from '../actors/step-machine.js';

/** How a stored step is ended. */
export interface StoredStepEnd {
  readonly status: 'failed' | 'cancelled';
  readonly error: ErrorPayload;
  /** An `escalation` first (POLICY-3002), when the end is a supervisor's matter. */
  readonly escalation?: EscalationFields;
  /** A persisted snapshot of the step's lifecycle to rebuild it from, with the log after it. */
  readonly snapshot?: unknown;
}

/** Ends `step` in its log and its record; see the module. */
export async function endStoredStep(
  deps: { readonly store: RunStore; readonly clock: Clock },
  step: StepRecord,
  end: StoredStepEnd,
): Promise<void> {
  const lifecycle = StepLifecycle.fromLog(
    step.step_id,
    await deps.store.readEvents(step.step_id),
    end.snapshot as SnapshotFrom<typeof stepMachine> | undefined,
  );
  const actor = new StepActor({
    stepId: step.step_id,
    path: step.actor_path,
    store: deps.store,
    clock: deps.clock,
    tap: null,
    lifecycle,
  });
  if (!actor.isFinal) {
    if (end.escalation) actor.escalate(end.escalation);
    if (end.status === 'cancelled') actor.cancel(end.error);
    else actor.fail(end.error);
  }
  await actor.drain();
  await deps.store.updateStep(step.step_id, {
    status: end.status,
    error: end.error,
    ended_at: isoTime(deps.clock.now()),
  });
}

/**
 * Ends step `stepId` as {@link endStoredStep} does, adds its use to its run's, and commits
 * both, if its record is still open — `open` says so (default: its status is not an ended one). Resolves the record as it
 * was read (`null` when there is no such step) and whether it was ended here.
 */
export async function endIfOpen(
  deps: { readonly store: RunStore; readonly clock: Clock },
  stepId: string,
  end: StoredStepEnd,
  open: (step: StepRecord) => boolean = (step) => !STEP_ENDED.has(step.status),
): Promise<{ readonly step: StepRecord | null; readonly ended: boolean }> {
  const step = await deps.store.getStep(stepId);
  if (!step || !open(step)) return { step, ended: false };
  await endStoredStep(deps, step, end);
  // The process that ran it never will add its use (kept current while it ran) to its run's;
  // the same write takes its reservations off the run's shared ledger (POLICY-3000).
  if (step.parent_step_id === null) {
    await deps.store.addRunUsage(step.run_id, step.budget_usage, step.step_id);
  }
  await flushed(deps.store);
  return { step, ended: true };
}
