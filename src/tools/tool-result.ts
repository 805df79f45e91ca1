/** @module The result of a tool call, with Nerva's statuses. */
import type { AxonError } from '../errors/axon-error.js';

/** How a tool call ended. */
export type ToolStatus = 'success' | 'error' | 'permission_denied' | 'not_found' | 'timeout';

/**
 * The result of a tool call that was made: `runtime.callTool`'s (which rejects a call
 * refused before its step, so never answers `not_found` or `permission_denied`), or a tool
 * manager's own `call` (which never rejects, and answers those statuses).
 */
export interface ToolResult<TOutput = unknown> {
  readonly status: ToolStatus;
  readonly tool: string;
  /** The handler's return value on success, else `null`. */
  readonly output: TOutput | null;
  /** The typed error when the status is not `success`. */
  readonly error: AxonError | null;
  readonly durationMs: number;
  /** The `tool_call` step that ran it; `null` from a tool manager's `call`, which runs no step. */
  readonly stepId: string | null;
}
