/**
 * The API side of the fleet's streams (`fleet-relay.ts`) on one Redis and on a Redis Cluster:
 * a step followed while the relay's read is blocked is read at once (its wake stream ends
 * the read on the node it blocks on), and a step's end said on the `ended` stream reaches
 * whoever waits on it.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { FleetKeys } from '../../../src/placement/fleet/fleet-keys.js';
import { announceEnded, StepStreamRelay } from '../../../src/placement/fleet/fleet-relay.js';
import { duplicateClient, type RedisClient } from '../../../src/store/redis/redis-connection.js';
import {
  clearClusterPrefix,
  clearRedisPrefix,
  connectTestCluster,
  redisUrl,
} from '../../support/redis.js';

const id = randomUUID().slice(0, 8);
const prefixes = { single: `axon-test:relay:${id}:`, cluster: `{axon-test:relay:${id}}:` };
afterAll(async () => {
  await clearRedisPrefix(prefixes.single);
  await clearClusterPrefix(prefixes.cluster);
});

/** Resolves once `test` holds, checked every 10 ms. */
async function until(test: () => boolean): Promise<void> {
  while (!test()) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe.each([
  ['one Redis', false],
  ['a Redis Cluster', true],
] as const)('StepStreamRelay on %s', (_, cluster) => {
  const keys = new FleetKeys(cluster ? prefixes.cluster : prefixes.single);

  /** A relay whose read blocks for a minute: only its wake stream can end it sooner. */
  function relay(appended: (stepId: string) => void): {
    relay: StepStreamRelay;
    control: RedisClient;
    close: () => Promise<void>;
  } {
    const control: RedisClient = cluster ? connectTestCluster() : new Redis(redisUrl());
    const reader = duplicateClient(control, { maxRetriesPerRequest: null });
    reader.on('error', () => undefined);
    const r = new StepStreamRelay(reader, control, keys, appended, () => undefined, 60_000);
    return {
      relay: r,
      control,
      close: async () => {
        await r.close();
        reader.disconnect();
        control.disconnect();
      },
    };
  }

  it('reads a step followed while its read is blocked at once, not when the read times out', async () => {
    const woken: string[] = [];
    const { relay: r, control, close } = relay((stepId) => woken.push(stepId));
    // Let the first read block (no step followed yet).
    await new Promise((resolve) => setTimeout(resolve, 200));
    const stepId = `step_${randomUUID()}`;
    r.follow(stepId);
    // The entry goes on once the relay reads the step's stream: then it wakes its follower.
    await new Promise((resolve) => setTimeout(resolve, 100));
    await control.xadd(keys.events(stepId), '*', 'seq', '1');
    await until(() => woken.includes(stepId));
    expect(woken).toEqual([stepId]);
    await close();
  }, 20_000);

  it('tells who waits on a step its end, as the replica said it', async () => {
    const { relay: r, control, close } = relay(() => undefined);
    const stepId = `step_${randomUUID()}`;
    const ended = r.ended(stepId);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await announceEnded(control, keys, stepId, 'succeeded')).toBe(true);
    expect(await ended).toBe('succeeded');
    await close();
  }, 20_000);
});
