/**
 * @module A fleet worker taking a step job (`runtime.takeStep`): the step was queued in the
 * shared store by the API process that took the submission; it starts here with its
 * `started`. A job taken again after its worker died (BullMQ's stall check) finds the step
 * `running` with part of its log: it runs again from the start under the same id, its
 * lifecycle rebuilt from the log, and the events its work emits again — as many as are
 * logged — are not logged twice, so a client following the step sees each `seq` once and no
 * gap (the same mechanism as a step going on after an approval). Its facts are idempotent.
 */
import { isoTime } from '../context/clock.js';
import { CancelledError } from '../errors/cancelled-error.js';
import { ConflictError } from '../errors/conflict-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import { toErrorPayload } from '../errors/to-error-payload.js';
import type { StepJob } from '../placement/fleet/fleet-jobs.js';
import { STEP_ENDED, type RunRecord, type StepRecord, type StepStatus } from '../store/records.js';
import { flushed } from '../store/run-store.js';
import { StepLifecycle } from '../actors/step-lifecycle.js';
import { endStoredStep } from '../runs/stored-step-end.js';
import type { ResumeFrom } from '../runs/submitted-step.js';
import { submitStep } from './step-submission.js';
import type { SubmissionHost } from './submission-host.js';

/** A step's record and its run's, read together (`null` for one the store does not have). */
export interface StepAndRun {
  readonly step: StepRecord | null;
  readonly run: RunRecord | null;
}

/**
 * Runs the step of `job` here and resolves with the status it ended with (`waiting` when it
 * was suspended for an approval); `signal` aborting cancels it (its reason the error). A step that has ended already is not run again (a job
 * delivered twice). Rejects with `NotFoundError` when the store has no such step.
 */
export async function takeStep(
  host: SubmissionHost,
  job: StepJob,
  signal?: AbortSignal,
  read?: StepAndRun,
): Promise<StepStatus | null> {
  const step = read ? read.step : await host.store.getStep(job.step_id);
  if (!step) throw new NotFoundError('step', job.step_id);
  if (STEP_ENDED.has(step.status)) return step.status;
  // A queued step has no log yet; one taken again after a stall has part of one.
  const events = step.status === 'queued' ? [] : await host.store.readEvents(step.step_id);
  const last = events.at(-1);
  if (last?.type === 'end' || last?.type === 'error') {
    // Its last worker died after logging its end, before ending its record.
    const status: StepStatus =
      last.type === 'end' ? 'succeeded' : last.code === 'CANCELLED' ? 'cancelled' : 'failed';
    await host.store.updateStep(step.step_id, {
      status,
      ended_at: isoTime(last.ts),
      ...(last.type === 'end'
        ? { output: last.output }
        : { error: { code: last.code, message: last.message, retriable: last.retriable } }),
    });
    await flushed(host.store);
    return status;
  }
  const resume: ResumeFrom =
    events.length === 0
      ? {
          record: step,
          lifecycle: new StepLifecycle(step.step_id),
          logged: [],
          fresh: true,
          traceparent: job.traceparent,
          ...(read?.run ? { run: read.run } : {}),
        }
      : {
          record: step,
          lifecycle: StepLifecycle.fromLog(step.step_id, events),
          logged: events,
          traceparent: job.traceparent,
          ...(read?.run ? { run: read.run } : {}),
        };
  let submitted;
  try {
    submitted = await submitStep(host, step.run_id, job.body, resume, signal ? { signal } : {});
  } catch (err) {
    // Its run takes no more steps (cancelled or ended while the job waited): it never runs.
    if (!(err instanceof ConflictError)) throw err;
    await endStoredStep({ store: host.store, clock: host.clock }, step, {
      status: 'cancelled',
      error: toErrorPayload(new CancelledError(`step ${step.step_id} did not run: ${err.message}`)),
    });
    await flushed(host.store);
    return 'cancelled';
  }
  return submitted.done;
}
