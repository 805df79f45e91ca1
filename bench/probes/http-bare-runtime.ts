/**
 * A probe beside bench:http, not a benchmark: a bare Fastify route at bench:http's path
 * that does nothing but `runtime.submitStep` (none of `axon serve`'s hooks, body bounds or
 * route checks) and answers `{ step_id, status }`, taking bench:http's client's bursts for
 * `AXON_PROBE_MS` (6 000); then `axon serve` itself on a runtime of its own, the same way.
 * What is left between the two is `axon serve`'s own plumbing; what is left between the
 * first and the bare route of bench:http is the runtime's step. `AXON_PROBE_STORE=sqlite`
 * for SQLite files (default: memory). Run with `npx tsx bench/probes/http-bare-runtime.ts`.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { addTool } from '../../examples/tools/add.js';
import { createLogger } from '../../src/observability/logger.js';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.js';
import { createServer } from '../../src/server/create-server.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import { sqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { BurstCommand, BurstResult } from '../http-clients.js';

const kind = process.env['AXON_PROBE_STORE'] === 'sqlite' ? 'sqlite' : 'memory';
const ms = Number(process.env['AXON_PROBE_MS'] ?? '6000');
const dir = mkdtempSync(join(tmpdir(), 'axon-probe-bare-'));
let files = 0;
const client = fork(new URL('../http-clients.ts', import.meta.url).pathname, [], {
  execArgv: ['--import', 'tsx'],
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});

/** A runtime with the `add` tool and a run per connection (16). */
async function runtimeWithRuns(): Promise<{ runtime: Runtime; runIds: string[] }> {
  const runtime = createRuntime({
    store: kind === 'sqlite' ? sqliteStore(join(dir, `p-${++files}.db`)) : memoryStore(),
    tools: [addTool],
    logger: createLogger({ level: 'warn' }),
  });
  const { flow } = await runtime.createFlow({ name: 'probe-bare' });
  const runIds: string[] = [];
  for (let j = 0; j < 16; j++) runIds.push((await runtime.createRun(flow.flow_id, {})).run_id);
  return { runtime, runIds };
}

/** Submissions/s of bursts of 400 to `url` for `ms`. */
async function bursts(url: string, runIds: string[]): Promise<number> {
  const burst = (): Promise<BurstResult> =>
    new Promise((resolve) => {
      client.once('message', resolve);
      client.send({ type: 'burst', url, runIds, requests: 400 } satisfies BurstCommand);
    });
  const t0 = performance.now();
  let done = 0;
  while (performance.now() - t0 < ms) {
    const { statuses } = await burst();
    if (statuses['201'] !== 400) throw new Error(`a burst answered ${JSON.stringify(statuses)}`);
    done += 400;
  }
  return Math.round((done / (performance.now() - t0)) * 1000);
}

const bare = await runtimeWithRuns();
const app = Fastify({ logger: false });
app.post('/v1/runs/:run_id/steps', async (req, reply) => {
  const { run_id } = req.params as { run_id: string };
  const submitted = await bare.runtime.submitStep(run_id, req.body);
  return reply
    .code(submitted.created ? 201 : 200)
    .send({ step_id: submitted.step_id, status: submitted.status });
});
const bareUrl = await app.listen({ host: '127.0.0.1', port: 0 });
const barePerS = await bursts(bareUrl, bare.runIds);
await app.close();
await bare.runtime.close();

const served = await runtimeWithRuns();
const server = await createServer(served.runtime, { port: 0 });
const servedPerS = await bursts(server.url, served.runIds);
await server.close();

process.stdout.write(
  `${kind}: bare Fastify + runtime.submitStep ${barePerS} submissions/s; axon serve ${servedPerS}\n`,
);
client.kill('SIGTERM');
rmSync(dir, { recursive: true, force: true });
