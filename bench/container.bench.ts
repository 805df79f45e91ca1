/**
 * @module bench:container — a no-op step in a container against the same step placed as a
 * `process` (a child process per invocation: the subprocess agent of seed 001) and against a
 * bare `podman run -i` round trip, cold and warm, one step at a time.
 *
 * - warm: container placement with `reuse` (the default): the step goes to the agent's
 *   started container. `ratios.warm_vs_process` = its steps/s ÷ the process placement's
 *   (target ≥ 0.5), in interleaved rounds.
 * - cold: `reuse: false`, no warm containers: every step starts its container
 *   (`metrics.cold_start_ms`, the median step), against `podman run -i` of the same image
 *   answering one line (`metrics.bare_cold_ms`).
 * - prestarted: `reuse: false` with `warm: 1`: a step takes a container started before it
 *   and leaves it removed (`metrics.prestarted_step_ms`, steps spaced so one is ready).
 * - `metrics.bare_warm_rtt_us`: one line through a started `podman run -i` container and back.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { defineAgent } from '../src/actors/define-agent.js';
import { createSubprocessAgent } from '../src/adapters/subprocess-agent.js';
import { createLogger } from '../src/observability/logger.js';
import { buildContainerImage } from '../src/placement/container/container-image.js';
import { createRuntime, type Runtime } from '../src/runtime/runtime.js';
import { interleave, report } from './harness.js';

const image = process.env['AXON_BENCH_IMAGE'] ?? 'localhost/axon-node:bench';
const rounds = Number(process.env['AXON_BENCH_ROUNDS'] ?? '5');
const roundMs = Number(process.env['AXON_BENCH_ROUND_MS'] ?? '1500');
const coldSamples = Number(process.env['AXON_BENCH_COLD_SAMPLES'] ?? '7');

const built = await buildContainerImage({ tag: image });
const behaviours = new URL('./noop-container.mjs', import.meta.url);
const quiet = createLogger({ level: 'silent' });
const boxed = defineAgent({
  name: 'noop',
  placement: 'container',
  module: behaviours.href,
  export: 'noop',
});

const warmRuntime = createRuntime({ logger: quiet, container: { image }, agents: [boxed] });
const processRuntime = createRuntime({
  logger: quiet,
  agents: [
    defineAgent({
      name: 'noop',
      placement: 'process',
      behaviour: createSubprocessAgent({
        command: process.execPath,
        args: [behaviours.pathname, '--subprocess'],
      }),
    }),
  ],
});

async function step(rt: Runtime): Promise<void> {
  const r = await rt.invoke('noop', 'x');
  if (r.status !== 'success') throw new Error(`step failed: ${r.error?.message ?? r.status}`);
}

/** Median of `n` timings of `op`, in ms. */
async function medianMs(n: number, op: () => Promise<unknown>, gapMs = 0): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
    const t = performance.now();
    await op();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return Number((times[Math.floor(times.length / 2)] ?? 0).toFixed(1));
}

const stats = await interleave(
  [
    { name: 'container_warm', run: () => step(warmRuntime) },
    { name: 'process', run: () => step(processRuntime) },
  ],
  { rounds, roundMs, warmupOps: 5 },
);
const warmOps = stats.find((s) => s.name === 'container_warm')?.median ?? 0;
const processOps = stats.find((s) => s.name === 'process')?.median ?? 0;
await warmRuntime.close();
await processRuntime.close();

const coldRuntime = createRuntime({
  logger: quiet,
  container: { image, reuse: false },
  agents: [boxed],
});
const coldMs = await medianMs(coldSamples, () => step(coldRuntime));
await coldRuntime.close();

const prestartedRuntime = createRuntime({
  logger: quiet,
  container: { image, reuse: false, warm: 1 },
  agents: [boxed],
});
// Spaced so the next container is started before each step.
const prestartedMs = await medianMs(coldSamples, () => step(prestartedRuntime), 1_500);
await prestartedRuntime.close();

const echo = "process.stdin.on('data', (d) => process.stdout.write(d))";
const bareFlags = ['run', '--rm', '-i', '--network=none', '--pull=never', image, 'node', '-e'];
const bareColdMs = await medianMs(
  coldSamples,
  () =>
    new Promise<void>((resolve, reject) => {
      const child = spawn('podman', [...bareFlags, echo], { stdio: ['pipe', 'pipe', 'inherit'] });
      child.stdout.once('data', () => {
        child.stdin.end();
      });
      child.once('error', reject);
      child.once('close', () => {
        resolve();
      });
      child.stdin.write('1\n');
    }),
);
const bare = spawn('podman', [...bareFlags, echo], { stdio: ['pipe', 'pipe', 'inherit'] });
const lines = createInterface({ input: bare.stdout });
const next = (): Promise<void> =>
  new Promise((resolve) => {
    lines.once('line', () => {
      resolve();
    });
    bare.stdin.write('1\n');
  });
await next();
const t = performance.now();
const pings = 500;
for (let i = 0; i < pings; i++) await next();
const bareWarmUs = Number((((performance.now() - t) / pings) * 1000).toFixed(1));
bare.stdin.end();
await new Promise((r) => bare.once('close', r));

report({
  bench: 'container',
  metrics: {
    engine: built.engine === 'podman' ? 1 : 2,
    container_warm_steps_per_s: Math.round(warmOps),
    process_steps_per_s: Math.round(processOps),
    cold_start_ms: coldMs,
    prestarted_step_ms: prestartedMs,
    bare_cold_ms: bareColdMs,
    bare_warm_rtt_us: bareWarmUs,
  },
  ratios: {
    warm_vs_process: Number((warmOps / processOps).toFixed(2)),
    cold_vs_bare: Number((bareColdMs / coldMs).toFixed(2)),
  },
});
