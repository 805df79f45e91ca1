/**
 * @module bench:memory — seed 002's memory, embedded (SQLite warm and cold tiers, in-process
 * hot tier), on synthetic notes (words drawn from a Zipf-like vocabulary, under 100 users'
 * scopes and a global one):
 * - recall latency (`TieredMemory.recall`, all three tiers) with 1k, 10k and 100k warm items
 *   and as many cold vectors: `recall_p50_ms_<n>`, `recall_p99_ms_<n>` (target: p50 ≤ 5 ms
 *   at 100k);
 * - store throughput, one item per call (each its own commit): `warm_store_per_s`,
 *   `cold_store_per_s` (the hashed embedder included);
 * - the cold index (`VectorIndex`) on 100k vectors, against the exact answer: every vector
 *   of the scopes the query sees, read (a user's own scan). Two spreads:
 *   - as the load above (10 % global, the rest over 100 users), a query seeing one user's
 *     scope (about 900 vectors, scanned exactly) and the global one (10k, past the index's
 *     `trainAt`: through its codes):
 *     `cold_recall_at_10` (target ≥ 0.95), the index's latency `cold_p50_ms`, `cold_p99_ms`
 *     and mean `cold_search_ms`; the exact scan of those scopes `cold_exact_ms`; a scan of
 *     every vector keeping the visible ones `cold_scan_ms`, and `cold_speedup` (that scan ÷
 *     the index's mean);
 *   - all 100k in one user's scope, queried with that scope and the global one (empty), the
 *     index's code path: `cold_one_scope_recall_at_10` (target ≥ 0.95), `cold_one_scope_p50_ms`
 *     (target ≤ 5 ms), `cold_one_scope_p99_ms`, mean `cold_one_scope_search_ms`; the exact
 *     scan `cold_one_scope_scan_ms` (here every vector) and `cold_one_scope_speedup` (it ÷ the
 *     mean); adding the 100k vectors one at a time, embeddings made beforehand,
 *     `cold_one_scope_build_ms`; and asked for 50, as `TieredMemory.recall` asks the cold
 *     tier: `cold_one_scope_k50_recall_at_50`, `cold_one_scope_k50_p50_ms`, `_p99_ms`.
 *   Index queries run back to back (after 20 untimed), then the exact ones.
 * `AXON_BENCH_MEMORY_MAX` lowers the largest size (default 100 000).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createContext } from '../src/context/create-context.js';
import { createSeededRandom as random } from '../src/context/seeded-random.js';
import { hashedEmbedder } from '../src/memory/embedders.js';
import { memoryHotTier } from '../src/memory/hot-tier.js';
import { sqliteColdTier } from '../src/memory/sqlite-cold-tier.js';
import { openMemoryDb, sqliteWarmTier } from '../src/memory/sqlite-warm-tier.js';
import { TieredMemory } from '../src/memory/tiered-memory.js';
import { VectorIndex, type Hit, type VectorIndexOptions } from '../src/memory/vector-index.js';
import { report } from './harness.js';

const max = Number(process.env['AXON_BENCH_MEMORY_MAX'] ?? '100000');
const sizes = [1_000, 10_000, 100_000].filter((n) => n <= max);
const dir = mkdtempSync(join(tmpdir(), 'axon-bench-memory-'));
const queries = 200;

const vocabulary = Array.from({ length: 5_000 }, (_, i) => `w${i.toString(36)}`);
/** A note of 8–20 words, drawn Zipf-like (a few words common, most rare). */
function note(rand: () => number): string {
  const n = 8 + Math.floor(rand() * 13);
  const words: string[] = [];
  for (let i = 0; i < n; i++)
    words.push(vocabulary[Math.floor(vocabulary.length * rand() ** 3)] ?? 'w0');
  return words.join(' ');
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
}

const users = Array.from({ length: 100 }, (_, i) => `u${i}`);
const metrics: Record<string, number> = {};
const ratios: Record<string, number> = {};

