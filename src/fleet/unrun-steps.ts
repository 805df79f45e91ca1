/**
 * @module The steps a fleet replica ends without running them: a job BullMQ gave up on (its
 * tries spent, stalled too often), and a step whose cancel was recorded before it was taken.
 * Each ends only if it is still open, and its end is said on the fleet's `ended` stream.
 */
import type { Job } from 'bullmq';
import { systemClock } from '../context/clock.js';
import { CancelledError } from '../errors/cancelled-error.js';
import { toErrorPayload } from '../errors/to-error-payload.js';
import { WorkerResetError } from '../errors/worker-reset-error.js';
import type { Logger } from '../observability/logger.js';
import { stepJobSchema, type StepJob } from '../placement/fleet/fleet-jobs.js';
import { endIfOpen } from '../runs/stored-step-end.js';
import type { StepStatus } from '../store/records.js';
import type { StreamingStore } from './streaming-store.js';

/**
 * Ends the step of `job`, which will not run again, `failed` (`WORKER_RESET`, `reason:
 * "job_failed"`) if it is open. Never rejects: a failure to end it is logged.
 */
export async function abandonStep(
  store: StreamingStore,
  logger: Logger,
  job: Job<StepJob>,
  err: Error,
): Promise<void> {
  const parsed = stepJobSchema.safeParse(job.data);
  if (!parsed.success) return;
  const stepId = parsed.data.step_id;
  try {
    const error = new WorkerResetError(`step ${stepId} could not be run: ${err.message}`, {
      details: { reason: 'job_failed', job_id: job.id ?? null, attempts: job.attemptsMade },
    });
    const { ended } = await endIfOpen({ store: store.store, clock: systemClock }, stepId, {
      status: 'failed',
      error: toErrorPayload(error),
    });
    if (!ended) return;
    await store.ended(stepId, 'failed');
    logger.error({ step_id: stepId, err }, 'fleet worker: a step could not be run; it ends failed');
  } catch (e) {
    logger.error({ err: e, step_id: stepId }, 'fleet worker: could not end an abandoned step');
  }
}

/**
 * Ends a step cancelled before it was taken, if it is still open: it does not run. Resolves
 * `cancelled`, or the status of a step that had ended already (`null` without a record).
 */
export async function endCancelledStep(
  store: StreamingStore,
  logger: Logger,
  stepId: string,
): Promise<StepStatus | null> {
  const { step, ended } = await endIfOpen({ store: store.store, clock: systemClock }, stepId, {
    status: 'cancelled',
    error: toErrorPayload(new CancelledError(`step ${stepId} was cancelled before it started`)),
  });
  if (ended) logger.info({ step_id: stepId }, 'fleet worker: a step cancelled before it was taken');
  return ended ? 'cancelled' : (step?.status ?? null);
}
