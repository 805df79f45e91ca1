/**
 * @module BM25 (k1 = 1.2, b = 0.75) over texts, for tiers without a full-text engine of their
 * own (the Redis warm tier), and the words both it and FTS5 match on.
 */

/** The lower-cased words (letters and digits) of `text`. */
export function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

const K1 = 1.2;
const B = 0.75;

/** What BM25 needs about the whole collection. */
export interface CollectionStats {
  /** Documents in the collection. */
  readonly n: number;
  /** Their average length in words. */
  readonly avgLength: number;
  /** Per query word, how many documents hold it. */
  readonly df: ReadonlyMap<string, number>;
}

/**
 * `items` ranked by the BM25 of their content for `terms`, best first (the older first among
 * equals), at most `limit`: how the warm tiers without a full-text engine of their own answer.
 */
export function rankByBm25<T extends { readonly content: string; readonly ts: number }>(
  items: readonly T[],
  terms: readonly string[],
  stats: CollectionStats,
  limit: number,
): { item: T; score: number }[] {
  const ranked = items.map((item) => ({ item, score: bm25(terms, item.content, stats) }));
  ranked.sort((a, b) => b.score - a.score || a.item.ts - b.item.ts);
  return ranked.slice(0, limit);
}

/** The BM25 score of a document's `text` for the (distinct) `terms` of a query. */
export function bm25(terms: readonly string[], text: string, stats: CollectionStats): number {
  const doc = words(text);
  const tf = new Map<string, number>();
  for (const w of doc) tf.set(w, (tf.get(w) ?? 0) + 1);
  const norm = 1 - B + (B * doc.length) / Math.max(1, stats.avgLength);
  let score = 0;
  for (const term of terms) {
    const f = tf.get(term) ?? 0;
    if (f === 0) continue;
    const df = stats.df.get(term) ?? 0;
    const idf = Math.log(1 + (stats.n - df + 0.5) / (df + 0.5));
    score += (idf * f * (K1 + 1)) / (f + K1 * norm);
  }
  return score;
}
