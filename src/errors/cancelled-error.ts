/** @module Work stopped because somebody cancelled it. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/**
 * The work was cancelled (an interruption, not a failure). Code `CANCELLED`.
 * Used as the `reason` of an aborted context signal.
 */
export class CancelledError extends AxonError {
  readonly code = 'CANCELLED' as const;

  constructor(message = 'cancelled', options: AxonErrorOptions = {}) {
    super(message, options);
  }
}
