/** @module A replay that cannot reproduce its recording. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/**
 * A `replay` or `strict_replay` run cannot reproduce its recorded run (NERVE-4022): a
 * determinism input of a call differs from the recording's (`field` names it: `seed`,
 * `prompt_hash`, `params_hash`, `engine`, `model`, `replica`, `tool`, `args_hash`, `kind`),
 * the recording has no such call (`field` is `recording`), or a `strict_replay` run's seed
 * is not the recorded run's. Code `REPLAY_MISMATCH`; never retriable, the same inputs give
 * the same mismatch.
 */
export class ReplayMismatchError extends AxonError {
  readonly code = 'REPLAY_MISMATCH' as const;
  /** The determinism input that differs. */
  readonly field: string;

  constructor(
    field: string,
    message: string,
    options: AxonErrorOptions & {
      readonly expected?: unknown;
      readonly actual?: unknown;
    } = {},
  ) {
    super(`replay mismatch on ${field}: ${message}`, {
      ...options,
      details: {
        ...options.details,
        field,
        ...(options.expected === undefined ? {} : { expected: options.expected }),
        ...(options.actual === undefined ? {} : { actual: options.actual }),
      },
    });
    this.field = field;
  }
}
