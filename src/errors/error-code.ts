/** @module The closed set of error codes that axon reports, taken from API.md. */
import { z } from 'zod';

/** Every error code of the HTTP contract (API.md, "Common"). */
export const ERROR_CODES = [
  'INVALID_PARAMS',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'CONFLICT',
  'PAYLOAD_TOO_LARGE',
  'SCHEMA_VIOLATION',
  'POLICY_DENIED',
  'BUDGET_EXCEEDED',
  'RATE_LIMITED',
  'QUEUE_FULL',
  'POOL_UNAVAILABLE',
  'REPLAY_MISMATCH',
  'CANCELLED',
  'TIMEOUT',
  'WORKER_RESET',
  'WORKER_LOST',
  'NOT_IMPLEMENTED',
  'INTERNAL',
] as const;

/** Zod schema of {@link ErrorCode}. */
export const errorCodeSchema = z.enum(ERROR_CODES);

/** One of the codes of {@link ERROR_CODES}; branch on this, never on message text. */
export type ErrorCode = (typeof ERROR_CODES)[number];
