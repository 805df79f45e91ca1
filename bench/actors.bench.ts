/**
 * @module bench:actors — heap per idle agent actor and how many stay alive in one process.
 * Run with `--expose-gc` (the npm script does). Targets: `metrics.heap_bytes_per_actor` ≤
 * 10240, `metrics.actors_alive` ≥ 100000.
 */
import { createRuntime } from '../src/runtime/runtime.js';
import { createLogger } from '../src/observability/logger.js';
import { report } from './harness.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  process.stderr.write('bench:actors needs node --expose-gc (use `npm run bench:actors`)\n');
  process.exit(1);
}
const collect = (): number => {
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
};

const count = Number(process.env['AXON_BENCH_ACTORS'] ?? '100000');
const runtime = createRuntime({ logger: createLogger({ level: 'silent' }) });
// Warm up code paths so the measured delta is actors, not compiled code.
for (let i = 0; i < 1000; i++) runtime.spawnAgent('warm', `warm-${i}`).stop();
for (let i = 0; i < 1000; i++) runtime.system.unregister(`warm-${i}`);

const before = collect();
const started = performance.now();
for (let i = 0; i < count; i++) runtime.spawnAgent('idle', `idle-${i}`);
const spawnMs = performance.now() - started;
const after = collect();
const alive = runtime.system
  .list('agent')
  .filter(
    (e) => e.name === 'idle' && (e.ref.getSnapshot() as { status: string }).status === 'active',
  );
report({
  bench: 'actors',
  metrics: {
    actors_spawned: count,
    actors_alive: alive.length,
    heap_bytes_per_actor: Math.round((after - before) / count),
    spawn_us_per_actor: Number(((spawnMs * 1000) / count).toFixed(2)),
    heap_used_mb: Math.round(after / 2 ** 20),
  },
  ratios: {},
});
await runtime.close();
