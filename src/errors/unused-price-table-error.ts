/** @module A price table given to a runtime that no engine of it is priced from. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/**
 * A runtime's price table (`createRuntime({ priceTable })`, `AXON_PRICE_TABLE`) that would
 * price none of its engines: each was given a price table of its own, which the runtime's
 * does not replace. It is refused rather than kept unused, so that a configured price is
 * never silently left out of a cost. Give an engine no `priceTable` of its own for the
 * runtime's to price it, or drop the runtime's. Code `INVALID_PARAMS`.
 */
export class UnusedPriceTableError extends AxonError {
  readonly code = 'INVALID_PARAMS' as const;
  /** Where the table came from: `createRuntime: priceTable` or `AXON_PRICE_TABLE`. */
  readonly source: string;
  /** The table's version. */
  readonly version: string;
  /** The engines, each with a price table of its own. */
  readonly engines: readonly string[];

  constructor(
    source: string,
    version: string,
    engines: readonly string[],
    options: AxonErrorOptions = {},
  ) {
    super(
      `${source} (price table "${version}") prices no engine: every engine of the runtime has a price table of its own (${engines.join(', ')}); give an engine no priceTable for the runtime's to price it`,
      { ...options, details: { ...options.details, param: source, version, engines } },
    );
    this.source = source;
    this.version = version;
    this.engines = engines;
  }
}
