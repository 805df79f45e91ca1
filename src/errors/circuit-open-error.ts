/** @module A call refused because its target's circuit breaker is open. */
import { AxonError } from './axon-error.js';

/**
 * The target's circuit breaker is open (or half-open with its probe out): the call was
 * refused without running (POLICY-3002). Code `POOL_UNAVAILABLE`, retriable after
 * `details.retry_after_ms`.
 */
export class CircuitOpenError extends AxonError {
  readonly code = 'POOL_UNAVAILABLE' as const;
  override readonly retriable = true;
  readonly target: string;

  constructor(target: string, breakerState: string, retryAfterMs: number) {
    super(`circuit breaker for ${target} is ${breakerState.replace('_', '-')}: call refused`, {
      details: { target, breaker_state: breakerState, retry_after_ms: retryAfterMs },
    });
    this.target = target;
  }
}
