/** @module A reservation that does not fit the remaining budget. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/**
 * The budget dimensions a ledger tracks, and the per-agent windows a policy keeps
 * (`tokens_per_hour`, `cost_per_day`).
 */
export type BudgetLimit =
  | 'max_tokens_in'
  | 'max_tokens_out'
  | 'max_cost_usd'
  | 'max_wall_ms'
  | 'tokens_per_hour'
  | 'cost_per_day';

/**
 * A call would pass a budget at some level of the context tree; it was not made.
 * Code `BUDGET_EXCEEDED`.
 */
export class BudgetExceededError extends AxonError {
  readonly code = 'BUDGET_EXCEEDED' as const;
  /** The limit that does not fit. */
  readonly limit: BudgetLimit;
  /** The name of the ledger (context) whose limit it is. */
  readonly ledger: string;
  readonly requested: number;
  readonly remaining: number;

  constructor(
    limit: BudgetLimit,
    ledger: string,
    requested: number,
    remaining: number,
    /** `message`: the reason in words, when a policy (not a ledger) refused. */
    options: AxonErrorOptions & { readonly message?: string } = {},
  ) {
    const { message, ...rest } = options;
    super(
      message ??
        `budget exceeded: ${limit} of "${ledger}" has ${remaining} left, ${requested} requested`,
      { ...rest, details: { ...rest.details, limit, ledger, requested, remaining } },
    );
    this.limit = limit;
    this.ledger = ledger;
    this.requested = requested;
    this.remaining = remaining;
  }
}
