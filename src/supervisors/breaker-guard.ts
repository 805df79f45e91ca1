/**
 * @module How a step passes its target's circuit breaker: a refused step escalates and fails
 * fast without running; an admitted one reports how it ended.
 */
import { CancelledError } from '../errors/cancelled-error.js';
import { CircuitOpenError } from '../errors/circuit-open-error.js';
import type { AxonError } from '../errors/axon-error.js';
import type { BreakerState, CircuitBreaker } from './circuit-breaker.js';

/** What the guard needs of a step: a way to emit `escalation`. */
export interface Escalating {
  escalate(escalation: {
    readonly reason: string;
    readonly target: string;
    readonly breaker_state?: BreakerState;
  }): void;
}

/**
 * Ends a refused call: an `escalation` carrying the breaker's state on its step, then a
 * {@link CircuitOpenError}. The target's handler never runs.
 */
export function refuseByBreaker(breaker: CircuitBreaker, step: Escalating): never {
  const state = breaker.state;
  step.escalate({
    reason: `circuit breaker ${state.replace('_', '-')}: call refused`,
    target: breaker.target,
    breaker_state: state,
  });
  throw new CircuitOpenError(breaker.target, state, breaker.retryAfterMs);
}

/**
 * Reports an admitted call's end: success closes or keeps closed, a failure (a timeout
 * counts) counts towards opening, a cancel by the caller or a call that never began is no
 * verdict.
 */
export function reportToBreaker(
  breaker: CircuitBreaker,
  outcome: { readonly status: string; readonly error: AxonError | null } | null,
): void {
  if (outcome === null)
    breaker.release(); // refused before it ran (widening, store): no verdict
  else if (outcome.status === 'succeeded') breaker.success();
  else if (outcome.status === 'cancelled' || outcome.error instanceof CancelledError) {
    breaker.release();
  } else breaker.failure();
}
