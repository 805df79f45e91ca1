/**
 * @module A diagnostic, not a benchmark: the bytes an inline two-step run allocates, and
 * where, from V8's sampling heap profiler (objects later collected included). Allocation
 * is what drives an inline run's garbage-collection time, and unlike time it is stable
 * from one measurement to the next.
 *
 * With `--expose-gc` it also reports the bytes the in-memory store keeps per finished run
 * (heap with N runs kept, less heap once they are released, ÷ N).
 *
 *   node --expose-gc --import tsx bench/inline-alloc.ts
 */
import { Session } from 'node:inspector/promises';
import { defineAgent } from '../src/actors/define-agent.js';
import { createRuntime, type Runtime } from '../src/runtime/runtime.js';
import { createLogger } from '../src/observability/logger.js';
import { memoryStore } from '../src/store/memory/memory-store.js';

interface SamplingNode {
  readonly callFrame: { readonly functionName: string; readonly url: string };
  readonly selfSize: number;
  readonly children: readonly SamplingNode[];
}

const b = defineAgent({ name: 'b', handler: () => 'b' });
const a = defineAgent({
  name: 'a',
  handler: async (input, ctx, runtime) => (await runtime.delegate('b', input, ctx)).output,
});
const runtime = createRuntime({
  agents: [a, b],
  store: memoryStore(),
  logger: createLogger({ level: 'silent' }),
});
const runs = Number(process.env['AXON_BENCH_RUNS'] ?? '5000');
const invoke = async (): Promise<void> => {
  const r = await runtime.invoke('a', 'x');
  if (r.status !== 'success') throw new Error(`run failed: ${r.error?.message ?? r.status}`);
};

// Kept bytes first: the profiler session below keeps data of its own.
const gc = (globalThis as { gc?: () => void }).gc;
if (gc) {
  let keeping: Runtime | null = createRuntime({
    agents: [a, b],
    store: memoryStore({ maxRuns: runs }),
    logger: createLogger({ level: 'silent' }),
  });
  for (let i = 0; i < runs; i++) await keeping.invoke('a', 'x');
  keeping.agentStats('a'); // deliver batched statistics, so only the store's data differs
  keeping.agentStats('b');
  gc();
  gc();
  const kept = process.memoryUsage().heapUsed;
  await keeping.close();
  keeping = null;
  gc();
  gc();
  const released = process.memoryUsage().heapUsed;
  process.stdout.write(`bytes kept per finished run: ${Math.round((kept - released) / runs)}\n`);
}

for (let i = 0; i < runs; i++) await invoke(); // warm up
const session = new Session();
session.connect();
await session.post('HeapProfiler.startSampling', {
  samplingInterval: 256,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
});
for (let i = 0; i < runs; i++) await invoke();
const { profile } = (await session.post('HeapProfiler.stopSampling')) as {
  profile: { head: SamplingNode };
};
session.disconnect();

const bySite = new Map<string, number>();
let total = 0;
const walk = (node: SamplingNode): void => {
  const file = node.callFrame.url.split('/').slice(-2).join('/');
  const site = `${node.callFrame.functionName || '(anonymous)'} ${file}`;
  bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
  total += node.selfSize;
  for (const child of node.children) walk(child);
};
walk(profile.head);
process.stdout.write(`bytes allocated per run: ${Math.round(total / runs)}\n`);
for (const [site, bytes] of [...bySite].sort((x, y) => y[1] - x[1]).slice(0, 20)) {
  process.stdout.write(`  ${String(Math.round(bytes / runs)).padStart(6)}  ${site}\n`);
}
await runtime.close();
