/**
 * @module The warm tier on Redis, for many hosts. Each item is a JSON string; per scope key
 * and kind, a list of ids (oldest first) and an inverted index: a set of ids per word.
 *
 * Ranking (Redis has no BM25 without RediSearch): the candidates are the items holding at
 * least one query word — taken rarest word first, at most 1 000 — and they are ranked by
 * BM25 (k1 1.2, b 0.75) computed here, with document frequencies from the index's set
 * sizes and lengths from per-key counters. The scores are BM25's, as the SQLite tier's.
 */
import { rankByBm25, words } from './bm25.js';
import { RedisLink, type RedisLinkOptions } from './redis-link.js';
import type { Ranked, WarmItem, WarmKind, WarmTier } from './memory-types.js';

/** Options of {@link redisWarmTier}. */
export type RedisWarmTierOptions = RedisLinkOptions;

/** Candidates ranked per search, at most. */
export const MAX_CANDIDATES = 1_000;

// KEYS[1] the item, KEYS[2] the ids list, KEYS[3] the counters hash. ARGV[1] the id,
// ARGV[2] the JSON, ARGV[3] the word count, ARGV[4] the index prefix, ARGV[5..] the words.
// → 1 stored, 0 the id was there.
const PUT = `
if not redis.call('SET', KEYS[1], ARGV[2], 'NX') then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('HINCRBY', KEYS[3], 'n', 1)
redis.call('HINCRBY', KEYS[3], 'len', tonumber(ARGV[3]))
for i = 5, #ARGV do redis.call('SADD', ARGV[4] .. ARGV[i], ARGV[1]) end
return 1`;

class RedisWarmTier implements WarmTier {
  readonly name = 'redis';
  readonly #link: RedisLink;

  constructor(options: RedisWarmTierOptions) {
    this.#link = new RedisLink(options);
  }

  #item(id: string): string {
    return `${this.#link.prefix}warm:item:${id}`;
  }

  #base(key: string, kind: WarmKind): string {
    return `${this.#link.prefix}warm:${key}:${kind}`;
  }

  async put(item: WarmItem): Promise<boolean> {
    const base = this.#base(item.key, item.kind);
    const all = words(item.content);
    const r = await this.#link.client.eval(
      PUT,
      3,
      this.#item(item.id),
      `${base}:ids`,
      `${base}:stats`,
      item.id,
      JSON.stringify(item),
      all.length,
      `${base}:w:`,
      ...new Set(all),
    );
    return r === 1;
  }

  async search(
    query: string,
    keys: readonly string[],
    kind: WarmKind,
    limit: number,
    tags?: readonly string[],
  ): Promise<Ranked<WarmItem>[]> {
    const terms = [...new Set(words(query))].slice(0, 64);
    if (terms.length === 0 || keys.length === 0 || limit <= 0) return [];
    const bases = keys.map((k) => this.#base(k, kind));
    const p = this.#link.client.pipeline();
    for (const base of bases) p.hmget(`${base}:stats`, 'n', 'len');
    for (const base of bases) for (const t of terms) p.scard(`${base}:w:${t}`);
    const res = (await p.exec()) ?? [];
    const value = (i: number): unknown => {
      const [err, v] = res[i] ?? [null, null];
      if (err) throw err;
      return v;
    };
    let n = 0;
    let len = 0;
    bases.forEach((_, i) => {
      const [count, length] = value(i) as (string | null)[];
      n += Number(count ?? 0);
      len += Number(length ?? 0);
    });
    const df = new Map<string, number>();
    const sets: { key: string; size: number }[] = [];
    bases.forEach((base, b) => {
      terms.forEach((t, j) => {
        const size = Number(value(bases.length + b * terms.length + j));
        df.set(t, (df.get(t) ?? 0) + size);
        if (size > 0) sets.push({ key: `${base}:w:${t}`, size });
      });
    });
    // Rarest words first: their items are the likeliest best, and the cheapest to fetch.
    sets.sort((a, b) => a.size - b.size);
    const ids = new Set<string>();
    for (const s of sets) {
      if (ids.size >= MAX_CANDIDATES) break;
      for (const id of await this.#link.client.smembers(s.key)) {
        if (ids.size >= MAX_CANDIDATES) break;
        ids.add(id);
      }
    }
    if (ids.size === 0) return [];
    const raw = await this.#link.client.mget(...[...ids].map((id) => this.#item(id)));
    const stats = { n, avgLength: n === 0 ? 1 : len / n, df };
    const items = raw.flatMap((s) => {
      if (s === null) return [];
      const item = JSON.parse(s) as WarmItem;
      return tags && !hasTags(item.tags, tags) ? [] : [item];
    });
    return rankByBm25(items, terms, stats, limit);
  }

  async list(key: string, kind: WarmKind): Promise<WarmItem[]> {
    const ids = await this.#link.client.lrange(`${this.#base(key, kind)}:ids`, 0, -1);
    if (ids.length === 0) return [];
    const raw = await this.#link.client.mget(...ids.map((id) => this.#item(id)));
    return raw.flatMap((s) => (s === null ? [] : [JSON.parse(s) as WarmItem]));
  }

  async getMark(name: string): Promise<number> {
    return Number((await this.#link.client.get(`${this.#link.prefix}mark:${name}`)) ?? 0);
  }

  async setMark(name: string, value: number): Promise<void> {
    await this.#link.client.set(`${this.#link.prefix}mark:${name}`, String(value));
  }

  close(): Promise<void> {
    return this.#link.close();
  }
}

/** Whether `have` includes every one of `want`. */
function hasTags(have: readonly string[], want: readonly string[]): boolean {
  return want.every((t) => have.includes(t));
}

/** The warm tier on Redis; see the module. */
export function redisWarmTier(options: RedisWarmTierOptions = {}): WarmTier {
  return new RedisWarmTier(options);
}
