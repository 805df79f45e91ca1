/** @module An engine call whose cost cannot be known, under a cost budget. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/**
 * A call to a model its engine's price table does not price, made under a cost budget (a
 * `max_cost_usd` of the context or run, or a policy's `cost_per_day`): its cost could not be
 * counted, so the budget could not be kept, and the call was not made. Fail closed: give the
 * engine a price for the model (`priceTable`, `AXON_PRICE_TABLE`). Code `BUDGET_EXCEEDED`,
 * not retriable.
 */
export class UnpricedModelError extends AxonError {
  readonly code = 'BUDGET_EXCEEDED' as const;
  readonly engine: string;
  readonly model: string;
  /** The version of the price table that lacks the model. */
  readonly priceTable: string;

  constructor(
    engine: string,
    model: string,
    priceTable: string,
    /** Which budget needs the price: `max_cost_usd` or `cost_per_day`. */
    budget: string,
    options: AxonErrorOptions = {},
  ) {
    super(
      `model "${model}" of engine "${engine}" has no price in table "${priceTable}", and the call is under a cost budget (${budget}): configure a price for it`,
      {
        ...options,
        details: { ...options.details, engine, model, price_table: priceTable, limit: budget },
      },
    );
    this.engine = engine;
    this.model = model;
    this.priceTable = priceTable;
  }
}
