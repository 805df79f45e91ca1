/**
 * @module bench:fleet — no-op steps through pool placement over BullMQ against raw BullMQ
 * jobs, on the same Redis (127.0.0.1:6379), each with worker processes of the same
 * concurrency (`AXON_BENCH_CONCURRENCY`, default 16), interleaved rounds.
 *
 * axon: this process is the API (`createRuntime({ store: redisStore, fleet })`); each
 * operation submits `AXON_BENCH_IN_FLIGHT` (default 64) `gate_eval` steps that pass at once
 * (`min_count: 0`: one read of the store, no engine) to a pinned pool and waits for each one's
 * end (`done`, through the steps' streams); `axon worker` processes run them. Raw BullMQ: the
 * same number of `Queue.add` of no-op jobs and `job.waitUntilFinished` (QueueEvents), a worker
 * process of the same concurrency returning at once.
 *
 * `ratios.vs_bullmq` = steps/s with one worker process ÷ raw jobs/s with one (target ≥ 0.7);
 * `metrics.submit_to_start_p50_ms` / `_p99_ms`: one step at a time on an idle pool, from the
 * submission's call to its `started` event's time (target p50 ≤ 2 ms; the raw peer's from
 * `add` to its processor's start alongside); steps/s with 1, 2 and 4 worker processes.
 * `metrics.redis_calls_per_step` (target ≤ 4): the commands the clients send to Redis per
 * no-op step, API and worker together, counted with MONITOR (a transaction once, a script's
 * own commands not at all) over ten operations after the timed rounds;
 * `metrics.redis_commands_per_step`: every command Redis runs for it, scripts' included
 * (INFO commandstats); the raw BullMQ job's two figures beside them.
 *
 * On a Redis Cluster of three masters as well (`REDIS_CLUSTER`, `host:port,...`; else a
 * throwaway one the bench starts): an API runtime and one worker process under a hash-tagged
 * prefix, timed in the same interleaved rounds. `ratios.cluster_vs_single` = its steps/s ÷
 * the one-worker steps/s on one Redis; `metrics.redis_calls_per_step_cluster` (target ≤ 4)
 * and `metrics.redis_commands_per_step_cluster` counted on every master.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue, QueueEvents } from 'bullmq';
import { Cluster, Redis } from 'ioredis';
import { createLogger } from '../src/observability/logger.js';
import { createRuntime, type Runtime } from '../src/runtime/runtime.js';
import { redisStore } from '../src/store/redis/redis-store.js';
import type { StepEvent } from '../src/streams/events.js';
import { interleave, report } from './harness.js';
import { commandsRun, watchSent } from './redis-counts.js';

const url = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const rounds = Number(process.env['AXON_BENCH_ROUNDS'] ?? '6');
const roundMs = Number(process.env['AXON_BENCH_ROUND_MS'] ?? '2000');
const concurrency = Number(process.env['AXON_BENCH_CONCURRENCY'] ?? '16');
const inFlight = Number(process.env['AXON_BENCH_IN_FLIGHT'] ?? '64');
// Unique, and as short as a deployment's (`axon:`) give or take: key bytes are a step's cost.
const prefix = `axb:${randomUUID().slice(0, 8)}:`;
const dir = mkdtempSync(join(tmpdir(), 'axon-bench-fleet-'));
const config = join(dir, 'axon.yaml');
writeFileSync(config, `redis:\n  url: ${url}\n  prefix: "${prefix}"\n`);
// The cluster's: REDIS_CLUSTER when it serves every slot, else a throwaway one.
const clusterSetup = (await import('../test/support/redis-cluster-setup.js')).default;
const stopCluster = await clusterSetup();
const clusterNodes = process.env['REDIS_CLUSTER'] ?? '';
const clusterPrefix = `{axb:${randomUUID().slice(0, 8)}}:`;
const clusterConfig = join(dir, 'axon-cluster.yaml');
writeFileSync(
  clusterConfig,
  `redis:\n  cluster: "${clusterNodes}"\n  prefix: "${clusterPrefix}"\n`,
);
const children: ChildProcess[] = [];

/** Spawns a child and resolves once its stdout matches `ready`. */
function start(args: readonly string[], ready: RegExp): Promise<ChildProcess> {
  const env: NodeJS.ProcessEnv = { ...process.env, AXON_LOG_LEVEL: 'warn' };
  delete env['NODE_OPTIONS'];
  // `AXON_BENCH_NODE_ARGS` (for example `--cpu-prof`) goes to every child: to profile them.
  const extra = (process.env['AXON_BENCH_NODE_ARGS'] ?? '').split(' ').filter((a) => a !== '');
  const child = spawn('node', [...extra, '--import', 'tsx', ...args], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      out += chunk;
      if (ready.test(out)) resolve(child);
    });
    child.on('exit', (code) => {
      reject(new Error(`${args.join(' ')} exited with ${code ?? 'a signal'}:\n${out}`));
    });
  });
}

