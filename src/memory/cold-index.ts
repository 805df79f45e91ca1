/**
 * @module A cold tier's knowledge in memory: its items, their vectors in the IVF index
 * (`vector-index.ts`) grouped by scope key, and the search both stored cold tiers (SQLite,
 * PostgreSQL) answer with.
 */
import type { Embedder } from './embedders.js';
import type { ColdItem, Ranked } from './memory-types.js';
import { VectorIndex, type VectorIndexOptions } from './vector-index.js';

/** Items and their vectors, searched within scope keys. */
export class ColdIndex {
  readonly #embedder: Embedder;
  readonly #index: VectorIndex;
  readonly #items: ColdItem[] = [];
  readonly #ids = new Set<string>();
  readonly #groups = new Map<string, number>();

  constructor(embedder: Embedder, options: VectorIndexOptions) {
    this.#embedder = embedder;
    this.#index = new VectorIndex(embedder.dimensions, options);
  }

  has(id: string): boolean {
    return this.#ids.has(id);
  }

  /** Adds `item` with its `vector` (the embedder's, of its content). */
  add(item: ColdItem, vector: Float32Array): void {
    let g = this.#groups.get(item.key);
    if (g === undefined) {
      g = this.#groups.size;
      this.#groups.set(item.key, g);
    }
    this.#index.add(vector, g);
    this.#items.push(item);
    this.#ids.add(item.id);
  }

  /** The items under `keys` nearest to `query`; with `tags`, only those carrying each. */
  async search(
    query: string,
    keys: readonly string[],
    limit: number,
    tags?: readonly string[],
  ): Promise<Ranked<ColdItem>[]> {
    const groups = new Set<number>();
    for (const key of keys) {
      const g = this.#groups.get(key);
      if (g !== undefined) groups.add(g);
    }
    if (groups.size === 0 || limit <= 0 || query.trim() === '') return [];
    const [vector] = await this.#embedder.embed([query]);
    if (!vector) return [];
    const ranked = (k: number): Ranked<ColdItem>[] =>
      this.#index.search(vector, groups, k).map((h) => ({
        item: this.#items[h.at] as ColdItem,
        score: h.score,
      }));
    if (!tags || tags.length === 0) return ranked(limit);
    // The nearest items carrying every tag: more candidates each round, until enough pass
    // or the scopes have no more.
    for (let k = limit * 8; ; k *= 2) {
      const candidates = ranked(k);
      const tagged = candidates.filter((r) => tags.every((t) => r.item.tags.includes(t)));
      if (tagged.length >= limit || candidates.length < k) return tagged.slice(0, limit);
    }
  }
}

/** A float32 vector read from stored bytes (a SQLite blob, a PostgreSQL bytea). */
export function vectorOf(bytes: Buffer): Float32Array {
  return new Float32Array(
    bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength),
  );
}

/** The bytes a float32 vector is stored as. */
export function bytesOf(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
}
