/** @module Test helper: removing every Redis key a test wrote under its prefix. */
import { Redis } from 'ioredis';

/** Deletes every key of 127.0.0.1:6379 that starts with `prefix`. */
export async function clearRedisPrefix(prefix: string): Promise<void> {
  const redis = new Redis('redis://127.0.0.1:6379');
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