/** `n` replicas of `pool`, on one Redis or (`on` the cluster's config) the cluster. */
async function pool(name: string, n: number, on = config): Promise<void> {
  await Promise.all(
    Array.from({ length: n }, () =>
      start(
        [
          'src/cli/main.ts',
          'worker',
          '--pool',
          name,
          '--concurrency',
          String(concurrency),
          '--config',
          on,
        ],
        /taking steps/,
      ),
    ),
  );
}

await Promise.all([
  pool('p1', 1),
  pool('p2', 2),
  pool('p4', 4),
  pool('p1', 1, clusterConfig),
  start(
    ['bench/fleet-bullmq-worker.ts', url, `${prefix}raw`, 'noop', String(concurrency)],
    /ready/,
  ),
]);

const runtime: Runtime = createRuntime({
  store: redisStore({ url, prefix }),
  fleet: { redis: url, prefix, refreshMs: 200 },
  logger: createLogger({ level: 'silent' }),
});
await runtime.refreshPools();
const onCluster: Runtime = createRuntime({
  store: redisStore({ cluster: clusterNodes, prefix: clusterPrefix }),
  fleet: { cluster: clusterNodes, prefix: clusterPrefix, refreshMs: 200 },
  logger: createLogger({ level: 'silent' }),
});
await onCluster.refreshPools();
const flowOf = new Map<Runtime, string>();
for (const rt of [runtime, onCluster]) {
  flowOf.set(rt, (await rt.createFlow({ name: 'bench-fleet' })).flow.flow_id);
}
const gate = { type: 'gate_eval', input: { fact_type: 'none', min_count: 0 } };

/** A run pinned to `poolId`, a new one each round. */
async function pinnedRun(poolId: string, rt = runtime): Promise<string> {
  const run = await rt.createRun(flowOf.get(rt) ?? '', {
    pool_policy: { placement: { pin: poolId } },
  });
  return run.run_id;
}

/** A case submitting `inFlight` steps to `poolId` at once and waiting for their ends. */
function axonCase(poolId: string, rt = runtime, name = `axon_${poolId}`) {
  let runId = '';
  return {
    name,
    setup: async () => {
      runId = await pinnedRun(poolId, rt);
    },
    run: async () => {
      const steps = await Promise.all(
        Array.from({ length: inFlight }, () => rt.submitStep(runId, gate)),
      );
      for (const status of await Promise.all(steps.map((s) => s.done))) {
        if (status !== 'succeeded') throw new Error(`a step ended ${String(status)}`);
      }
    },
  };
}

const connection = new Redis(url, { maxRetriesPerRequest: null });
const queue = new Queue('noop', { connection, prefix: `${prefix}raw` });
const eventsConnection = connection.duplicate({ maxRetriesPerRequest: null });
const events = new QueueEvents('noop', { connection: eventsConnection, prefix: `${prefix}raw` });
await events.waitUntilReady();
// Completions by job id, as QueueEvents reports them (the jobs are removed once complete).
const waiting = new Map<string, (started: number) => void>();
events.on('completed', ({ jobId, returnvalue }) => {
  const value = (typeof returnvalue === 'string' ? JSON.parse(returnvalue) : returnvalue) as {
    started: number;
  };
  waiting.get(jobId)?.(value.started);
  waiting.delete(jobId);
});
/** Adds a no-op job; resolves when it has completed, with when it started. */
async function rawJob(): Promise<number> {
  let done: (started: number) => void = () => undefined;
  const finished = new Promise<number>((resolve) => {
    done = resolve;
  });
  const id = randomUUID();
  waiting.set(id, done);
  await queue.add('noop', {}, { jobId: id, removeOnComplete: true });
  return finished;
}
const bullmqCase = {
  name: 'bullmq',
  run: async () => {
    await Promise.all(Array.from({ length: inFlight }, rawJob));
  },
};

const clusterCase = axonCase('p1', onCluster, 'axon_cluster_p1');
const stats = await interleave(
  [axonCase('p1'), bullmqCase, axonCase('p2'), axonCase('p4'), clusterCase],
  {
    rounds,
    roundMs,
    warmupOps: 5,
  },
);
const perS = (name: string): number =>
  Math.round((stats.find((s) => s.name === name)?.median ?? 0) * inFlight);

/** p50 and p99 of `values`. */
function percentiles(values: number[]): { p50: number; p99: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number): number =>
    sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return { p50: at(0.5), p99: at(0.99) };
}

