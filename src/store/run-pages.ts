/**
 * @module What every store's `pageRuns` shares: whether a run is of a page's query, and the
 * newest `limit` of pages read one status at a time, merged.
 */
import type { RunRecord } from './records.js';
import type { RunPageQuery } from './run-store.js';

/** Whether `run` is one `query` keeps (its `before` and `limit` aside). */
export function ofRunPage(run: RunRecord, query: RunPageQuery): boolean {
  return (
    (query.status === undefined || query.status.includes(run.status)) &&
    (query.userId === undefined || run.user_id === query.userId) &&
    (query.entry === undefined || run.entry === query.entry)
  );
}

/**
 * The newest `limit` of several lists each newest first (one per status), by `newer` (how
 * two runs of different lists compare: negative when the first is the newer).
 */
export function newestOf<T>(
  lists: readonly (readonly T[])[],
  limit: number,
  newer: (a: T, b: T) => number,
): T[] {
  if (lists.length === 1) return lists[0]?.slice(0, limit) ?? [];
  return lists.flat().sort(newer).slice(0, limit);
}
