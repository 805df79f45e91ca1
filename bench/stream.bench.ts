/**
 * @module bench:stream — tokens per second from a worker-placed scripted engine (no delay)
 * to a consumer on the host, through the whole path: the worker's credit-based stream, the
 * step actor, the event log (the in-memory store) and the run's bounded stream.
 * `metrics.tokens_per_s` (target ≥ 200 000). Also the heap high-water mark above the start
 * while a slow consumer (a turn of the event loop every 16 tokens) reads the same stream,
 * with a store that keeps no log, so the figure is what the stream itself holds:
 * `metrics.slow_consumer_heap_mb`.
 */
import { defineAgent } from '../src/actors/define-agent.js';
import { createRuntime, type Runtime } from '../src/runtime/runtime.js';
import { createLogger } from '../src/observability/logger.js';
import { MemoryRunStore } from '../src/store/memory/memory-store.js';
import type { StepEnd } from '../src/store/run-store.js';
import type { StepEvent } from '../src/streams/events.js';
import { report } from './harness.js';

const tokens = Number(process.env['AXON_BENCH_TOKENS'] ?? '200000');
const rounds = Number(process.env['AXON_BENCH_ROUNDS'] ?? '5');

const agent = defineAgent({
  name: 'engine',
  placement: 'worker',
  module: new URL('./stream-worker.ts', import.meta.url).href,
  export: 'scriptedStream',
  timeoutMs: 600_000,
});

/** Keeps no log: the slow-consumer heap is the stream's own. */
class DiscardingStore extends MemoryRunStore {
  override appendEvents(_events: readonly StepEvent[]): Promise<void> {
    return Promise.resolve();
  }
  /** A step's end: its record, not its last events (the log is not kept). */
  override endStep(end: StepEnd): Promise<void> {
    return super.endStep({ ...end, events: [] });
  }
}

function newRuntime(store?: MemoryRunStore): Runtime {
  return createRuntime({
    logger: createLogger({ level: 'silent' }),
    agents: [agent],
    workers: { minThreads: 1, maxThreads: 1 },
    ...(store ? { store } : {}),
  });
}

async function consume(
  runtime: Runtime,
  slow: boolean,
  onToken?: (n: number) => void,
): Promise<number> {
  let n = 0;
  const stream = runtime.stream('engine', { message: 'go', args: { n: tokens } });
  for await (const { event } of stream) {
    if (event.type !== 'token') continue;
    n++;
    onToken?.(n);
    if (slow && n % 16 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  const result = await stream.result;
  if (result.status !== 'success' || n !== tokens) {
    throw new Error(`stream failed: ${result.error?.message ?? result.status}, ${n} tokens`);
  }
  return n;
}

// Throughput: a fresh runtime (and log) per round; the median round.
const rates: number[] = [];
for (let r = 0; r < rounds; r++) {
  const runtime = newRuntime();
  await consume(runtime, false); // the thread and its modules warm
  const t = performance.now();
  const n = await consume(runtime, false);
  rates.push(n / ((performance.now() - t) / 1000));
  await runtime.close();
}
rates.sort((a, b) => a - b);
const tokensPerS = rates[Math.floor(rates.length / 2)] ?? 0;

// Slow consumer: the heap's high-water mark above where it started.
const gc = (globalThis as { gc?: () => void }).gc;
const slowRuntime = newRuntime(new DiscardingStore());
await consume(slowRuntime, false);
gc?.();
const baseline = process.memoryUsage().heapUsed;
let peak = baseline;
await consume(slowRuntime, true, (n) => {
  if (n % 5_000 === 0) peak = Math.max(peak, process.memoryUsage().heapUsed);
});
await slowRuntime.close();

report({
  bench: 'stream',
  metrics: {
    tokens_per_stream: tokens,
    tokens_per_s: Math.round(tokensPerS),
    slow_consumer_heap_mb: Number(((peak - baseline) / (1024 * 1024)).toFixed(1)),
  },
  ratios: {},
});
