/** @module An error raised on another thread or host, rebuilt from its wire payload. */
import { AxonError } from './axon-error.js';
import { CancelledError } from './cancelled-error.js';
import type { ErrorCode } from './error-code.js';
import type { ErrorPayload } from './to-error-payload.js';
import { WorkerLostError } from './worker-lost-error.js';
import { WorkerResetError } from './worker-reset-error.js';

/**
 * An error that crossed a thread or host as an {@link ErrorPayload}: its code, message,
 * retriability and details are the sender's.
 */
export class RemoteError extends AxonError {
  readonly code: ErrorCode;
  override readonly retriable: boolean;

  constructor(payload: ErrorPayload) {
    super(payload.message, payload.details ? { details: payload.details } : {});
    this.code = payload.code;
    this.retriable = payload.retriable;
  }
}

/**
 * The typed error of a payload: a {@link CancelledError}, {@link WorkerResetError} or
 * {@link WorkerLostError} for
 * those codes (so `instanceof` checks keep working across threads), else a
 * {@link RemoteError} with the payload's code.
 */
export function fromErrorPayload(payload: ErrorPayload): AxonError {
  const options = payload.details ? { details: payload.details } : {};
  switch (payload.code) {
    case 'CANCELLED':
      return new CancelledError(payload.message, options);
    case 'WORKER_RESET':
      return new WorkerResetError(payload.message, options);
    case 'WORKER_LOST':
      return new WorkerLostError(payload.message, options);
    default:
      return new RemoteError(payload);
  }
}
