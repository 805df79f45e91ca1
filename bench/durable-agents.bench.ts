/**
 * @module bench:durable-agents (issue 46) — durable agents at the machine's scale, on the
 * SQLite store (a temp file, durability `process`, what `axon serve` runs on):
 *
 * 1. **Addressed**: `AXON_BENCH_ACTORS` actors (default 1 000 000), a counter each, are sent
 *    one message each, `AXON_BENCH_IN_FLIGHT` (default 256) at a time, with at most
 *    `maxAwake` 100 000 awake at once; every message must succeed
 *    (`metrics.actors_addressed`), the heap sampled throughout (`metrics.heap_max_mb`).
 * 2. **Heap per actor**: with every actor put to sleep, the heap grown over the empty runtime
 *    divided by the actors (`metrics.asleep_bytes_per_actor`: what finding them costs in
 *    memory); then `AXON_BENCH_AWAKE` (default 50 000) of them woken and kept awake, the heap
 *    grown per awake actor (`metrics.awake_bytes_per_actor`). `--expose-gc`, a full collection
 *    before each reading.
 * 3. **Wake**: a message to an asleep actor, one at a time (`AXON_BENCH_WAKES`, default
 *    2 000, random keys), from `send` until its handler starts: `metrics.wake_p50_ms`,
 *    `metrics.wake_p99_ms`.
 * 4. **Against LangGraph.js threads**: messages to random keys among the actors, the same
 *    number in flight, against a LangGraph.js graph of one node doing the same work (adds
 *    one to a counter in its state) with its SQLite checkpointer
 *    (`@langchain/langgraph-checkpoint-sqlite`, a temp file, WAL), one thread per key (a
 *    thread is LangGraph's addressable unit), random keys among `AXON_BENCH_LG_THREADS`
 *    (default 10 000) threads made before the rounds — far fewer than axon's actors, so its
 *    file is smaller and its pages hotter: the comparison favours it. Interleaved rounds of
 *    `AXON_BENCH_ROUND_MS` (default 3 000), `AXON_BENCH_ROUNDS` (default 4) each:
 *    `ratios.vs_langgraph_threads`.
 *
 * Run with `npm run bench:durable-agents` (`node --expose-gc --import tsx`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { Annotation, END as LG_END, START, StateGraph } from '@langchain/langgraph';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { defineAgent } from '../src/actors/define-agent.js';
import { createLogger } from '../src/observability/logger.js';
import { createRuntime, type Runtime } from '../src/runtime/runtime.js';
import { sqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { report } from './harness.js';

const actors = Number(process.env['AXON_BENCH_ACTORS'] ?? '1000000');
const inFlight = Number(process.env['AXON_BENCH_IN_FLIGHT'] ?? '256');
const awakeSample = Number(process.env['AXON_BENCH_AWAKE'] ?? '50000');
const wakes = Number(process.env['AXON_BENCH_WAKES'] ?? '2000');
const lgThreads = Number(process.env['AXON_BENCH_LG_THREADS'] ?? '10000');
const rounds = Number(process.env['AXON_BENCH_ROUNDS'] ?? '4');
const roundMs = Number(process.env['AXON_BENCH_ROUND_MS'] ?? '3000');
const MAX_AWAKE = 100_000;

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('bench:durable-agents needs --expose-gc (npm run bench:durable-agents)');

/** When the handler of the message being timed started (`process.hrtime.bigint()`). */
let handlerStarted = 0n;

const counter = defineAgent({
  name: 'counter',
  input: z.object({ n: z.number() }),
  durable: {
    state: z.object({ total: z.number() }),
    initial: { total: 0 },
    version: 1,
    idleMs: 3_600_000,
  },
  handler: (message, actor) => {
    handlerStarted = process.hrtime.bigint();
    return {
      state: { total: actor.state.total + message.n },
      output: actor.state.total + message.n,
    };
  },
});

const dir = mkdtempSync(join(tmpdir(), 'axon-bench-durable-'));

function heapMb(): number {
  return process.memoryUsage().heapUsed / 1_048_576;
}

function settledHeap(): number {
  for (let i = 0; i < 3; i++) gc?.();
  return process.memoryUsage().heapUsed;
}

/** Runs `op(i)` for i in [0, count) with `inFlight` at a time; resolves when all are done. */
async function pooled(count: number, op: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) await op(next++);
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, lane));
}

