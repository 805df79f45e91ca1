/** @module A name or id that nothing answers to. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/** No agent, tool, run, step or actor has that name or id. Code `NOT_FOUND`. */
export class NotFoundError extends AxonError {
  readonly code = 'NOT_FOUND' as const;
  /** What was looked for: `agent`, `tool`, `run`, `step`, `actor`, `example`, ... */
  readonly kind: string;
  readonly id: string;

  constructor(kind: string, id: string, options: AxonErrorOptions = {}) {
    super(`${kind} "${id}" not found`, { ...options, details: { ...options.details, kind, id } });
    this.kind = kind;
    this.id = id;
  }
}
