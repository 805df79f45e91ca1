/** @module Validating tool arguments before a call. */
import type { ToolDefinition } from './define-tool.js';

export { zodIssues } from './zod-issues.js';

/**
 * The parsed arguments, or throws `SchemaViolationError` listing the path of every
 * problem. Call it before the handler: a tool given bad arguments is never called.
 */
export function validateToolArgs<TArgs>(tool: ToolDefinition<TArgs>, args: unknown): TArgs {
  return tool.validate(args);
}
