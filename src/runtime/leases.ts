/**
 * @module Leases: a key held by one owner until it lets go or stops renewing it. What tells
 * one process of a fleet that another, still alive, does some work (a workflow engine drives
 * a thread) and, once the holder died, that the work is free to take. Embedded, the leases
 * are the store's when it keeps them (SQLite: every process on the file sees them,
 * `store/store-leases.ts`), else this process's (`memoryLeases`); with a fleet, they are in
 * its Redis (`redisLeases`), seen by every process of it.
 */
import type { RedisClient } from '../store/redis/redis-connection.js';
import type { Clock } from '../context/clock.js';

import type { Leases } from '../store/store-leases.js';

export type { Leases } from '../store/store-leases.js';

/** Leases of this process, on `clock`. */
export function memoryLeases(clock: Clock): Leases {
  const held = new Map<string, { owner: string; until: number }>();
  return {
    acquire(key, owner, ttlMs) {
      const now = clock.now();
      const lease = held.get(key);
      if (lease && lease.owner !== owner && lease.until > now) return Promise.resolve(false);
      held.set(key, { owner, until: now + ttlMs });
      return Promise.resolve(true);
    },
    release(key, owner) {
      if (held.get(key)?.owner === owner) held.delete(key);
      return Promise.resolve();
    },
  };
}

/** Takes the key if free, or renews it if the owner holds it; 1 when held by the owner now. */
const ACQUIRE = `
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0`;

/** Deletes the key if the owner holds it. */
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0`;

/** Leases in Redis under `prefix`: every process on the same Redis and prefix sees them. */
export function redisLeases(client: RedisClient, prefix = 'axon:lease:'): Leases {
  return {
    async acquire(key, owner, ttlMs) {
      return (await client.eval(ACQUIRE, 1, `${prefix}${key}`, owner, Math.ceil(ttlMs))) === 1;
    },
    async release(key, owner) {
      await client.eval(RELEASE, 1, `${prefix}${key}`, owner);
    },
  };
}
