/** @module A step that ran past its time. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/** A step passed its timeout or its context's deadline and was stopped. Code `TIMEOUT`. */
export class TimeoutError extends AxonError {
  readonly code = 'TIMEOUT' as const;
  override readonly retriable = true;
  /** The actor that timed out. */
  readonly actor: string;
  /** The time it was allowed, in milliseconds. */
  readonly timeoutMs: number;

  constructor(actor: string, timeoutMs: number, options: AxonErrorOptions = {}) {
    super(`"${actor}" timed out after ${timeoutMs} ms`, {
      ...options,
      details: { ...options.details, actor, timeout_ms: timeoutMs },
    });
    this.actor = actor;
    this.timeoutMs = timeoutMs;
  }
}
