/**
 * @module bench:memory — seed 002's memory, embedded (SQLite warm and cold tiers, in-process
 * hot tier), on synthetic notes (words drawn from a Zipf-like vocabulary, under 100 users'
 * scopes and a global one):
 * - recall latency (`TieredMemory.recall`, all three tiers) with 1k, 10k and 100k warm items
 *   and as many cold vectors: `recall_p50_ms_<n>`, `recall_p99_ms_<n>` (target: p50 ≤ 5 ms
 *   at 100k);
 * - store throughput, one item per call (each its own commit): `warm_store_per_s`,
 *   `cold_store_per_s` (the hashed embedder included);
 * - the cold index against a brute-force scan of the same 100k vectors, for queries that see
 *   one user's scope and the global one (as recall asks): `cold_speedup` (scan time ÷ index
 *   time) and `cold_recall_at_10` (target ≥ 0.95); and the same with all 100k vectors in
 *   one scope, where the index is IVF: `cold_one_scope_*`.
 * `AXON_BENCH_MEMORY_MAX` lowers the largest size (default 100 000).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createContext } from '../src/context/create-context.js';
import { hashedEmbedder } from '../src/memory/embedders.js';
import { memoryHotTier } from '../src/memory/hot-tier.js';
import { sqliteColdTier } from '../src/memory/sqlite-cold-tier.js';
import { openMemoryDb, sqliteWarmTier } from '../src/memory/sqlite-warm-tier.js';
import { TieredMemory } from '../src/memory/tiered-memory.js';
import { VectorIndex } from '../src/memory/vector-index.js';
import { report } from './harness.js';

const max = Number(process.env['AXON_BENCH_MEMORY_MAX'] ?? '100000');
const sizes = [1_000, 10_000, 100_000].filter((n) => n <= max);
const dir = mkdtempSync(join(tmpdir(), 'axon-bench-memory-'));
const queries = 200;

/** A deterministic pseudo-random source (mulberry32). */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

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

// The cold index against a brute-force scan of the same vectors (every vector read, those
// the query may see kept): as recall asks — one user's scope and the global one, vectors
// spread like the load above — and with every vector in one scope (the IVF path).
{
  const size = sizes.at(-1) ?? 1_000;
  const embedder = hashedEmbedder();
  const probe = Number(process.env['AXON_BENCH_PROBE'] ?? '0.1');
  const measure = async (
    groupOf: (i: number) => number,
    visible: (q: number) => ReadonlySet<number>,
  ): Promise<{ recall: number; indexMs: number; scanMs: number }> => {
    const rand = random(7);
    const index = new VectorIndex(embedder.dimensions, { probe });
    for (let i = 0; i < size; i++) {
      const [v] = await embedder.embed([note(rand)]);
      if (v) index.add(v, groupOf(i));
    }
    let found = 0;
    let wanted = 0;
    let indexMs = 0;
    let scanMs = 0;
    for (let q = 0; q < 100; q++) {
      const [v] = await embedder.embed([note(rand).split(' ').slice(0, 6).join(' ')]);
      if (!v) continue;
      const groups = visible(q);
      let t0 = performance.now();
      const fast = index.search(v, groups, 10);
      indexMs += performance.now() - t0;
      t0 = performance.now();
      const exact = index.scan(v, groups, 10);
      scanMs += performance.now() - t0;
      const truth = new Set(exact.map((h) => h.at));
      found += fast.filter((h) => truth.has(h.at)).length;
      wanted += exact.length;
    }
    return { recall: found / wanted, indexMs: indexMs / 100, scanMs: scanMs / 100 };
  };
  // As the load above: every tenth item global (group 100), the rest over 100 users.
  const scoped = await measure(
    (i) => (i % 10 === 0 ? 100 : i % 100),
    (q) => new Set([q % 100, 100]),
  );
  metrics['cold_recall_at_10'] = scoped.recall;
  metrics['cold_search_ms'] = scoped.indexMs;
  metrics['cold_scan_ms'] = scoped.scanMs;
  ratios['cold_speedup'] = scoped.scanMs / scoped.indexMs;
  const one = await measure(
    () => 0,
    () => new Set([0]),
  );
  metrics['cold_one_scope_recall_at_10'] = one.recall;
  metrics['cold_one_scope_search_ms'] = one.indexMs;
  metrics['cold_one_scope_scan_ms'] = one.scanMs;
  ratios['cold_one_scope_speedup'] = one.scanMs / one.indexMs;
}

rmSync(dir, { recursive: true, force: true });
report({ bench: 'memory', metrics, ratios });
