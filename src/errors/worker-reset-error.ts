/** @module A step ended because its worker thread died. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/**
 * The worker thread running a step died — an uncaught exception, `process.exit()`, its
 * `resourceLimits` ran out, or it was terminated — and was replaced. Only that step ends;
 * running it again may well succeed. Code `WORKER_RESET`, retriable.
 */
export class WorkerResetError extends AxonError {
  readonly code = 'WORKER_RESET' as const;
  override readonly retriable = true;

  constructor(message: string, options: AxonErrorOptions = {}) {
    super(message, options);
  }
}
