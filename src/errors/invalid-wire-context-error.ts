/** @module A serialised context that cannot be trusted. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';
import type { SchemaIssue } from './schema-violation-error.js';

/** A wire context failed validation and was not rebuilt. Code `INVALID_PARAMS`. */
export class InvalidWireContextError extends AxonError {
  readonly code = 'INVALID_PARAMS' as const;
  readonly issues: readonly SchemaIssue[];

  constructor(issues: readonly SchemaIssue[], options: AxonErrorOptions = {}) {
    super(
      `malformed wire context: ${issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
      { ...options, details: { ...options.details, issues } },
    );
    this.issues = issues;
  }
}
