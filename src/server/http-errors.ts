/**
 * @module API.md's error body on the wire: every failure of a request — a typed axon error,
 * a malformed body, a body past the limit, an unknown route — becomes
 * `{ error: { code, message, details }, correlation_id }` with the status its code calls for,
 * and a 429 carries `Retry-After`.
 */
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { AxonError } from '../errors/axon-error.js';
import type { ErrorCode } from '../errors/error-code.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { toAxonError } from '../errors/to-error-payload.js';

/** The HTTP status of each error code (API.md's list of statuses). */
export const STATUS_OF: Readonly<Record<ErrorCode, number>> = {
  INVALID_PARAMS: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  SCHEMA_VIOLATION: 422,
  POLICY_DENIED: 403,
  BUDGET_EXCEEDED: 422,
  RATE_LIMITED: 429,
  QUEUE_FULL: 429,
  POOL_UNAVAILABLE: 503,
  REPLAY_MISMATCH: 409,
  CANCELLED: 409,
  TIMEOUT: 503,
  WORKER_RESET: 503,
  WORKER_LOST: 503,
  NOT_IMPLEMENTED: 501,
  INTERNAL: 500,
};

/** The statuses API.md allows an error to have; anything else a library makes becomes 400. */
export const ERROR_STATUSES: ReadonlySet<number> = new Set([
  400, 401, 403, 404, 405, 409, 413, 415, 422, 429, 500, 501, 503,
]);

/** An error body of API.md. */
export interface ErrorBody {
  readonly error: {
    readonly code: ErrorCode;
    readonly message: string;
    readonly details: Readonly<Record<string, unknown>>;
  };
  readonly correlation_id: string;
}

/** A failure of a request that no axon error names: its code, status and message. */
export class HttpError extends AxonError {
  readonly code: ErrorCode;
  readonly status: number;

  constructor(
    status: number,
    code: ErrorCode,
    message: string,
    details: Readonly<Record<string, unknown>> = {},
  ) {
    super(message, { details });
    this.status = status;
    this.code = code;
  }
}

/** What a failure answers: its status, its body, and `Retry-After` seconds for a 429. */
export interface ErrorReply {
  readonly status: number;
  readonly body: ErrorBody;
  readonly retryAfterS: number | null;
}

/**
 * The reply to `err` (anything thrown) for a request with `correlationId`. An error that is
 * not axon's is `INTERNAL`, its message kept out of the body (it may hold what a caller
 * should not see); the caller logs it.
 */
export function errorReply(err: unknown, correlationId: string): ErrorReply {
  const known = err instanceof AxonError;
  const e = toAxonError(err);
  const status =
    e instanceof HttpError
      ? e.status
      : e instanceof InvalidParamsError && e.unprocessable
        ? 422
        : STATUS_OF[e.code];
  const details: Record<string, unknown> = { ...e.details };
  let retryAfterS: number | null = null;
  if (status === 429) {
    const ms = Number(details['retry_after_ms'] ?? 1_000);
    const waitMs = Number.isFinite(ms) && ms > 0 ? ms : 1_000;
    details['retry_after_ms'] = waitMs;
    retryAfterS = Math.max(1, Math.ceil(waitMs / 1_000));
  }
  return {
    status,
    retryAfterS,
    body: {
      error: {
        code: e.code,
        message: known ? e.message : 'internal error',
        details,
      },
      correlation_id: correlationId,
    },
  };
}

/**
 * Answers a request Node's HTTP parser refused (Fastify's `clientErrorHandler`: a malformed
 * request line, headers past Node's limit, a request that took too long) with API.md's error
 * body on the raw socket, then closes it: 413 `PAYLOAD_TOO_LARGE` for headers past the limit,
 * 400 `INVALID_PARAMS` for the rest (not Node's 431 or 408, which API.md does not list). A
 * reset or destroyed socket gets nothing.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
  const correlationId = randomUUID();
  const { status, body } = errorReply(
    tooLarge
      ? new HttpError(
          413,
          'PAYLOAD_TOO_LARGE',
          'the request headers are larger than the server takes',
        )
      : new HttpError(400, 'INVALID_PARAMS', 'the request is not valid HTTP', {
          reason: err.code ?? 'client_error',
        }),
    correlationId,
  );
  const text = JSON.stringify(body);
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n` +
        `content-type: application/json; charset=utf-8\r\n` +
        `content-length: ${Buffer.byteLength(text)}\r\n` +
        `x-correlation-id: ${correlationId}\r\nconnection: close\r\n\r\n${text}`,
    );
  }
  socket.destroy();
}
