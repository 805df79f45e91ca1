/**
 * @module Ending an actor's open message from outside its handler (issue 46): one queued (or
 * waiting on a wake) that an `interrupt`, or the actor's `cancel()`, ends `CANCELLED` — its
 * log closed, its record ended, its mailbox slot and wakes given up, in one store write.
 */
import { isoTime } from '../context/clock.js';
import { CancelledError } from '../errors/cancelled-error.js';
import { toErrorPayload } from '../errors/to-error-payload.js';
import { StepActor } from '../actors/step-actor.js';
import { StepLifecycle } from '../actors/step-lifecycle.js';
import type { ActorRecord } from '../store/actor-records.js';
import type { StepRecord } from '../store/records.js';
import type { DurableRuntimeParts } from './durable-host.js';

/** Ends `step`, an open message of `actor` not being handled here, `CANCELLED` with `why`. */
export async function endOpenMessage(
  parts: Pick<DurableRuntimeParts, 'store' | 'clock'>,
  actor: ActorRecord,
  step: StepRecord,
  why: string,
): Promise<void> {
  const error = toErrorPayload(new CancelledError(why));
  const now = parts.clock.now();
  let events: Awaited<ReturnType<StepActor['takeHeld']>> = [];
  if (step.status !== 'queued') {
    // It began (it waits on a wake): its log is closed with an `error`.
    const logged = await parts.store.readEvents(step.step_id);
    const lifecycle = StepLifecycle.fromLog(step.step_id, logged);
    const closing = new StepActor({
      stepId: step.step_id,
      path: step.actor_path,
      store: parts.store,
      clock: parts.clock,
      tap: null,
      lifecycle,
    });
    closing.holdLog();
    if (!closing.isFinal) closing.cancel(error);
    events = await closing.takeHeld();
  }
  await parts.store.endStep({
    stepId: step.step_id,
    runId: step.run_id,
    events,
    patch: { status: 'cancelled', error, ended_at: isoTime(now) },
    actor: { actor_id: actor.actor_id, updated_at: isoTime(now) },
  });
}
