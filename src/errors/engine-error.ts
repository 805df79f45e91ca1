/** @module An engine call that failed on the engine's side. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/** How an engine call failed. */
export type EngineFailure =
  /** The endpoint answered with an HTTP error (after any retries). */
  | 'http_error'
  /** The endpoint could not be reached (after any retries). */
  | 'connection_failed'
  /** The connection broke while the answer streamed. */
  | 'connection_lost'
  /** The stream held something that is not a valid chunk. */
  | 'malformed_stream';

/**
 * An engine call failed on the engine's side: an HTTP error, an unreachable endpoint, a
 * connection lost mid-stream, or a malformed chunk. `failure` says which and `status` has the
 * HTTP status when there was one. Code `INTERNAL`; retriable unless the endpoint refused the
 * request itself (a 4xx other than 408, 409 and 429).
 */
export class EngineError extends AxonError {
  readonly code = 'INTERNAL' as const;
  override readonly retriable: boolean;
  readonly engine: string;
  readonly failure: EngineFailure;
  readonly status: number | null;

  constructor(
    engine: string,
    failure: EngineFailure,
    message: string,
    options: AxonErrorOptions & { readonly status?: number | null } = {},
  ) {
    const status = options.status ?? null;
    super(`engine "${engine}": ${message}`, {
      ...options,
      details: { ...options.details, engine, failure, ...(status === null ? {} : { status }) },
    });
    this.engine = engine;
    this.failure = failure;
    this.status = status;
    this.retriable =
      status === null || status >= 500 || status === 408 || status === 409 || status === 429;
  }
}
