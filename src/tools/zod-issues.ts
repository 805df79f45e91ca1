/** @module zod's issues as {@link SchemaIssue}s with plain paths. */
import type { z } from 'zod';
import type { SchemaIssue } from '../errors/schema-violation-error.js';

/** Converts zod issues to {@link SchemaIssue}s with plain paths. */
export function zodIssues(error: z.ZodError): SchemaIssue[] {
  return error.issues.map((i) => ({
    path: i.path.map((p) => (typeof p === 'symbol' ? String(p) : p)),
    message: i.message,
  }));
}
