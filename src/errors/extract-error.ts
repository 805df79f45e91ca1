/** @module Raw agent output that could not be turned into typed data. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';
import type { SchemaIssue } from './schema-violation-error.js';

/** One try at extracting: the text it read and why it did not fit. */
export interface ExtractAttempt {
  /** The text tried: the agent's raw output, then the engine's corrected answer. */
  readonly raw: string;
  /** Why it failed, in words. */
  readonly error: string;
  /** The schema's complaints, when the text was JSON but did not match. */
  readonly issues: readonly SchemaIssue[];
}

/**
 * The extract layer gave up (seed 001): the raw output did not parse into the schema, nor
 * did the engine's answer when asked again with the error. Holds both attempts. Code
 * `SCHEMA_VIOLATION`.
 */
export class ExtractError extends AxonError {
  readonly code = 'SCHEMA_VIOLATION' as const;
  readonly attempts: readonly ExtractAttempt[];

  constructor(attempts: readonly ExtractAttempt[], options: AxonErrorOptions = {}) {
    super(
      `could not extract typed output after ${attempts.length} attempt${attempts.length === 1 ? '' : 's'}: ${attempts.map((a) => a.error).join(' | ')}`,
      {
        ...options,
        details: {
          ...options.details,
          attempts: attempts.map((a) => ({
            error: a.error,
            issues: a.issues,
            raw: a.raw.slice(0, 500),
          })),
        },
      },
    );
    this.attempts = attempts;
  }
}
