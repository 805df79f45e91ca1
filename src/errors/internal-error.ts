/** @module A defect: something threw that was not an axon error. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/**
 * An unexpected failure (a defect), such as a handler throwing a plain `Error`.
 * Code `INTERNAL`; the original is the `cause`.
 */
export class InternalError extends AxonError {
  readonly code = 'INTERNAL' as const;

  constructor(message: string, options: AxonErrorOptions = {}) {
    super(message, options);
  }
}