/** Submit-to-start of one step at a time on an idle pool, `n` times. */
async function axonStarts(n: number): Promise<number[]> {
  const runId = await pinnedRun('p1');
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = Date.now();
    const step = await runtime.submitStep(runId, gate);
    await step.done;
    const started = (await runtime.readStepEvents(step.step_id))[0] as StepEvent;
    out.push(started.ts - t0);
  }
  return out;
}

async function bullmqStarts(n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = Date.now();
    out.push((await rawJob()) - t0);
  }
  return out;
}

/**
 * Redis calls per operation of `op` (each one `inFlight` steps or jobs): the commands the
 * clients send and every command Redis runs (see `redis-counts.ts`).
 */
async function redisCalls(
  op: () => Promise<void>,
  ops: number,
  servers: readonly { readonly url: string; readonly client: Redis }[] = [
    { url, client: connection },
  ],
): Promise<{ calls: number; commands: number }> {
  const sent = await Promise.all(servers.map((s) => watchSent(s.url)));
  const run = async (): Promise<number> =>
    (await Promise.all(servers.map((s) => commandsRun(s.client)))).reduce((a, b) => a + b, 0);
  const before = await run();
  for (let i = 0; i < ops; i++) await op();
  const after = await run();
  const total = (await Promise.all(sent.map((s) => s.stop()))).reduce((a, s) => a + s.total, 0);
  const n = ops * inFlight;
  return {
    calls: Number((total / n).toFixed(2)),
    commands: Number(((after - before) / n).toFixed(2)),
  };
}
const countedAxon = axonCase('p1');
await countedAxon.setup();
const axonCalls = await redisCalls(countedAxon.run, 10);
const bullmqCalls = await redisCalls(bullmqCase.run, 10);
// On the cluster: every master counted (the fleet's keys share one slot, so one master works).
const cluster = new Cluster(
  clusterNodes.split(',').map((n) => ({
    host: n.slice(0, n.lastIndexOf(':')),
    port: Number(n.slice(n.lastIndexOf(':') + 1)),
  })),
);
await cluster.ping();
const masters = cluster.nodes('master').map((client) => ({
  url: `redis://${client.options.host ?? '127.0.0.1'}:${client.options.port ?? 6379}`,
  client,
}));
await clusterCase.setup();
const clusterCalls = await redisCalls(clusterCase.run, 10, masters);

await axonStarts(50);
await bullmqStarts(50);
const axonStart = percentiles(await axonStarts(300));
const rawStart = percentiles(await bullmqStarts(300));

await runtime.close();
await onCluster.close();
await events.close();
await queue.close();
for (const child of children) child.kill('SIGTERM');
await Promise.all(
  children
    .filter((c) => c.exitCode === null)
    .map((c) => new Promise((resolve) => c.on('exit', resolve))),
);
// Leave nothing behind.
let cursor = '0';
do {
  const [next, keys] = await connection.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
  if (keys.length > 0) await connection.del(...keys);
  cursor = next;
} while (cursor !== '0');
connection.disconnect();
eventsConnection.disconnect();
for (const m of masters) {
  let at = '0';
  do {
    const [next, keys] = await m.client.scan(at, 'MATCH', `${clusterPrefix}*`, 'COUNT', 1000);
    if (keys.length > 0) await m.client.del(...keys);
    at = next;
  } while (at !== '0');
}
cluster.disconnect();
await stopCluster?.();
rmSync(dir, { recursive: true, force: true });

const one = perS('axon_p1');
const raw = perS('bullmq');
report({
  bench: 'fleet',
  metrics: {
    concurrency,
    in_flight: inFlight,
    steps_per_s_1_worker: one,
    steps_per_s_2_workers: perS('axon_p2'),
    steps_per_s_4_workers: perS('axon_p4'),
    bullmq_jobs_per_s: raw,
    submit_to_start_p50_ms: axonStart.p50,
    submit_to_start_p99_ms: axonStart.p99,
    bullmq_submit_to_start_p50_ms: rawStart.p50,
    bullmq_submit_to_start_p99_ms: rawStart.p99,
    redis_calls_per_step: axonCalls.calls,
    redis_commands_per_step: axonCalls.commands,
    bullmq_redis_calls_per_job: bullmqCalls.calls,
    bullmq_redis_commands_per_job: bullmqCalls.commands,
    steps_per_s_1_worker_cluster: perS('axon_cluster_p1'),
    redis_calls_per_step_cluster: clusterCalls.calls,
    redis_commands_per_step_cluster: clusterCalls.commands,
  },
  ratios: {
    vs_bullmq: Number((one / raw).toFixed(3)),
    cluster_vs_single: Number((perS('axon_cluster_p1') / one).toFixed(3)),
  },
});
