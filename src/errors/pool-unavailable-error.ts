/** @module A step refused because its pool cannot take work now. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/**
 * No pool can take the work: the pool a step was placed on is degraded (its threads died
 * more often than the restart intensity allows), or a run's `pool_policy` pins a pool that
 * does not exist or asks for tags no pool has. Code `POOL_UNAVAILABLE`; retriable (the
 * default) when the pool may recover, not when it does not exist.
 */
export class PoolUnavailableError extends AxonError {
  readonly code = 'POOL_UNAVAILABLE' as const;
  override readonly retriable: boolean;

  constructor(message: string, options: AxonErrorOptions & { readonly retriable?: boolean } = {}) {
    super(message, options);
    this.retriable = options.retriable ?? true;
  }
}
