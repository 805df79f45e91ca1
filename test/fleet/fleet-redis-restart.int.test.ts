/**
 * Redis restarted under a running fleet: a Redis of this test's own (append-only file, so
 * what it held survives the restart) stops mid-step and starts again on the same port. The
 * replica and the API reconnect by themselves; the step ends with a whole log, its budget
 * reservation settled, and the run completes. And a replica asked to stop while its Redis
 * is gone stops all the same.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { FleetWorker } from '../../src/fleet/fleet-worker.js';
import { createLogger } from '../../src/observability/logger.js';
import { redisStore } from '../../src/store/redis/redis-store.js';
import { freePort, redisAnswers } from '../support/redis-setup.js';
import { quietRuntime } from '../support/runtime.js';

const dir = mkdtempSync(join(tmpdir(), 'axon-redis-restart-'));
let server: ChildProcess | null = null;

/** Starts redis-server on `port`, keeping an append-only file in `dir`; resolves once it answers. */
async function startRedis(port: number): Promise<void> {
  server = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--dir',
      dir,
      '--appendonly',
      'yes',
      '--appendfsync',
      'always',
      '--save',
      '',
    ],
    { stdio: 'ignore' },
  );
  for (let i = 0; i < 100; i++) {
    if (await redisAnswers({ host: '127.0.0.1', port, tls: false })) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`redis-server did not start on ${port}`);
}

async function stopRedis(): Promise<void> {
  const s = server;
  if (!s || s.exitCode !== null) return;
  const exited = new Promise((resolve) => s.on('exit', resolve));
  s.kill('SIGTERM');
  await exited;
}

afterAll(async () => {
  await stopRedis();
  rmSync(dir, { recursive: true, force: true });
});

describe('Redis restarted during a run', () => {
  it('the replica and the API reconnect, the step ends with a whole log, the run completes', async () => {
    const port = await freePort();
    const url = `redis://127.0.0.1:${port}`;
    await startRedis(port);
    const quiet = createLogger({ level: 'silent' });
    const worker = await FleetWorker.start({
      pool: 'p',
      redis: url,
      logger: quiet,
      runtime: { engines: [createScriptedEngine({ tokenDelayMs: 10 })] },
    });
    const rt = quietRuntime({
      store: redisStore({ url, redis: { maxRetriesPerRequest: null } }),
      fleet: { redis: url, refreshMs: 100 },
    });
    try {
      await rt.refreshPools();
      const { flow } = await rt.createFlow({ name: 'f' });
      // With a budget: the step reserves on the run's ledger in Redis before the restart and
      // settles after it.
      const run = await rt.createRun(flow.flow_id, { seed: 4, budgets: { max_tokens_out: 1_000 } });
      const tokens = 200;
      const step = await rt.submitStep(run.run_id, {
        type: 'llm_call',
        input: {
          messages: [{ role: 'user', content: 'through a restart' }],
          params: { max_tokens: tokens },
        },
      });
      // Once tokens flow, Redis stops; half a second later it is back.
      for await (const e of rt.followStep(step.step_id)) if (e.type === 'token' && e.i >= 10) break;
      await stopRedis();
      await new Promise((r) => setTimeout(r, 500));
      await startRedis(port);
      await step.done;
      // The error, if any, shows in the failure.
      const ended = await rt.getStep(step.step_id);
      expect({ status: ended?.status, error: ended?.error }).toEqual({
        status: 'succeeded',
        error: null,
      });
      const events = await rt.readStepEvents(step.step_id);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      expect(events.filter((e) => e.type === 'token').map((e) => (e as { i: number }).i)).toEqual([
        ...Array(tokens).keys(),
      ]);
      expect(events.at(-1)?.type).toBe('end');
      expect((await rt.completeRun(run.run_id)).status).toBe('completed');
      expect((await rt.getRun(run.run_id))?.budget_usage.tokens_out).toBe(tokens);
    } finally {
      await rt.close();
      await worker.stop(0);
      // This test's Redis goes with it (the next test starts one of its own).
      await stopRedis();
    }
  });

  it('a replica asked to stop while Redis is down stops anyway, after its grace and a bounded wait', async () => {
    const port = await freePort();
    await startRedis(port);
    const worker = await FleetWorker.start({
      pool: 'p',
      redis: `redis://127.0.0.1:${port}`,
      logger: createLogger({ level: 'silent' }),
    });
    // Redis goes away for good: a stop that waited on it would never resolve.
    const dead = server;
    server = null;
    dead?.kill('SIGKILL');
    await new Promise((r) => dead?.once('exit', r));
    const report = await worker.stop(100);
    expect(report).toEqual({ finished: 0, handedBack: 0 });
  }, 30_000);
});
