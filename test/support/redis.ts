/**
 * @module Test helper: the Redis the tests use (`REDIS_URL`, set for the test workers by
 * test/support/redis-setup.ts) and removing every key a test wrote under its prefix.
 */
import { Redis } from 'ioredis';

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

/** Deletes every key of the tests' Redis ({@link redisUrl}) that starts with `prefix`. */
export async function clearRedisPrefix(prefix: string): Promise<void> {
  const redis = new Redis(redisUrl());
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
