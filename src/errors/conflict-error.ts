/** @module A write that conflicts with what is already stored. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/** The write conflicts with stored state (a duplicate id, a seq out of order). Code `CONFLICT`. */
export class ConflictError extends AxonError {
  readonly code = 'CONFLICT' as const;

  constructor(message: string, options: AxonErrorOptions = {}) {
    super(message, options);
  }
}
