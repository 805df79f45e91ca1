/** @module A child context that asked for more than its parent has. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/**
 * A child context asked for a permission or budget its parent does not have.
 * Contexts only narrow. Code `FORBIDDEN`.
 */
export class WideningError extends AxonError {
  readonly code = 'FORBIDDEN' as const;
  /** The field that would widen, e.g. `permissions.allowedTools` or `budgets.maxCostUsd`. */
  readonly field: string;

  constructor(
    field: string,
    requested: unknown,
    available: unknown,
    options: AxonErrorOptions = {},
  ) {
    super(
      `a child context cannot widen ${field}: asked for ${JSON.stringify(requested)}, the parent has ${JSON.stringify(available)}`,
      { ...options, details: { ...options.details, field, requested, available } },
    );
    this.field = field;
  }
}
