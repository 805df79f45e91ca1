/** @module A durable agent's message put aside until a wake: a sleep, an event, a timeout. */
import { CancelledError } from './cancelled-error.js';
import type { AxonErrorOptions } from './axon-error.js';

/**
 * A durable agent's message waits (`actor.sleep`, `actor.waitFor`; issue 46): its step is
 * suspended — its record `waiting`, its log open — and nothing of it stays in memory until
 * the wake `wakeId` fires; then its handler runs again from its start and goes on past the
 * wait. It is the reason the message's context is cancelled with; the message itself does
 * not end. Work below the step that was stopped by it ends `CANCELLED` (which it extends).
 */
export class ActorWaitError extends CancelledError {
  /** The wake the message waits for. */
  readonly wakeId: string;
  /** The waiting message's step. */
  readonly stepId: string;

  constructor(wakeId: string, stepId: string, message: string, options: AxonErrorOptions = {}) {
    super(message, {
      ...options,
      details: { ...options.details, wake_id: wakeId, step_id: stepId },
    });
    this.wakeId = wakeId;
    this.stepId = stepId;
  }
}
