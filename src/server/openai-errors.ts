/**
 * @module OpenAI's error body for the OpenAI API routes (`/v1/models`, `/v1/chat/completions`;
 * docs/openai-api.md): every failure of those requests answers
 * `{ error: { message, type, param, code } }` with the status API.md's error would have —
 * a client built on OpenAI's SDK then raises its own error class (`NotFoundError`,
 * `AuthenticationError`, `BadRequestError`, …).
 */
import type { ErrorCode } from '../errors/error-code.js';
import { errorReply, HttpError } from './http-errors.js';

/** OpenAI's error body. */
export interface OpenAIErrorBody {
  readonly error: {
    readonly message: string;
    /** `invalid_request_error`, `permission_error`, `rate_limit_error` or `server_error`. */
    readonly type: string;
    /** The request field at fault (`model`, `messages[2].content`, …), or `null`. */
    readonly param: string | null;
    /** OpenAI's own (`model_not_found`, `invalid_api_key`, …), else axon's code in lower case. */
    readonly code: string | null;
  };
}

/** What a failure answers: its status, OpenAI's body, and `Retry-After` seconds for a 429. */
export interface OpenAIErrorReply {
  readonly status: number;
  readonly body: OpenAIErrorBody;
  readonly retryAfterS: number | null;
}

/** The details key an {@link openAIRefusal} keeps OpenAI's code under. */
const OPENAI_CODE = 'openai_code';

/**
 * A refusal of a request to the OpenAI routes: `status` and axon's `code` as API.md has
 * them, OpenAI's `openaiCode` and the `param` at fault for the body.
 */
export function openAIRefusal(
  status: number,
  code: ErrorCode,
  message: string,
  openaiCode: string | null,
  param: string | null,
): HttpError {
  return new HttpError(status, code, message, {
    ...(param === null ? {} : { param }),
    ...(openaiCode === null ? {} : { [OPENAI_CODE]: openaiCode }),
  });
}

/** OpenAI's `type` of an error answered with `status`. */
function typeOf(status: number): string {
  if (status >= 500) return 'server_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  return 'invalid_request_error';
}

/**
 * The reply to `err` (anything thrown) in OpenAI's shape: the status of API.md's
 * (`errorReply`), its message (an error that is not axon's is `internal error`), `param`
 * from the error's `details.param`, and `code` OpenAI's where one fits (`invalid_api_key`
 * for a 401; what {@link openAIRefusal} named), else axon's code in lower case
 * (`budget_exceeded`, `timeout`, …).
 */
export function openAIErrorReply(err: unknown, correlationId: string): OpenAIErrorReply {
  const { status, body, retryAfterS } = errorReply(err, correlationId);
  const { code, message, details } = body.error;
  const param = details['param'];
  const named = details[OPENAI_CODE];
  return {
    status,
    retryAfterS,
    body: {
      error: {
        message,
        type: typeOf(status),
        param: typeof param === 'string' ? param : null,
        code:
          typeof named === 'string'
            ? named
            : code === 'UNAUTHORIZED'
              ? 'invalid_api_key'
              : code.toLowerCase(),
      },
    },
  };
}
