/**
 * @module bench:worker — no-op steps through worker placement against raw piscina running the
 * same no-op function with the same pool size, in one process, interleaved.
 * `ratios.vs_piscina` = our steps/s ÷ piscina's tasks/s (target ≥ 0.7). Also one step's
 * round trip (p50 / p99, one at a time) against a raw `postMessage` ping-pong with a worker.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { defineAgent } from '../src/actors/define-agent.js';
import { createRuntime } from '../src/runtime/runtime.js';
import { createLogger } from '../src/observability/logger.js';
import { interleave, report } from './harness.js';

const threads = Number(process.env['AXON_BENCH_THREADS'] ?? availableParallelism());
/** Operations kept in flight in the throughput rounds. */
const inFlight = Number(process.env['AXON_BENCH_IN_FLIGHT'] ?? threads * 8);
const rounds = Number(process.env['AXON_BENCH_ROUNDS'] ?? '6');
const roundMs = Number(process.env['AXON_BENCH_ROUND_MS'] ?? '1500');
const samples = Number(process.env['AXON_BENCH_RTT_SAMPLES'] ?? '3000');

const behaviours = new URL('./noop-worker.mjs', import.meta.url);
const piscina = new Piscina({
  filename: behaviours.href,
  minThreads: threads,
  maxThreads: threads,
  execArgv: [],
});
const runtime = createRuntime({
  logger: createLogger({ level: 'silent' }),
  workers: { minThreads: threads, maxThreads: threads, execArgv: [] },
  agents: [
    defineAgent({ name: 'noop', placement: 'worker', module: behaviours.href, export: 'noop' }),
  ],
});

const axonStep = async (): Promise<void> => {
  const r = await runtime.invoke('noop', 'x');
  if (r.status !== 'success') throw new Error(`axon step failed: ${r.error?.message ?? r.status}`);
};
// Raw piscina as a user would call it: the no-op function, no options.
const piscinaTask = async (): Promise<void> => {
  await piscina.run(1);
};

/** Runs `op` with `inFlight` calls always pending; one harness "op" is `inFlight` of them. */
function lanes(op: () => Promise<void>): () => Promise<void> {
  return async () => {
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        await op();
      }),
    );
  };
}

const stats = await interleave(
  [
    { name: 'axon', run: lanes(axonStep) },
    { name: 'piscina', run: lanes(piscinaTask) },
  ],
  { rounds, roundMs, warmupOps: 20 },
);
const axonOps = (stats.find((s) => s.name === 'axon')?.median ?? 0) * inFlight;
const piscinaOps = (stats.find((s) => s.name === 'piscina')?.median ?? 0) * inFlight;

/** p50 and p99 of `op`'s duration in µs, one at a time. */
async function roundTrip(op: () => Promise<unknown>): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < 200; i++) await op();
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const t = performance.now();
    await op();
    times.push((performance.now() - t) * 1000);
  }
  times.sort((a, b) => a - b);
  const at = (q: number): number =>
    Number((times[Math.floor(q * (times.length - 1))] ?? 0).toFixed(1));
  return { p50: at(0.5), p99: at(0.99) };
}

const echo = new Worker(
  `const { parentPort } = require('node:worker_threads'); parentPort.on('message', (m) => parentPort.postMessage(m));`,
  { eval: true },
);
const ping = (): Promise<unknown> =>
  new Promise((resolve) => {
    echo.once('message', resolve);
    echo.postMessage(1);
  });
const step = await roundTrip(axonStep);
const raw = await roundTrip(ping);
await echo.terminate();
await piscina.destroy();
await runtime.close();

report({
  bench: 'worker',
  metrics: {
    threads,
    in_flight: inFlight,
    axon_steps_per_s: Math.round(axonOps),
    piscina_tasks_per_s: Math.round(piscinaOps),
    step_rtt_p50_us: step.p50,
    step_rtt_p99_us: step.p99,
    raw_rtt_p50_us: raw.p50,
    raw_rtt_p99_us: raw.p99,
  },
  ratios: { vs_piscina: Number((axonOps / piscinaOps).toFixed(2)) },
});
