/**
 * The fleet in one process: an API runtime with `fleet: { redis }` and two replicas
 * (`FleetWorker`) of different pools on the same Redis. Submissions are queued, taken by the
 * pool their run's `pool_policy` chooses (PLACE-5001), and followed to their end from the API
 * runtime through the steps' streams.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { FleetWorker } from '../../src/fleet/fleet-worker.js';
import { createLogger } from '../../src/observability/logger.js';
import { redisStore } from '../../src/store/redis-store.js';
import type { StepEvent } from '../../src/streams/events.js';
import { clearRedisPrefix, redisUrl } from '../support/redis.js';
import { quietRuntime, until } from '../support/runtime.js';

const prefix = `axon-test:fleet-inproc:${process.pid}:`;
const quiet = createLogger({ level: 'silent' });
const started: FleetWorker[] = [];

afterAll(async () => {
  await Promise.all(started.map((w) => w.stop(0)));
  await clearRedisPrefix(prefix);
});

async function replica(pool: string, tags: string[]): Promise<FleetWorker> {
  const w = await FleetWorker.start({
    pool,
    tags,
    redis: redisUrl(),
    prefix,
    heartbeatMs: 200,
    ttlMs: 1000,
    logger: quiet,
  });
  started.push(w);
  return w;
}

function api() {
  return quietRuntime({
    store: redisStore({ url: redisUrl(), prefix }),
    fleet: { redis: redisUrl(), prefix, refreshMs: 100 },
  });
}

const llm = {
  type: 'llm_call',
  input: { messages: [{ role: 'user', content: 'hi' }], params: { max_tokens: 5 } },
};

describe('a fleet in one process', () => {
  it('runs a submitted step on the pool its run pins, and the API follows it to its end', async () => {
    const gpu = await replica('gpu', ['gpu', 'a100']);
    await replica('cpu', ['cpu']);
    const rt = api();
    try {
      await rt.refreshPools();
      expect(rt.listPools().map((p) => p.pool_id)).toEqual(['cpu', 'gpu']);
      const { flow } = await rt.createFlow({ name: 'f' });
      const run = await rt.createRun(flow.flow_id, {
        seed: 3,
        pool_policy: { placement: { pin: 'gpu' } },
      });
      const step = await rt.submitStep(run.run_id, llm);
      expect(step).toMatchObject({ status: 'queued', created: true });
      const events: StepEvent[] = [];
      for await (const e of rt.followStep(step.step_id)) events.push(e);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      expect(events[0]).toMatchObject({ type: 'started', pool_id: 'gpu' });
      expect(events.filter((e) => e.type === 'token')).toHaveLength(5);
      expect(events.at(-1)?.type).toBe('end');
      expect(await step.done).toBe('succeeded');
      const record = await rt.getStep(step.step_id);
      expect(record).toMatchObject({
        status: 'succeeded',
        placement: 'pool',
        placement_decision: { pool_id: 'gpu', policy: 'pin' },
      });
      await until(() => gpu.active === 0);
    } finally {
      await rt.close();
    }
  });
});
