/** @module Turning anything thrown into a typed axon error and its wire payload. */
import { AxonError } from './axon-error.js';
import type { ErrorCode } from './error-code.js';
import { InternalError } from './internal-error.js';

/** The `error` of API.md: what a step's `error` event and an error body carry. */
export interface ErrorPayload {
  readonly code: ErrorCode;
  readonly message: string;
  readonly retriable: boolean;
  readonly details?: Readonly<Record<string, unknown>>;
}

/** Returns `err` if it is an {@link AxonError}, else wraps it in an {@link InternalError}. */
export function toAxonError(err: unknown): AxonError {
  if (err instanceof AxonError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new InternalError(message, { cause: err });
}

/** The wire payload of any thrown value. */
export function toErrorPayload(err: unknown): ErrorPayload {
  const e = toAxonError(err);
  const hasDetails = Object.keys(e.details).length > 0;
  return {
    code: e.code,
    message: e.message,
    retriable: e.retriable,
    ...(hasDetails ? { details: e.details } : {}),
  };
}
