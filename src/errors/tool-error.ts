/** @module A tool that failed on its own side. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/** How a tool failed. */
export type ToolFailure =
  /** The tool ran and reported an error (an MCP result with `isError`). */
  | 'tool_error'
  /** The process serving the tool exited or closed its connection during the call. */
  | 'server_exited'
  /** The tool's server could not be started. */
  | 'server_unavailable';

/**
 * A tool failed on its side: it reported an error, or the server behind it died or could
 * not start. Code `INTERNAL`; retriable when its server died or could not start (the next
 * call starts a new one).
 */
export class ToolError extends AxonError {
  readonly code = 'INTERNAL' as const;
  override readonly retriable: boolean;
  readonly tool: string;
  readonly failure: ToolFailure;

  constructor(tool: string, failure: ToolFailure, message: string, options: AxonErrorOptions = {}) {
    super(`tool "${tool}": ${message}`, {
      ...options,
      details: { ...options.details, tool, failure },
    });
    this.tool = tool;
    this.failure = failure;
    this.retriable = failure !== 'tool_error';
  }
}
