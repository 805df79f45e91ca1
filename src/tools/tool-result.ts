/** @module The result of a tool call, with Nerva's statuses. */
import type { AxonError } from '../errors/axon-error.js';

/** How a tool call ended. */
export type ToolStatus = 'success' | 'error' | 'permission_denied' | 'not_found' | 'timeout';

/** The result of `runtime.callTool`. */
export interface ToolResult<TOutput = unknown> {
  readonly status: ToolStatus;
  readonly tool: string;
  /** The handler's return value on success, else `null`. */
  readonly output: TOutput | null;
  /** The typed error when the status is not `success`. */
  readonly error: AxonError | null;
  readonly durationMs: number;
  /** The `tool_call` step that ran it, or `null` if the call was refused before a step began. */
  readonly stepId: string | null;
}
