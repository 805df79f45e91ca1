/**
 * @module A probe: the Redis commands one no-op fleet step costs, by command (INFO
 * commandstats before and after), with one `axon worker` of the pool. `tsx bench/probes/fleet-calls.ts`.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { createLogger } from '../../src/observability/logger.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { redisStore } from '../../src/store/redis-store.js';

const url = 'redis://127.0.0.1:6379';
const prefix = `axp:${randomUUID().slice(0, 8)}:`;
const dir = mkdtempSync(join(tmpdir(), 'axon-probe-'));
const config = join(dir, 'axon.yaml');
writeFileSync(config, `redis:\n  url: ${url}\n  prefix: "${prefix}"\n`);
const child = spawn(
  'node',
  [
    ...(process.env['WORKER_ARGS'] ?? '').split(' ').filter((a) => a !== ''),
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
await new Promise<void>((resolve) => {
  let out = '';
  child.stdout.on('data', (c: Buffer) => {
    out += c.toString();
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
async function stats(): Promise<Map<string, number>> {
  const text = await admin.info('commandstats');
  const m = new Map<string, number>();
  for (const line of text.split('\n')) {
    const r = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (r) m.set(r[1] as string, Number(r[2]));
  }
  return m;
}
const n = Number(process.env['N'] ?? '640');
for (let i = 0; i < 64; i++) await (await runtime.submitStep(run.run_id, gate)).done;
const monitor = process.env['NOMON'] ? admin.duplicate() : await admin.duplicate().monitor();
const calls = new Map<string, number>();
const bytes = new Map<string, number>();
const inMulti = new Set<string>();
let top = 0;
monitor.on('monitor', (_time: string, args: string[], source: string) => {
  if (source === 'lua') return;
  const cmd = (args[0] ?? '').toLowerCase();
  if (inMulti.has(source)) {
    if (cmd === 'exec' || cmd === 'discard') inMulti.delete(source);
    return;
  }
  if (cmd === 'multi') inMulti.add(source);
  const name =
    cmd === 'evalsha' || cmd === 'eval'
      ? `${cmd}:${args.length > 3 ? (args[2] === '0' ? '' : args[3]?.slice(-24)) : ''}`
      : cmd;
  calls.set(name, (calls.get(name) ?? 0) + 1);
  bytes.set(
    name.slice(0, 20),
    (bytes.get(name.slice(0, 20)) ?? 0) + args.reduce((n, x) => n + x.length, 0),
  );
  top++;
});
const cpu = async (): Promise<number> => {
  const t = await admin.info('cpu');
  return (
    Number(/used_cpu_user:([\d.]+)/.exec(t)?.[1]) + Number(/used_cpu_sys:([\d.]+)/.exec(t)?.[1])
  );
};
const procCpu = (pid: number): number => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
};
const w0 = procCpu(child.pid!);
const a0 = process.cpuUsage();
const cpu0 = await cpu();
const t0 = performance.now();
const before = await stats();
for (let i = 0; i < n / 64; i++) {
  const steps = await Promise.all(
    Array.from({ length: 64 }, () => runtime.submitStep(run.run_id, gate)),
  );
  await Promise.all(steps.map((s) => s.done));
}
const after = await stats();
const wall = (performance.now() - t0) / 1000;
const a1 = process.cpuUsage(a0);
console.log(
  'steps/s',
  (n / wall).toFixed(0),
  'redis cpu share',
  ((await cpu()) - cpu0) / wall,
  'api',
  (a1.user + a1.system) / 1e6 / wall,
  'worker',
  (procCpu(child.pid!) - w0) / wall,
);
const rows: [string, number][] = [];
let total = 0;
for (const [k, v] of after) {
  const d = v - (before.get(k) ?? 0);
  if (d > 0 && k !== 'info') {
    rows.push([k, d / n]);
    total += d;
  }
}
rows.sort((a, b) => b[1] - a[1]);
for (const [k, v] of rows) console.log(k.padEnd(20), v.toFixed(2));
console.log('total per step', (total / n).toFixed(2));
await new Promise((r) => setTimeout(r, 500));
monitor.disconnect();
const crow = [...calls].sort((a, b) => b[1] - a[1]);
for (const [k, v] of crow) console.log('call', k.padEnd(50), (v / n).toFixed(2));
console.log('calls per step', (top / n).toFixed(2));
for (const [k, v] of bytes) console.log('bytes per step', k, (v / n).toFixed(0));
await runtime.close();
const exited = new Promise((resolve) => child.on('exit', resolve));
child.kill('SIGTERM');
await exited;
admin.disconnect();
