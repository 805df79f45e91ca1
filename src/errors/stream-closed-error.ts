/** @module An event a step may no longer (or not yet) emit. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/**
 * A step refused an event because its lifecycle does not allow it now: before `started`,
 * after `end` / `error`, or after a cancel (STREAM-2001). Code `CONFLICT`.
 */
export class StreamClosedError extends AxonError {
  readonly code = 'CONFLICT' as const;
  readonly stepId: string;
  /** The event type that was refused. */
  readonly eventType: string;
  /** The lifecycle state the step was in. */
  readonly state: string;

  constructor(stepId: string, eventType: string, state: string, options: AxonErrorOptions = {}) {
    super(`step ${stepId} cannot emit "${eventType}" while ${state}`, {
      ...options,
      details: { ...options.details, step_id: stepId, event_type: eventType, state },
    });
    this.stepId = stepId;
    this.eventType = eventType;
    this.state = state;
  }
}
