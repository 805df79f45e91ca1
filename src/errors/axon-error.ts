/** @module The base class of every error axon throws or reports. */
import type { ErrorCode } from './error-code.js';

/** Options shared by every {@link AxonError} subclass. */
export interface AxonErrorOptions {
  /** The error that caused this one, kept for logs and debugging. */
  readonly cause?: unknown;
  /** Structured, JSON-safe facts about the failure; shown as `details` on the wire. */
  readonly details?: Readonly<Record<string, unknown>>;
}

/**
 * Base class of axon's typed errors. Each subclass fixes a literal `code` from API.md's list
 * and whether a retry could succeed.
 *
 * Branch with `instanceof` or on `code`, never on `message`.
 */
export abstract class AxonError extends Error {
  /** The wire code of this error. */
  abstract readonly code: ErrorCode;
  /** Whether trying the same call again may succeed. */
  readonly retriable: boolean = false;
  /** Structured facts about the failure, safe to serialise. */
  readonly details: Readonly<Record<string, unknown>>;

  constructor(message: string, options: AxonErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.details = options.details ?? {};
  }
}

/** True when `value` is any {@link AxonError}. */
export function isAxonError(value: unknown): value is AxonError {
  return value instanceof AxonError;
}
