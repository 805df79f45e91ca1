/** @module A step refused because its pool cannot take work now. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/**
 * The pool a step was placed on cannot take it: its threads died too often (more restarts
 * than the restart intensity allows) and it is degraded. Code `POOL_UNAVAILABLE`,
 * retriable once the pool has recovered.
 */
export class PoolUnavailableError extends AxonError {
  readonly code = 'POOL_UNAVAILABLE' as const;
  override readonly retriable = true;

  constructor(message: string, options: AxonErrorOptions = {}) {
    super(message, options);
  }
}
