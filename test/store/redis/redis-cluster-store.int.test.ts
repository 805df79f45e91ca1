/**
 * The Redis store on a real Redis Cluster of three masters (test/support/redis-cluster-setup.ts):
 * the whole conformance suite, each store under a prefix with a hash tag of its own (so the
 * stores spread over the masters), and what a cluster refuses.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { redisStore } from '../../../src/store/redis/redis-store.js';
import { makeRun, makeStep, narration } from '../../support/records.js';
import { clearClusterPrefix, connectTestCluster, redisCluster } from '../../support/redis.js';
import { describeActorStore } from '../actor-store.conformance.js';
import { describeRunStore } from '../run-store.conformance.js';

/** Every key these tests write starts with this; removed at the end. */
const base = `{axon-test:${randomUUID()}`;
const prefix = (): string => `${base}:${randomUUID()}}:`;

afterAll(async () => {
  await clearClusterPrefix(base);
});

describeRunStore('redis cluster (REDIS_CLUSTER, a hash-tagged prefix per store)', () =>
  redisStore({ cluster: redisCluster(), prefix: prefix() }),
);

describeActorStore('redis cluster (REDIS_CLUSTER, a hash-tagged prefix per store)', () =>
  redisStore({ cluster: redisCluster(), prefix: prefix() }),
);

describe('RedisRunStore on a Redis Cluster', () => {
  it("keeps every key of a store in its prefix's one slot, and stores of other tags on other slots", async () => {
    // A base of its own: the conformance suite's stores write under `base` at the same time.
    const own = `{axon-test:slots:${randomUUID()}`;
    const stores = Array.from({ length: 6 }, () =>
      redisStore({ cluster: redisCluster(), prefix: `${own}:${randomUUID()}}:` }),
    );
    for (const store of stores) {
      const run = makeRun();
      const step = makeStep(run.run_id);
      await store.createRun(run);
      await store.createStep(step);
      await store.appendEvents([narration(step.step_id, 1)]);
      await store.updateStep(step.step_id, {
        status: 'succeeded',
        ended_at: new Date().toISOString(),
      });
      await store.updateRun(run.run_id, { status: 'completed' });
    }
    const cluster = connectTestCluster();
    await cluster.ping();
    const slotsByStore = new Map<string, Set<number>>();
    for (const node of cluster.nodes('master')) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', `${own}*`, 'COUNT', 1000);
        for (const key of keys) {
          const store = stores.find((s) => key.startsWith(s.prefix));
          expect(store, key).toBeDefined();
          const slot = await cluster.cluster('KEYSLOT', key);
          const seen = slotsByStore.get(store?.prefix ?? '') ?? new Set<number>();
          seen.add(slot);
          slotsByStore.set(store?.prefix ?? '', seen);
        }
        cursor = next;
      } while (cursor !== '0');
    }
    cluster.disconnect();
    expect(slotsByStore.size).toBe(6);
    for (const slots of slotsByStore.values()) expect(slots.size).toBe(1);
    const all = new Set([...slotsByStore.values()].flatMap((s) => [...s]));
    expect(all.size).toBeGreaterThan(1);
    await Promise.all(stores.map((s) => s.close()));
    await clearClusterPrefix(own);
  });

  it("claims a queued step with and without a client token, and says a fleet step's end without a fence (no key outside the store's slot)", async () => {
    const p = prefix();
    const said: boolean[] = [];
    const store = redisStore({
      cluster: redisCluster(),
      prefix: p,
      // The fleet's notice as a worker gives it, with no fence and no counter.
      endNotice: () => ({
        keys: [`${p}fleet:ended`, `${p}fleet:ended`, `${p}fleet:ended`, `${p}fleet:open`],
        args: ['', 'succeeded', '100', '', ''],
        said: (yes) => said.push(yes),
      }),
    });
    const run = makeRun();
    await store.createRun(run);
    const bare = makeStep(run.run_id, { status: 'queued' });
    const tokened = makeStep(run.run_id, { status: 'queued', client_token: 'tok-1' });
    expect((await store.claimStep(bare)).created).toBe(true);
    expect((await store.claimStep(tokened)).created).toBe(true);
    expect((await store.claimStep({ ...tokened, step_id: 'step_again' })).step.step_id).toBe(
      tokened.step_id,
    );
    await store.endStep({
      stepId: bare.step_id,
      runId: run.run_id,
      events: [],
      patch: { status: 'succeeded', ended_at: new Date().toISOString() },
    });
    expect(said).toEqual([true]);
    expect((await store.getStep(bare.step_id))?.status).toBe('succeeded');
    await store.close();
  });

  it('defaults to the prefix {axon}: and refuses a prefix without a hash tag, a bad node, or a url beside the cluster', async () => {
    const store = redisStore({ cluster: redisCluster() });
    expect(store.prefix).toBe('{axon}:');
    await store.close();
    expect(() => redisStore({ cluster: redisCluster(), prefix: 'axon:' })).toThrow(
      /"axon:" has no hash tag/,
    );
    expect(() => redisStore({ cluster: redisCluster(), prefix: 'a{}b:' })).toThrow(TypeError);
    expect(() => redisStore({ cluster: 'localhost' })).toThrow(/"localhost" is not host:port/);
    expect(() => redisStore({ cluster: [] })).toThrow(/at least one node/);
    expect(() => redisStore({ cluster: redisCluster(), url: 'redis://127.0.0.1:6379' })).toThrow(
      /not more than one/,
    );
  });

  it('a cluster connection given as client gets the same checks', async () => {
    const client = connectTestCluster();
    expect(() => redisStore({ client, prefix: 'plain:' })).toThrow(/has no hash tag/);
    const store = redisStore({ client });
    expect(store.prefix).toBe('{axon}:');
    await store.close();
    client.disconnect();
  });
});
