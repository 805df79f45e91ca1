/**
 * @module A probe: the Redis commands one no-op fleet step costs, by command (INFO
 * commandstats before and after), with one `axon worker` of the pool. `tsx bench/probes/fleet-calls.ts`.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { createLogger } from '../../src/observability/logger.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { redisStore } from '../../src/store/redis-store.js';

const url = 'redis://127.0.0.1:6379';
const prefix = `axon-probe:${randomUUID()}:`;
const dir = mkdtempSync(join(tmpdir(), 'axon-probe-'));
const config = join(dir, 'axon.yaml');
writeFileSync(config, `redis:\n  url: ${url}\n  prefix: "${prefix}"\n`);
const child = spawn(
  'node',
  [
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
const monitor = await admin.duplicate().monitor();
const calls = new Map<string, number>();
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
  top++;
});
const before = await stats();
for (let i = 0; i < n / 64; i++) {
  const steps = await Promise.all(
    Array.from({ length: 64 }, () => runtime.submitStep(run.run_id, gate)),
  );
  await Promise.all(steps.map((s) => s.done));
}
const after = await stats();
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
await runtime.close();
child.kill('SIGTERM');
admin.disconnect();
