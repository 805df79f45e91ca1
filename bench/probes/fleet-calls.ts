/**
 * @module A probe of where a fleet step's Redis traffic goes: one `axon worker` (concurrency
 * 16) and this process as the API on the Redis store, `N` no-op `gate_eval` steps (default
 * 640) submitted 64 at a time. Prints, per step: the commands the clients send by command
 * (MONITOR; a script's own commands left out, a MULTI … EXEC once), the bytes of their
 * arguments, every command Redis runs (INFO commandstats, scripts' included), and steps/s
 * with the CPU share of Redis, this process and the worker.
 *
 * `NOMON=1` leaves MONITOR off (it slows Redis: take figures of speed with it off);
 * `WORKER_ARGS` goes to the worker's `node` (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
 * Run: `npx tsx bench/probes/fleet-calls.ts`.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { createLogger } from '../../src/observability/logger.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { redisStore } from '../../src/store/redis/redis-store.js';
import { commandsRun, watchSent } from '../redis-counts.js';
import { clearRedisPrefix } from '../../test/support/redis.js';

const url = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const n = Number(process.env['N'] ?? '640');
const prefix = `axp:${randomUUID().slice(0, 8)}:`;
const dir = mkdtempSync(join(tmpdir(), 'axon-probe-'));
const config = join(dir, 'axon.yaml');
writeFileSync(config, `redis:\n  url: ${url}\n  prefix: "${prefix}"\n`);
const workerArgs = (process.env['WORKER_ARGS'] ?? '').split(' ').filter((a) => a !== '');
const child = spawn(
  'node',
  [
    ...workerArgs,
    '--import',
    'tsx',
    'src/cli/main.ts',
    'worker',
    '--pool',
    'p',
    '--concurrency',
    '16',
    '--config',
    config,
  ],
  { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, AXON_LOG_LEVEL: 'warn' } },
);
const workerPid = child.pid ?? 0;
await new Promise<void>((resolve) => {
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    if (/taking steps/.test(out)) resolve();
  });
});

const runtime = createRuntime({
  store: redisStore({ url, prefix }),
  fleet: { redis: url, prefix, refreshMs: 200 },
  logger: createLogger({ level: 'silent' }),
});
await runtime.refreshPools();
const { flow } = await runtime.createFlow({ name: 'probe' });
const run = await runtime.createRun(flow.flow_id, { pool_policy: { placement: { pin: 'p' } } });
const gate = { type: 'gate_eval', input: { fact_type: 'none', min_count: 0 } };
const admin = new Redis(url);

/** Redis's CPU seconds so far. */
async function redisCpu(): Promise<number> {
  const info = await admin.info('cpu');
  const field = (name: string): number =>
    Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  return field('used_cpu_user') + field('used_cpu_sys');
}

/** A process's CPU seconds so far (`/proc`). */
function processCpu(pid: number): number {
  const fields = (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1] ?? '').split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** `count` steps, 64 at a time. */
async function steps(count: number): Promise<void> {
  for (let i = 0; i < count / 64; i++) {
    const submitted = await Promise.all(
      Array.from({ length: 64 }, () => runtime.submitStep(run.run_id, gate)),
    );
    await Promise.all(submitted.map((s) => s.done));
  }
}

await steps(64);
const sent = process.env['NOMON'] ? null : await watchSent(url);
const workerCpu0 = processCpu(workerPid);
const apiCpu0 = process.cpuUsage();
const redisCpu0 = await redisCpu();
const before = await commandsRun(admin);
const t0 = performance.now();
await steps(n);
const wall = (performance.now() - t0) / 1000;
const after = await commandsRun(admin);
const apiCpu = process.cpuUsage(apiCpu0);
const share = (seconds: number): string => (seconds / wall).toFixed(2);
console.log(
  `steps/s ${(n / wall).toFixed(0)}; CPU share: redis ${share((await redisCpu()) - redisCpu0)}, api ${share((apiCpu.user + apiCpu.system) / 1e6)}, worker ${share(processCpu(workerPid) - workerCpu0)}`,
);
console.log(
  `commands Redis ran per step (scripts' included): ${((after - before) / n).toFixed(2)}`,
);
if (sent) {
  const { total, byCommand, byScript } = await sent.stop();
  console.log(`commands sent per step: ${(total / n).toFixed(2)}`);
  for (const [name, { count, chars }] of [...byCommand].sort((a, b) => b[1].count - a[1].count)) {
    const perStep = (count / n).toFixed(2);
    console.log(
      `  ${name.padEnd(16)} ${perStep.padStart(6)} a step, ${(chars / n).toFixed(0)} bytes`,
    );
  }
  console.log('scripts per step: calls, and the commands they ran');
  for (const [name, { calls, commands }] of [...byScript].sort(
    (a, b) => b[1].commands - a[1].commands,
  )) {
    console.log(
      `  ${(calls / n).toFixed(2).padStart(6)} calls ${(commands / n).toFixed(2).padStart(6)} commands  ${name}`,
    );
  }
}
await runtime.close();
const exited = new Promise((resolve) => child.on('exit', resolve));
child.kill('SIGTERM');
await exited;
// Leave nothing behind (a run of 6 400 steps writes about 40 000 keys).
await clearRedisPrefix(prefix, url);
admin.disconnect();
rmSync(dir, { recursive: true, force: true });
