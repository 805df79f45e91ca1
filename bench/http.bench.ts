/**
 * @module bench:http — step submissions per second through `axon serve`
 * (`POST /v1/runs/{run_id}/steps` of a `tool_call` of the `add` tool, each with a client
 * token of its own, on `createServer`) against a bare Fastify route at the same path that
 * takes the same body, claims a step record of it through the same store
 * (`store.claimStep`), waits for it to be durable (`flushed`, as the runtime does before it
 * answers) and answers `{ step_id, status }`. Both on a SQLite store (a fresh file in a
 * temp dir each round, the default durability), which is what `axon serve` runs on, and
 * both on the in-memory store, where the server's own work shows most.
 *
 * One client for all, in a child process (`http-clients.ts`): `AXON_BENCH_CONNECTIONS`
 * (16) keep-alive connections, each one request at a time to a run of its own; a harness
 * operation is a burst of `AXON_BENCH_BURST` (400) requests; interleaved rounds
 * (`AXON_BENCH_ROUNDS`, 6, of `AXON_BENCH_ROUND_MS`, 1 500), a fresh server and store each.
 * `ratios.vs_bare_fastify` = axon's submissions/s ÷ the bare route's, on SQLite (target
 * ≥ 0.5); `ratios.vs_bare_fastify_memory` the same on the in-memory store.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { addTool } from '../examples/tools/add.js';
import { createLogger } from '../src/observability/logger.js';
import { createRuntime } from '../src/runtime/runtime.js';
import { createServer } from '../src/server/create-server.js';
import { memoryStore } from '../src/store/memory/memory-store.js';
import type { StepRecord } from '../src/store/records.js';
import { flushed, type RunStore } from '../src/store/run-store.js';
import { sqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { interleave, report, type BenchCase } from './harness.js';
import { benchRun, benchStep } from './records.js';
import type { BurstCommand, BurstResult, ForgetCommand } from './http-clients.js';

const connections = Number(process.env['AXON_BENCH_CONNECTIONS'] ?? '16');
const burstSize = Number(process.env['AXON_BENCH_BURST'] ?? '400');
const rounds = Number(process.env['AXON_BENCH_ROUNDS'] ?? '6');
const roundMs = Number(process.env['AXON_BENCH_ROUND_MS'] ?? '1500');
const dir = mkdtempSync(join(tmpdir(), 'axon-bench-http-'));
let files = 0;

type StoreKind = 'sqlite' | 'memory';
const makeStore = (kind: StoreKind): RunStore =>
  kind === 'sqlite' ? sqliteStore(join(dir, `bench-${++files}.db`)) : memoryStore();

const client = fork(new URL('./http-clients.ts', import.meta.url).pathname, [], {
  execArgv: ['--import', 'tsx'],
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});

function ask(command: BurstCommand | ForgetCommand): Promise<BurstResult> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null): void => {
      reject(new Error(`the client's process exited (${String(code)})`));
    };
    client.once('exit', onExit);
    client.once('message', (result: BurstResult) => {
      client.off('exit', onExit);
      resolve(result);
    });
    client.send(command);
  });
}

/** A server under test: where it listens, the runs its connections post to, its close. */
interface Target {
  readonly url: string;
  readonly runIds: readonly string[];
  close(): Promise<void>;
}

/** `axon serve` over a runtime with the `add` tool, and a run per connection. */
async function axonTarget(kind: StoreKind): Promise<Target> {
  const runtime = createRuntime({
    store: makeStore(kind),
    tools: [addTool],
    logger: createLogger({ level: 'warn' }),
  });
  const { flow } = await runtime.createFlow({ name: 'bench-http' });
  const runIds: string[] = [];
  for (let j = 0; j < connections; j++) {
    runIds.push((await runtime.createRun(flow.flow_id, {})).run_id);
  }
  const server = await createServer(runtime, { port: 0 });
  return { url: server.url, runIds, close: () => server.close() };
}

/** A step record as a submission of `body` to `runId` claims it. */
function stepOf(
  runId: string,
  body: { type: string; client_token?: string; input: Record<string, unknown> },
): StepRecord {
  const now = new Date().toISOString();
  return benchStep(runId, {
    type: body.type as StepRecord['type'],
    name: typeof body.input['tool'] === 'string' ? body.input['tool'] : body.type,
    client_token: body.client_token ?? null,
    input: body.input,
    created_at: now,
    started_at: now,
  });
}

/** A bare Fastify app with the same route, claiming a step record through the same store. */
async function bareTarget(kind: StoreKind): Promise<Target> {
  const store = makeStore(kind);
  const runIds: string[] = [];
  for (let j = 0; j < connections; j++) {
    const run = benchRun();
    await store.createRun(run);
    runIds.push(run.run_id);
  }
  const app = Fastify({ logger: false });
  app.post('/v1/runs/:run_id/steps', async (req, reply) => {
    const { run_id } = req.params as { run_id: string };
    const body = req.body as {
      type: string;
      client_token?: string;
      input: Record<string, unknown>;
    };
    const { step, created } = await store.claimStep(stepOf(run_id, body));
    await flushed(store);
    return reply.code(created ? 201 : 200).send({ step_id: step.step_id, status: step.status });
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    url,
    runIds,
    close: async () => {
      await app.close();
      await store.close();
    },
  };
}

/** A bench case: a fresh target each round; one operation is a burst of submissions. */
function caseOf(name: string, start: () => Promise<Target>): BenchCase {
  let target: Target | null = null;
  return {
    name,
    setup: async () => {
      target = await start();
    },
    teardown: async () => {
      if (!target) return;
      await ask({ type: 'forget', url: target.url });
      await target.close();
      target = null;
    },
    run: async () => {
      if (!target) throw new Error(`${name}: no target`);
      const { statuses } = await ask({
        type: 'burst',
        url: target.url,
        runIds: target.runIds,
        requests: burstSize,
      });
      if (statuses['201'] !== burstSize) {
        throw new Error(`${name}: a burst answered ${JSON.stringify(statuses)}`);
      }
    },
  };
}

try {
  const stats = await interleave(
    [
      caseOf('axon_sqlite', () => axonTarget('sqlite')),
      caseOf('bare_sqlite', () => bareTarget('sqlite')),
      caseOf('axon_memory', () => axonTarget('memory')),
      caseOf('bare_memory', () => bareTarget('memory')),
    ],
    { rounds, roundMs, warmupOps: 3 },
  );
  const perS = (name: string): number =>
    (stats.find((s) => s.name === name)?.median ?? Number.NaN) * burstSize;
  for (const s of stats) {
    process.stdout.write(
      `  ${s.name.padEnd(12)} ${s.rounds.map((r) => Math.round(r * burstSize).toLocaleString('en-US')).join(' / ')} submissions/s\n`,
    );
  }
  report({
    bench: 'http',
    metrics: {
      connections,
      submissions_per_s_axon_sqlite: Math.round(perS('axon_sqlite')),
      submissions_per_s_bare_sqlite: Math.round(perS('bare_sqlite')),
      submissions_per_s_axon_memory: Math.round(perS('axon_memory')),
      submissions_per_s_bare_memory: Math.round(perS('bare_memory')),
    },
    ratios: {
      vs_bare_fastify: Number((perS('axon_sqlite') / perS('bare_sqlite')).toFixed(2)),
      vs_bare_fastify_memory: Number((perS('axon_memory') / perS('bare_memory')).toFixed(2)),
    },
  });
} finally {
  client.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
