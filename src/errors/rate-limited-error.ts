/** @module A call refused for now by a rate limit. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/**
 * A rate limit refused the call: an engine's endpoint answered 429 (after the configured
 * retries), or a policy's limit was reached. `retryAfterMs` says when trying again makes
 * sense, when known. Code `RATE_LIMITED`, retriable.
 */
export class RateLimitedError extends AxonError {
  readonly code = 'RATE_LIMITED' as const;
  override readonly retriable = true;
  readonly retryAfterMs: number | null;

  constructor(message: string, retryAfterMs: number | null, options: AxonErrorOptions = {}) {
    super(message, {
      ...options,
      details: {
        ...options.details,
        ...(retryAfterMs === null ? {} : { retry_after_ms: retryAfterMs }),
      },
    });
    this.retryAfterMs = retryAfterMs;
  }
}
