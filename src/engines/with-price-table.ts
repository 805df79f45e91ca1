/**
 * @module An engine costed from another price table: how a runtime's table (`createRuntime({
 * priceTable })`, `AXON_PRICE_TABLE`, axon.yaml's `prices`) reaches the engines priced from
 * the shipped one.
 */
import type { Engine } from './chat-request.js';
import { checkPriceTable, type PriceTable } from './price-table.js';

/**
 * `engine`, its calls costed from `table` instead of its own. The engine itself is not
 * changed: the result calls it for every request (so an engine that keeps private state
 * still works), and only the table differs. `table` is checked first (`RangeError` naming
 * the bad entry).
 *
 * @example
 * const priced = withPriceTable(createScriptedEngine(), {
 *   version: 'acme-2026-11', models: { scripted: { inputPerMTok: 1, outputPerMTok: 2 } },
 * });
 */
export function withPriceTable(engine: Engine, table: PriceTable): Engine {
  const priceTable = checkPriceTable(table, 'withPriceTable: table');
  return {
    name: engine.name,
    defaultModel: engine.defaultModel,
    defaultMaxTokens: engine.defaultMaxTokens,
    priceTable,
    stream: (request, options) => engine.stream(request, options),
    estimateTokensIn: (request) => engine.estimateTokensIn(request),
  };
}
