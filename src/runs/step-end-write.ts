/**
 * @module A step's end, written: its last events, its record's end and its run's use in one
 * write (`RunStore.endStep`), then its last events published. When the log refuses those
 * events (it went on without them), the record ends all the same — `failed` if it had
 * succeeded — without them.
 */
import type { StepActor } from '../actors/step-actor.js';
import type { AxonError } from '../errors/axon-error.js';
import { toAxonError, toErrorPayload, type ErrorPayload } from '../errors/to-error-payload.js';
import type { Logger } from '../observability/logger.js';
import type { StepStatus } from '../store/records.js';
import type { ActorEndWrite } from '../store/actor-records.js';
import type { RunStore, StepEnd } from '../store/run-store.js';
import type { StepEnding } from './submitted-step.js';

/** How a step ended once written: `ending` is its end as stored, `null` if none could be. */
export interface WrittenEnd<S extends StepStatus> {
  readonly status: S | 'failed';
  readonly error: AxonError | null;
  readonly ending: StepEnding | null;
}

/**
 * Writes `end` (see the module), whose record ends `status`; `error` is the step's error so
 * far. A durable agent's message (`end.actor`) that ends other than it meant writes what
 * `actorEnd` gives for its new status (a failed end applies no state). Never rejects.
 */
export async function writeStepEnd<S extends StepStatus>(
  store: RunStore,
  step: StepActor,
  end: StepEnd,
  status: S,
  error: AxonError | null,
  logger: Logger,
  actorEnd: (status: StepStatus, error: ErrorPayload | null) => ActorEndWrite | undefined = () =>
    undefined,
): Promise<WrittenEnd<S>> {
  const { output } = end.patch;
  try {
    await store.endStep(end);
    const published = step.publish(end.events);
    if (published) await published;
    return { status, error, ending: { status, output, error: end.patch.error ?? null } };
  } catch (err) {
    const failed = status === 'succeeded';
    const after: WrittenEnd<S> = {
      status: failed ? 'failed' : status,
      error: failed ? toAxonError(err) : error,
      ending: null,
    };
    try {
      const patch = {
        ...end.patch,
        status: after.status,
        output: null,
        error: toErrorPayload(after.error ?? err),
      };
      const actor = end.actor ? actorEnd(after.status, patch.error) : undefined;
      const { actor: _meant, ...rest } = end;
      await store.endStep({ ...rest, events: [], patch, ...(actor ? { actor } : {}) });
      return { ...after, ending: { status: after.status, output: null, error: patch.error } };
    } catch (again) {
      logger.error({ err: again, step_id: end.stepId }, 'step end could not be stored');
      return after;
    }
  }
}
