/** @module Data that does not match its schema. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/** One schema problem: where it is and what is wrong. */
export interface SchemaIssue {
  /** Path to the offending value, e.g. `['to', 0]`; empty for the root. */
  readonly path: readonly (string | number)[];
  /** What is wrong there. */
  readonly message: string;
}

/**
 * Arguments or data failed validation against a schema. Code `SCHEMA_VIOLATION`.
 * The call the data was for has not been made.
 */
export class SchemaViolationError extends AxonError {
  readonly code = 'SCHEMA_VIOLATION' as const;
  /** Every problem found, each with its path. */
  readonly issues: readonly SchemaIssue[];
  /** What was being validated, e.g. `tool search_flights`. */
  readonly subject: string;

  constructor(subject: string, issues: readonly SchemaIssue[], options: AxonErrorOptions = {}) {
    const summary = issues
      .map((issue) => `${issue.path.length ? issue.path.join('.') : '(root)'}: ${issue.message}`)
      .join('; ');
    super(`${subject}: schema violation: ${summary}`, {
      ...options,
      details: {
        ...options.details,
        subject,
        issues: issues.map((i) => ({ ...i, path: [...i.path] })),
      },
    });
    this.subject = subject;
    this.issues = issues;
  }
}