/** Operations per second of `op` with `inFlight` at a time, for `ms`. */
async function rate(ms: number, op: () => Promise<unknown>): Promise<number> {
  let ops = 0;
  const start = performance.now();
  const end = start + ms;
  const lane = async (): Promise<void> => {
    while (performance.now() < end) {
      await op();
      ops++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return (ops * 1000) / (performance.now() - start);
}

const randomKey = (n: number): string => `k${Math.floor(Math.random() * n)}`;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
}

async function main(): Promise<void> {
  const runtime: Runtime = createRuntime({
    store: sqliteStore(join(dir, 'axon.db')),
    agents: [counter],
    logger: createLogger({ level: 'silent' }),
    durable: { maxAwake: MAX_AWAKE },
  });
  const baseline = settledHeap();

  // 1. Every actor addressed once.
  let heapMax = heapMb();
  let failed = 0;
  const sampler = setInterval(() => {
    heapMax = Math.max(heapMax, heapMb());
  }, 200);
  const addressStart = performance.now();
  await pooled(actors, async (i) => {
    const out = await runtime.actor('counter', `k${i}`).ask({ n: 1 });
    if (out !== 1) failed++;
    if (i % 100_000 === 0 && i > 0) {
      process.stdout.write(
        `  ${i.toLocaleString('en-US')} addressed, ${runtime.durable.awake} awake, heap ${heapMb().toFixed(0)} MB\n`,
      );
    }
  });
  const addressMs = performance.now() - addressStart;
  clearInterval(sampler);
  if (failed > 0) throw new Error(`bench:durable-agents: ${failed} messages did not add 1`);
  const awakeAfter = runtime.durable.awake;

  // 2. Heap: every actor asleep, then some awake.
  runtime.durable.sleepAll();
  const asleepHeap = settledHeap();
  await pooled(awakeSample, (i) => runtime.actor('counter', `k${i}`).ask({ n: 0 }));
  const awakeHeap = settledHeap();
  const awakeNow = runtime.durable.awake;
  runtime.durable.sleepAll();

  // 3. Wake latency: one message at a time to an asleep actor.
  const latencies: number[] = [];
  for (let i = 0; i < wakes; i++) {
    const key = randomKey(actors);
    const sent = process.hrtime.bigint();
    await runtime.actor('counter', key).ask({ n: 0 });
    latencies.push(Number(handlerStarted - sent) / 1e6);
    runtime.durable.sleepAll();
  }
  latencies.sort((a, b) => a - b);

  // 4. Against LangGraph.js threads on its SQLite checkpointer.
  const State = Annotation.Root({
    total: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
  });
  const saver = SqliteSaver.fromConnString(join(dir, 'langgraph.db'));
  const graph = new StateGraph(State)
    .addNode('count', () => ({ total: 1 }))
    .addEdge(START, 'count')
    .addEdge('count', LG_END)
    .compile({ checkpointer: saver });
  await pooled(lgThreads, (i) =>
    graph.invoke({ total: 0 }, { configurable: { thread_id: `k${i}` } }),
  );
  const axonRates: number[] = [];
  const lgRates: number[] = [];
  for (let r = 0; r < rounds; r++) {
    axonRates.push(
      await rate(roundMs, () => runtime.actor('counter', randomKey(actors)).ask({ n: 1 })),
    );
    lgRates.push(
      await rate(roundMs, () =>
        graph.invoke({ total: 0 }, { configurable: { thread_id: randomKey(lgThreads) } }),
      ),
    );
  }
  await runtime.close();
  rmSync(dir, { recursive: true, force: true });

  const axonPerS = median(axonRates);
  const lgPerS = median(lgRates);
  report({
    bench: 'durable-agents',
    metrics: {
      actors_addressed: actors - failed,
      address_per_s: Math.round((actors * 1000) / addressMs),
      awake_at_most: MAX_AWAKE,
      awake_after_addressing: awakeAfter,
      heap_max_mb: Math.round(heapMax),
      asleep_bytes_per_actor: Math.max(0, Math.round((asleepHeap - baseline) / actors)),
      awake_bytes_per_actor: Math.round((awakeHeap - asleepHeap) / Math.max(1, awakeNow)),
      wake_p50_ms: Number(percentile(latencies, 0.5).toFixed(3)),
      wake_p99_ms: Number(percentile(latencies, 0.99).toFixed(3)),
      messages_per_s: Math.round(axonPerS),
      langgraph_messages_per_s: Math.round(lgPerS),
      in_flight: inFlight,
    },
    ratios: { vs_langgraph_threads: Number((axonPerS / lgPerS).toFixed(2)) },
  });
}

await main();
