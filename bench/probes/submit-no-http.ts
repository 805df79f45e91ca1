/**
 * A probe beside bench:http, not a benchmark: the same submissions (`tool_call` of `add`, a
 * client token each, 16 runs, one step in flight on each) made by `runtime.submitStep`
 * directly, with no HTTP, each awaited to its end (`done`) — what the runtime's part of a
 * submission costs, to set against bench:http's figures (the rest is the server's).
 * `AXON_PROBE_STORE=sqlite` for a SQLite file (bound by its commits' latency then: each
 * submission waits for its claim's commit and its end's), `AXON_PROBE_MS` (3 000) a round,
 * three rounds. Run with `npx tsx bench/probes/submit-no-http.ts`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { addTool } from '../../examples/tools/add.js';
import { createLogger } from '../../src/observability/logger.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import { sqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const kind = process.env['AXON_PROBE_STORE'] === 'sqlite' ? 'sqlite' : 'memory';
const ms = Number(process.env['AXON_PROBE_MS'] ?? '3000');
const dir = mkdtempSync(join(tmpdir(), 'axon-probe-submit-'));
let token = 0;
for (let round = 1; round <= 3; round++) {
  const runtime = createRuntime({
    store: kind === 'sqlite' ? sqliteStore(join(dir, `p-${round}.db`)) : memoryStore(),
    tools: [addTool],
    logger: createLogger({ level: 'warn' }),
  });
  const { flow } = await runtime.createFlow({ name: 'probe-submit' });
  const runIds: string[] = [];
  for (let j = 0; j < 16; j++) runIds.push((await runtime.createRun(flow.flow_id, {})).run_id);
  const one = async (runId: string): Promise<void> => {
    const body = {
      type: 'tool_call',
      client_token: `t${++token}`,
      input: { tool: 'add', args: { a: 1, b: 2 } },
    };
    const submitted = await runtime.submitStep(runId, body);
    if ((await submitted.done) !== 'succeeded') throw new Error('a submitted step did not succeed');
  };
  const t0 = performance.now();
  let done = 0;
  while (performance.now() - t0 < ms) {
    await Promise.all(runIds.map(one));
    done += runIds.length;
  }
  const perS = Math.round((done / (performance.now() - t0)) * 1000);
  process.stdout.write(`${kind} round ${round}: ${perS} submissions/s (submitted and ended)\n`);
  await runtime.close();
}
rmSync(dir, { recursive: true, force: true });
