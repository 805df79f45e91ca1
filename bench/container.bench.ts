/**
 * @module bench:container — container placement against its floors, in one run, one no-op
 * step at a time (the handler `noop` of `noop-container.mjs`, returning 1).
 *
 * - warm (`ratios.warm_vs_pipe`, target ≤ 1.3): a step through container placement with the
 *   agent's started container (`reuse`, the default), against the same step over a pipe to a
 *   plain child process (`pipe-peer.ts`): the same runtime runs an inline agent whose handler
 *   sends container placement's `step` message (its context's wire form, the same module
 *   and export) through the same `LineLink` to the container's own runner file, run by
 *   `node` with no container, and returns the `result` line's output. Same program,
 *   messages and handler, and the same step bookkeeping on the host; what differs is the
 *   container and container placement's own host side. Interleaved rounds; the ratio is
 *   the container's time per step ÷ the pipe's (`metrics.container_warm_us`,
 *   `metrics.pipe_us`).
 * - cold (`ratios.cold_vs_podman_run`, target ≤ 1.2): `reuse: false` and no warm
 *   containers, so each step starts its container (`metrics.cold_start_ms`, the median
 *   step, timed to its result as the caller gets it), against the engine's floor: `podman
 *   run --rm --network=none <the same image> node -e ''` doing nothing, timed to the
 *   client's exit, the container removed (`metrics.podman_run_ms`). `--network=none` is what
 *   container placement runs with: without it podman sets a network up (~150 ms more here),
 *   which would flatter the step. Samples alternate, each after a pause in which the
 *   previous one's container goes (a step's container is removed after its result, by the
 *   engine; the floor's before its client exits), each first in every other pair.
 * - prestarted: `reuse: false` with `warm: 1`: a step takes a container started before it
 *   and leaves it removed (`metrics.prestarted_step_ms`, steps spaced so one is ready).
 *
 * Knobs: `AXON_BENCH_ROUNDS` (5) and `AXON_BENCH_ROUND_MS` (1500) for warm,
 * `AXON_BENCH_COLD_SAMPLES` (15) for cold and prestarted, `AXON_BENCH_IMAGE`.
 */
import { spawn } from 'node:child_process';
import { defineAgent } from '../src/actors/define-agent.js';
import { createLogger } from '../src/observability/logger.js';
import { containerProgram } from '../src/placement/container/container-bundle.js';
import { buildContainerImage } from '../src/placement/container/container-image.js';
import { createRuntime, type Runtime } from '../src/runtime/runtime.js';
import { interleave, report } from './harness.js';
import { startPipePeer } from './pipe-peer.js';

const image = process.env['AXON_BENCH_IMAGE'] ?? 'localhost/axon-node:bench';
const rounds = Number(process.env['AXON_BENCH_ROUNDS'] ?? '5');
const roundMs = Number(process.env['AXON_BENCH_ROUND_MS'] ?? '1500');
const coldSamples = Number(process.env['AXON_BENCH_COLD_SAMPLES'] ?? '15');
/** Long enough for a step's container, or the floor's, to be gone before the next sample. */
const COLD_GAP_MS = 1_500;

const built = await buildContainerImage({ tag: image });
if (built.engine !== 'podman') {
  throw new Error(`bench:container measures against podman's floor; the engine is ${built.engine}`);
}
const behaviours = new URL('./noop-container.mjs', import.meta.url);
const quiet = createLogger({ level: 'silent' });
const boxed = defineAgent({
  name: 'noop',
  placement: 'container',
  module: behaviours.href,
  export: 'noop',
});

const peer = startPipePeer((await containerProgram()).runner, {
  agent: 'noop',
  module: behaviours.pathname,
  export: 'noop',
});
const warmRuntime = createRuntime({ logger: quiet, container: { image }, agents: [boxed] });
const pipeRuntime = createRuntime({
  logger: quiet,
  agents: [defineAgent({ name: 'noop', handler: (input, ctx) => peer.step(input, ctx) })],
});

async function step(rt: Runtime): Promise<void> {
  const r = await rt.invoke('noop', 'x');
  if (r.status !== 'success' || r.output !== 1) {
    throw new Error(`step failed: ${r.error?.message ?? JSON.stringify(r.output)}`);
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return Number((sorted[Math.floor(sorted.length / 2)] ?? 0).toFixed(1));
}

async function timed(op: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await op();
  return performance.now() - t;
}

const stats = await interleave(
  [
    { name: 'container_warm', run: () => step(warmRuntime) },
    { name: 'pipe', run: () => step(pipeRuntime) },
  ],
  { rounds, roundMs, warmupOps: 50 },
);
const warmOps = stats.find((s) => s.name === 'container_warm')?.median ?? 0;
const pipeOps = stats.find((s) => s.name === 'pipe')?.median ?? 0;
await warmRuntime.close();
await pipeRuntime.close();
await peer.close();

const coldRuntime = createRuntime({
  logger: quiet,
  container: { image, reuse: false },
  agents: [boxed],
});
const podmanRun = (): Promise<void> =>
  new Promise((resolve, reject) => {
    const child = spawn('podman', ['run', '--rm', '--network=none', image, 'node', '-e', ''], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    child.once('error', reject);
    child.once('close', (code) => {
      if (code === 0) resolve();
      else reject(new Error(`podman run exited ${String(code)}`));
    });
  });
// Untimed: the engine found, the program bundled, the image's layers read once for each.
await step(coldRuntime);
await podmanRun();
const coldTimes: number[] = [];
const floorTimes: number[] = [];
for (let i = 0; i < coldSamples; i++) {
  // Each goes first in every other pair.
  const pair = [
    async () => coldTimes.push(await timed(() => step(coldRuntime))),
    async () => floorTimes.push(await timed(podmanRun)),
  ];
  for (const sample of i % 2 === 0 ? pair : pair.reverse()) {
    await sleep(COLD_GAP_MS);
    await sample();
  }
}
await coldRuntime.close();
const coldMs = median(coldTimes);
const floorMs = median(floorTimes);

const prestartedRuntime = createRuntime({
  logger: quiet,
  container: { image, reuse: false, warm: 1 },
  agents: [boxed],
});
const prestartedTimes: number[] = [];
for (let i = 0; i < coldSamples; i++) {
  // Spaced so the next container is started before each step.
  await sleep(COLD_GAP_MS);
  prestartedTimes.push(await timed(() => step(prestartedRuntime)));
}
await prestartedRuntime.close();

report({
  bench: 'container',
  metrics: {
    container_warm_steps_per_s: Math.round(warmOps),
    container_warm_us: Number((1e6 / warmOps).toFixed(1)),
    pipe_steps_per_s: Math.round(pipeOps),
    pipe_us: Number((1e6 / pipeOps).toFixed(1)),
    cold_start_ms: coldMs,
    podman_run_ms: floorMs,
    prestarted_step_ms: median(prestartedTimes),
  },
  ratios: {
    warm_vs_pipe: Number((pipeOps / warmOps).toFixed(2)),
    cold_vs_podman_run: Number((coldMs / floorMs).toFixed(2)),
  },
});
