import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { ConflictError } from '../../src/errors/conflict-error.js';
import { redisStore } from '../../src/store/redis-store.js';
import { makeRun, makeStep, narration } from '../support/records.js';
import { clearRedisPrefix, redisUrl } from '../support/redis.js';
import { describeRunStore } from './run-store.conformance.js';

/** Every key these tests write starts with this; removed at the end. */
const base = `axon-test:${randomUUID()}:`;
const prefix = (): string => `${base}${randomUUID()}:`;

afterAll(async () => {
  await clearRedisPrefix(base);
});

describeRunStore('redis (REDIS_URL, a key prefix per store)', () =>
  redisStore({ url: redisUrl(), prefix: prefix() }),
);

describe('RedisRunStore', () => {
  it('two connections with one prefix share runs, steps and logs; other prefixes do not see them', async () => {
    const p = prefix();
    const a = redisStore({ url: redisUrl(), prefix: p });
    const b = redisStore({ url: redisUrl(), prefix: p });
    const other = redisStore({ url: redisUrl(), prefix: prefix() });
    const run = makeRun();
    const step = makeStep(run.run_id);
    await a.createRun(run);
    await a.createStep(step);
    await a.appendEvents([narration(step.step_id, 1)]);

    expect(await b.getRun(run.run_id)).toEqual(run);
    expect(await b.listSteps(run.run_id)).toEqual([step]);
    await b.appendEvents([narration(step.step_id, 2)]);
    expect((await a.readEvents(step.step_id)).map((e) => e.seq)).toEqual([1, 2]);
    expect(await other.getRun(run.run_id)).toBeNull();
    await Promise.all([a.close(), b.close(), other.close()]);
  });

  it('of two processes appending the same seq at once, exactly one wins and the log stays whole', async () => {
    const p = prefix();
    const stores = Array.from({ length: 8 }, () => redisStore({ url: redisUrl(), prefix: p }));
    const run = makeRun();
    const step = makeStep(run.run_id);
    await stores[0]?.createRun(run);
    await stores[0]?.createStep(step);

    const results = await Promise.allSettled(
      stores.map((s, i) => s.appendEvents([narration(step.step_id, 1, `writer ${i}`)])),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(refused).toHaveLength(7);
    for (const r of refused) expect(r.reason).toBeInstanceOf(ConflictError);
    expect(await stores[1]?.readEvents(step.step_id)).toHaveLength(1);
    await Promise.all(stores.map((s) => s.close()));
  });

  it('an unreachable Redis fails calls with an error, not a hang, and reports it', async () => {
    const seen: Error[] = [];
    const store = redisStore({
      url: 'redis://127.0.0.1:6391',
      prefix: prefix(),
      redis: { connectTimeout: 500, retryStrategy: () => null },
      onError: (err) => seen.push(err),
    });
    await expect(store.getRun('run_x')).rejects.toThrow();
    expect(seen.some((e) => e.message.includes('ECONNREFUSED'))).toBe(true);
    await store.close();
  });

  it('uses a given client without closing it', async () => {
    const client = new Redis(redisUrl());
    const store = redisStore({ client, prefix: prefix() });
    await store.createRun(makeRun());
    await store.close();
    expect(await client.ping()).toBe('PONG');
    await client.quit();
  });
});
