/** @module A step put aside until someone decides on an approval. */
import { CancelledError } from './cancelled-error.js';
import type { AxonErrorOptions } from './axon-error.js';

/**
 * A call of a step submitted to a run needs an approval: the step is suspended (its record
 * `waiting`, its lifecycle persisted) and everything under it stops. It is the reason the
 * step's context is cancelled with; the step itself does not end — `approve` resumes it,
 * `reject` fails it. Work below the step that was stopped by it ends `CANCELLED` (code
 * `CANCELLED`, which it extends).
 */
export class StepSuspendedError extends CancelledError {
  /** The approval the step waits for. */
  readonly approvalId: string;
  /** The suspended step. */
  readonly stepId: string;

  constructor(approvalId: string, stepId: string, message: string, options: AxonErrorOptions = {}) {
    super(message, {
      ...options,
      details: { ...options.details, approval_id: approvalId, step_id: stepId },
    });
    this.approvalId = approvalId;
    this.stepId = stepId;
  }
}
