/**
 * A probe beside bench:http, not a benchmark: `axon serve` alone (SQLite store, or memory
 * with `AXON_PROBE_STORE=memory`) taking bursts of step submissions from bench:http's
 * client for `AXON_PROBE_MS` (8 000), then the submissions/s. Run it under
 * `node --cpu-prof --import tsx bench/probes/http-axon-profile.ts` to see where a
 * submission's time goes without the bare route's samples mixed in.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { addTool } from '../../examples/tools/add.js';
import { createLogger } from '../../src/observability/logger.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { createServer } from '../../src/server/create-server.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import { sqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { BurstCommand, BurstResult } from '../http-clients.js';

const ms = Number(process.env['AXON_PROBE_MS'] ?? '8000');
const dir = mkdtempSync(join(tmpdir(), 'axon-probe-http-'));
const runtime = createRuntime({
  store:
    process.env['AXON_PROBE_STORE'] === 'memory' ? memoryStore() : sqliteStore(join(dir, 'p.db')),
  tools: [addTool],
  logger: createLogger({ level: 'warn' }),
});
const { flow } = await runtime.createFlow({ name: 'probe-http' });
const runIds: string[] = [];
for (let j = 0; j < 16; j++) runIds.push((await runtime.createRun(flow.flow_id, {})).run_id);
const server = await createServer(runtime, { port: 0 });
const client = fork(new URL('../http-clients.ts', import.meta.url).pathname, [], {
  execArgv: ['--import', 'tsx'],
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
const burst = (): Promise<BurstResult> =>
  new Promise((resolve) => {
    client.once('message', resolve);
    client.send({ type: 'burst', url: server.url, runIds, requests: 400 } satisfies BurstCommand);
  });
const t0 = performance.now();
let done = 0;
while (performance.now() - t0 < ms) {
  await burst();
  done += 400;
}
process.stdout.write(`${Math.round((done / (performance.now() - t0)) * 1000)} submissions/s\n`);
client.kill('SIGTERM');
await server.close();
rmSync(dir, { recursive: true, force: true });
