/** @module A step refused because its pool's queue is full. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/**
 * Every thread of the pool is busy and its queue holds `maxQueue` steps already: the step was
 * refused without running. Code `QUEUE_FULL`, retriable.
 */
export class QueueFullError extends AxonError {
  readonly code = 'QUEUE_FULL' as const;
  override readonly retriable = true;

  constructor(message: string, options: AxonErrorOptions = {}) {
    super(message, options);
  }
}
