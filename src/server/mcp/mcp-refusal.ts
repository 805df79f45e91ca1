/**
 * @module A refused MCP call as the JSON-RPC error an MCP client gets (docs/mcp.md,
 * "Errors"): nothing was run. `-32602` (invalid params, as the MCP specification has it for
 * an unknown tool and for arguments that fail the tool's schema) or `-32003` (any other
 * refusal: a key without the permission, a draining server, too many calls in flight, a
 * rate limit, the policy), with axon's error code and details in `error.data`.
 */
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { isAxonError } from '../../errors/axon-error.js';
import type { Logger } from '../../observability/logger.js';

/** The JSON-RPC error code of a refusal that is not about the call's arguments. */
export const MCP_REFUSED = -32003;

/** axon's codes that say what the call asked for is wrong: `-32602`. */
const INVALID: ReadonlySet<string> = new Set(['NOT_FOUND', 'SCHEMA_VIOLATION', 'INVALID_PARAMS']);

/** What `error.data` holds: axon's code, and the error's details. */
export interface RefusalData {
  readonly code: string;
  readonly [detail: string]: unknown;
}

/**
 * What a request handler throws to answer a JSON-RPC error: the SDK sends its `code`,
 * `message` and `data` as they are (its own `McpError` would send a message prefixed with
 * `MCP error <code>: `, which its client prefixes again).
 */
export class McpRefusal extends Error {
  readonly code: number;
  readonly data: RefusalData;

  constructor(code: number, message: string, data: RefusalData) {
    super(message);
    this.name = 'McpRefusal';
    this.code = code;
    this.data = data;
  }
}

/** A refusal with axon's `code` (API.md's list) and `details`. */
export function refusal(
  code: string,
  message: string,
  details: Readonly<Record<string, unknown>> = {},
): McpRefusal {
  const data: RefusalData = { ...details, code };
  return new McpRefusal(INVALID.has(code) ? ErrorCode.InvalidParams : MCP_REFUSED, message, data);
}

/**
 * `err` (thrown while a call was being begun) as the MCP error to answer: an axon error keeps
 * its code and details; anything else is a defect, logged, its message withheld (`INTERNAL`).
 */
export function refusalOf(err: unknown, logger: Logger): McpRefusal {
  if (err instanceof McpRefusal) return err;
  if (isAxonError(err)) return refusal(err.code, err.message, err.details);
  logger.error({ err }, 'an MCP call failed');
  return new McpRefusal(ErrorCode.InternalError, 'internal error (the server log has it)', {
    code: 'INTERNAL',
  });
}
