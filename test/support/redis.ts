/**
 * @module Test helper: the Redis the tests use (`REDIS_URL`, set for the test workers by
 * test/support/redis-setup.ts) and removing every key a test wrote under its prefix.
 */
import { Cluster, Redis } from 'ioredis';

/** Where the tests look for Redis when `REDIS_URL` is not set. */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/**
 * The URL of the Redis the tests use: `REDIS_URL` when set and not empty, else
 * {@link DEFAULT_REDIS_URL}. In a test worker it is the one the integration project's
 * globalSetup chose (maybe a throwaway server), so build every test connection from it.
 */
export function redisUrl(env: NodeJS.ProcessEnv = process.env): string {
  const url = env['REDIS_URL']?.trim();
  return url ? url : DEFAULT_REDIS_URL;
}

/** Deletes every key that starts with `prefix` of the Redis at `url` (the tests', {@link redisUrl}, by default). */
export async function clearRedisPrefix(prefix: string, url = redisUrl()): Promise<void> {
  const redis = new Redis(url);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    await redis.quit();
  }
}

/**
 * The nodes of the Redis Cluster the tests use (`host:port,...`): `REDIS_CLUSTER`, set for
 * the test workers by test/support/redis-cluster-setup.ts.
 * @throws Error when it is not set (a test file outside the integration project).
 */
export function redisCluster(env: NodeJS.ProcessEnv = process.env): string {
  const nodes = env['REDIS_CLUSTER']?.trim();
  if (!nodes)
    throw new Error('REDIS_CLUSTER is not set: the cluster tests run in the integration project');
  return nodes;
}

/** A connection to the tests' cluster ({@link redisCluster}). */
export function connectTestCluster(): Cluster {
  const nodes = redisCluster()
    .split(',')
    .map((n) => ({
      host: n.slice(0, n.lastIndexOf(':')),
      port: Number(n.slice(n.lastIndexOf(':') + 1)),
    }));
  const cluster = new Cluster(nodes);
  cluster.on('error', () => undefined);
  return cluster;
}

/** Deletes every key of the tests' cluster that starts with `prefix`, on every master. */
export async function clearClusterPrefix(prefix: string): Promise<void> {
  const cluster = connectTestCluster();
  try {
    // The slots table is read on connect: wait for it before asking for the masters.
    await cluster.ping();
    for (const node of cluster.nodes('master')) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
        // One key at a time: keys of different slots cannot go in one DEL.
        for (const key of keys) await node.del(key);
        cursor = next;
      } while (cursor !== '0');
    }
  } finally {
    cluster.disconnect();
  }
}
