/** @module Validating tool arguments before a call. */
import type { z } from 'zod';
import { SchemaViolationError, type SchemaIssue } from '../errors/schema-violation-error.js';
import type { ToolDefinition } from './define-tool.js';

/** Converts zod issues to {@link SchemaIssue}s with plain paths. */
export function zodIssues(error: z.ZodError): SchemaIssue[] {
  return error.issues.map((i) => ({
    path: i.path.map((p) => (typeof p === 'symbol' ? String(p) : p)),
    message: i.message,
  }));
}

/**
 * The parsed arguments, or throws {@link SchemaViolationError} listing the path of every
 * problem. Call it before the handler: a tool given bad arguments is never called.
 */
export function validateToolArgs<TArgs>(tool: ToolDefinition<TArgs>, args: unknown): TArgs {
  const parsed = tool.input.safeParse(args);
  if (!parsed.success) throw new SchemaViolationError(`tool ${tool.name}`, zodIssues(parsed.error));
  return parsed.data;
}