for (const size of sizes) {
  const path = join(dir, `${randomUUID()}.db`);
  const db = openMemoryDb(path);
  const warm = sqliteWarmTier(db);
  const cold = sqliteColdTier(db);
  const memory = new TieredMemory({ hot: memoryHotTier(), warm, cold, tokenBudget: 4_000 });
  const rand = random(size);
  // Loaded in one transaction (the statements run at once; the promises settle later).
  db.exec('BEGIN');
  const loads: Promise<unknown>[] = [];
  for (let i = 0; i < size; i++) {
    const user = users[i % users.length] ?? 'u0';
    const ctx = createContext({ userId: user, memoryScope: i % 10 === 0 ? 'global' : 'user' });
    loads.push(memory.store({ content: note(rand), tier: 'warm' }, ctx));
    loads.push(memory.store({ content: note(rand), tier: 'cold' }, ctx));
  }
  await Promise.all(loads);
  db.exec('COMMIT');
  const times: number[] = [];
  for (let q = 0; q < queries; q++) {
    const ctx = createContext({ userId: users[q % users.length] ?? 'u0', sessionId: 's' });
    const query = note(rand).split(' ').slice(0, 4).join(' ');
    const t0 = performance.now();
    await memory.recall(query, ctx);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const label = size >= 1000 ? `${size / 1000}k` : String(size);
  metrics[`recall_p50_ms_${label}`] = percentile(times, 0.5);
  metrics[`recall_p99_ms_${label}`] = percentile(times, 0.99);
  if (size === sizes.at(-1)) {
    // One item per call, each its own commit: what a service storing as it goes gets.
    const ctx = createContext({ userId: 'writer', memoryScope: 'user' });
    let t0 = performance.now();
    for (let i = 0; i < 2_000; i++) await memory.store({ content: note(rand), tier: 'warm' }, ctx);
    metrics['warm_store_per_s'] = 2_000 / ((performance.now() - t0) / 1000);
    t0 = performance.now();
    for (let i = 0; i < 2_000; i++) await memory.store({ content: note(rand), tier: 'cold' }, ctx);
    metrics['cold_store_per_s'] = 2_000 / ((performance.now() - t0) / 1000);
  }
  await memory.close();
  db.close();
}

// The cold index against the exact answer (every vector of the scopes the query sees read:
// what a user's own scan would read). Queries run back to back, first through the index,
// then exactly; the first 20 are untimed (JIT warm-up).
{
  const size = sizes.at(-1) ?? 1_000;
  const embedder = hashedEmbedder();
  // Overrides for sweeps: AXON_BENCH_SHORTLIST, AXON_BENCH_RERANK (see VectorIndexOptions).
  let options: VectorIndexOptions = {};
  const shortlist = process.env['AXON_BENCH_SHORTLIST'];
  const rerank = process.env['AXON_BENCH_RERANK'];
  if (shortlist) options = { ...options, shortlist: Number(shortlist) };
  if (rerank) options = { ...options, rerank: Number(rerank) };
  /** `size` notes embedded, then added one at a time (only the adds timed). */
  const build = async (
    rand: () => number,
    groupOf: (i: number) => number,
  ): Promise<{ index: VectorIndex; buildMs: number }> => {
    const vectors: Float32Array[] = [];
    for (let i = 0; i < size; i++) vectors.push(...(await embedder.embed([note(rand)])));
    const index = new VectorIndex(embedder.dimensions, options);
    const t0 = performance.now();
    for (const [i, v] of vectors.entries()) index.add(v, groupOf(i));
    return { index, buildMs: performance.now() - t0 };
  };
  const queriesOf = async (rand: () => number, n: number): Promise<Float32Array[]> => {
    const out: Float32Array[] = [];
    for (let q = 0; q < n; q++) {
      out.push(...(await embedder.embed([note(rand).split(' ').slice(0, 6).join(' ')])));
    }
    return out;
  };
  const warmup = 20;
  /** Recall@`at` of `search` asked for `k`, its latency, and the exact scan's mean time. */
  const measure = (
    index: VectorIndex,
    queries: readonly Float32Array[],
    visible: (q: number) => ReadonlySet<number>,
    k: number,
    at: number,
  ): { recall: number; p50: number; p99: number; meanMs: number; exactMs: number } => {
    for (let q = 0; q < warmup; q++) index.search(queries[q] as Float32Array, visible(q), k);
    const times: number[] = [];
    const found: Hit[][] = [];
    for (let q = warmup; q < queries.length; q++) {
      const v = queries[q] as Float32Array;
      const groups = visible(q);
      const t0 = performance.now();
      found.push(index.search(v, groups, k));
      times.push(performance.now() - t0);
    }
    let hits = 0;
    let wanted = 0;
    let exactMs = 0;
    for (let q = warmup; q < queries.length; q++) {
      const t0 = performance.now();
      const exact = index.exact(queries[q] as Float32Array, visible(q), at);
      exactMs += performance.now() - t0;
      const truth = new Set(exact.map((h) => h.at));
      hits += (found[q - warmup] ?? []).slice(0, at).filter((h) => truth.has(h.at)).length;
      wanted += exact.length;
    }
    const mean = times.reduce((a, b) => a + b, 0) / times.length;
    times.sort((a, b) => a - b);
    return {
      recall: hits / wanted,
      p50: percentile(times, 0.5),
      p99: percentile(times, 0.99),
      meanMs: mean,
      exactMs: exactMs / times.length,
    };
  };

  // As the load above: every tenth item global (group 100), the rest over 100 users; a
  // query sees one user's scope and the global one.
  {
    const rand = random(7);
    const { index } = await build(rand, (i) => (i % 10 === 0 ? 100 : i % 100));
    const queries = await queriesOf(rand, warmup + 200);
    const visible = (q: number): ReadonlySet<number> => new Set([q % 100, 100]);
    const r = measure(index, queries, visible, 10, 10);
    metrics['cold_recall_at_10'] = r.recall;
    metrics['cold_search_ms'] = r.meanMs;
    metrics['cold_p50_ms'] = r.p50;
    metrics['cold_p99_ms'] = r.p99;
    metrics['cold_exact_ms'] = r.exactMs;
    // A brute-force scan that reads every vector and keeps those the query may see.
    let scanMs = 0;
    for (let q = warmup; q < queries.length; q++) {
      const t0 = performance.now();
      index.scan(queries[q] as Float32Array, visible(q), 10);
      scanMs += performance.now() - t0;
    }
    metrics['cold_scan_ms'] = scanMs / (queries.length - warmup);
    ratios['cold_speedup'] = (metrics['cold_scan_ms'] ?? 0) / r.meanMs;
  }

  // Every vector in one user's scope (group 0), queried as recall queries: that user's
  // scope and the global one (group 1, empty here). Asked for 10 (recall@10, the target)
  // and for 50, as `TieredMemory.recall` asks the cold tier (recall@50).
  {
    const rand = random(7);
    const { index, buildMs } = await build(rand, () => 0);
    const queries = await queriesOf(rand, warmup + 500);
    const visible = (): ReadonlySet<number> => new Set([0, 1]);
    metrics['cold_one_scope_build_ms'] = buildMs;
    const r = measure(index, queries, visible, 10, 10);
    metrics['cold_one_scope_recall_at_10'] = r.recall;
    metrics['cold_one_scope_p50_ms'] = r.p50;
    metrics['cold_one_scope_p99_ms'] = r.p99;
    metrics['cold_one_scope_search_ms'] = r.meanMs;
    // In one scope the exact scan of the scope reads every vector: the brute-force scan.
    metrics['cold_one_scope_scan_ms'] = r.exactMs;
    ratios['cold_one_scope_speedup'] = r.exactMs / r.meanMs;
    const r50 = measure(index, queries, visible, 50, 50);
    metrics['cold_one_scope_k50_recall_at_50'] = r50.recall;
    metrics['cold_one_scope_k50_p50_ms'] = r50.p50;
    metrics['cold_one_scope_k50_p99_ms'] = r50.p99;
  }
}

rmSync(dir, { recursive: true, force: true });
report({ bench: 'memory', metrics, ratios });
