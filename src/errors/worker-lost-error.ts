/** @module A step ended because the worker or replica running it went away. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/**
 * The worker or fleet replica running a step went away — killed, frozen past its lock, its
 * job failed for stalling — and the step could not be finished elsewhere, or going on would
 * have mixed two attempts' output. The step ends with this; running it again may well
 * succeed. Code `WORKER_LOST` (API.md), retriable.
 */
export class WorkerLostError extends AxonError {
  readonly code = 'WORKER_LOST' as const;
  override readonly retriable = true;

  constructor(message: string, options: AxonErrorOptions = {}) {
    super(message, options);
  }
}
