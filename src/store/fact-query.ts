/** @module Applying a {@link FactQuery} to facts already in append order. */
import type { FactQuery, FactRecord } from './records.js';

/** The facts of `ordered` (append order) that `query` selects, by type, cursor and limit. */
export function selectFacts(ordered: readonly FactRecord[], query: FactQuery): FactRecord[] {
  let from = 0;
  if (query.after !== undefined) {
    const at = ordered.findIndex((f) => f.fact_id === query.after);
    // An unknown cursor selects nothing rather than everything.
    if (at === -1) return [];
    from = at + 1;
  }
  const out: FactRecord[] = [];
  const limit = query.limit ?? Number.POSITIVE_INFINITY;
  for (let i = from; i < ordered.length && out.length < limit; i++) {
    const fact = ordered[i] as FactRecord;
    if (query.type === undefined || fact.type === query.type) out.push(fact);
  }
  return out;
}

/** Checks a query: it names a run or a flow, and its limit is a whole number >= 0. */
export function checkFactQuery(query: FactQuery): void {
  if (query.runId === undefined && query.flowId === undefined) {
    throw new TypeError('listFacts: the query needs a runId or a flowId');
  }
  if (query.limit !== undefined && !(Number.isInteger(query.limit) && query.limit >= 0)) {
    throw new RangeError(`listFacts: limit must be a whole number >= 0, got ${query.limit}`);
  }
}
