/**
 * @module Sliding-window rate limits: in one process (a log of hit times per key), and across
 * processes through Redis (one Lua script per hit over a sorted set, so concurrent hits from
 * many processes never pass the limit together).
 */
import type { RedisClient } from '../store/redis/redis-connection.js';
import type { Clock } from '../context/clock.js';

/** What one hit got. */
export interface RateVerdict {
  readonly allowed: boolean;
  /** Hits in the window, this one included when it was allowed. */
  readonly count: number;
  /** When refused: milliseconds until the oldest hit leaves the window. */
  readonly retryAfterMs: number;
}

/** Counts hits per key in a sliding window. */
export interface RateLimiter {
  /** Counts a hit of `key` if fewer than `limit` hits fell in the last `windowMs`. */
  hit(key: string, limit: number, windowMs: number): Promise<RateVerdict>;
  /**
   * Takes the earliest time at or after now when a hit of `key` keeps every window within
   * `limit` — its earlier reservations counted — and counts the hit then. Resolves how long
   * to wait for it (0: now). A queue: requests past the limit go later, in order, and never
   * more than `limit` go in any window.
   */
  reserve(key: string, limit: number, windowMs: number): Promise<number>;
  close?(): Promise<void>;
}

/**
 * Where `times` (sorted, the reservations of a key still in or after the window) lets one
 * more go at or after `now`: once the hit `limit` places back has left the window.
 */
export function slotAfter(
  times: readonly number[],
  now: number,
  limit: number,
  windowMs: number,
): number {
  if (times.length < limit) return Math.max(now, times.at(-1) ?? now);
  return Math.max(now, times.at(-1) ?? now, (times[times.length - limit] ?? now) + windowMs);
}

/** A {@link RateLimiter} in this process's memory, on `clock`. */
export function memoryRateLimiter(clock: Clock): RateLimiter {
  const hits = new Map<string, number[]>();
  return {
    hit(key, limit, windowMs) {
      const now = clock.now();
      const times = hits.get(key) ?? [];
      let first = 0;
      while (first < times.length && (times[first] ?? 0) <= now - windowMs) first++;
      const live = first > 0 ? times.slice(first) : times;
      if (live.length >= limit) {
        hits.set(key, live);
        const oldest = live[0] ?? now;
        return Promise.resolve({
          allowed: false,
          count: live.length,
          retryAfterMs: Math.max(1, oldest + windowMs - now),
        });
      }
      live.push(now);
      hits.set(key, live);
      return Promise.resolve({ allowed: true, count: live.length, retryAfterMs: 0 });
    },
    reserve(key, limit, windowMs) {
      const now = clock.now();
      const live = (hits.get(key) ?? []).filter((t) => t > now - windowMs);
      const at = slotAfter(live, now, limit, windowMs);
      live.push(at);
      hits.set(key, live);
      return Promise.resolve(at - now);
    },
  };
}

// KEYS[1] the key's sorted set. ARGV now, window, limit, a unique member.
// → {1, count, 0} or {0, count, retry_after_ms}.
const HIT = `
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local n = redis.call('ZCARD', KEYS[1])
if n < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], now, ARGV[4])
  redis.call('PEXPIRE', KEYS[1], window)
  return {1, n + 1, 0}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local retry = tonumber(oldest[2]) + window - now
if retry < 1 then retry = 1 end
return {0, n, retry}`;

// KEYS[1] the key's sorted set. ARGV now, window, limit, a unique member. Reserves the
// earliest slot (see slotAfter) → milliseconds until it.
const RESERVE = `
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local n = redis.call('ZCARD', KEYS[1])
local at = now
if n > 0 then
  local last = tonumber(redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
  if last > at then at = last end
end
if n >= limit then
  local back = tonumber(redis.call('ZRANGE', KEYS[1], n - limit, n - limit, 'WITHSCORES')[2]) + window
  if back > at then at = back end
end
redis.call('ZADD', KEYS[1], at, ARGV[4])
redis.call('PEXPIRE', KEYS[1], at - now + window)
return at - now`;

/**
 * A {@link RateLimiter} on Redis: processes that share `prefix` share their limits. Times
 * come from `clock` in each process, so their clocks should agree (they do on one machine,
 * and to within NTP's error across a fleet).
 */
export function redisRateLimiter(
  client: RedisClient,
  clock: Clock,
  prefix = 'axon:rate:',
): RateLimiter {
  let n = 0;
  const id = `${process.pid}-${Math.random().toString(36).slice(2)}`;
  return {
    async hit(key, limit, windowMs) {
      const now = clock.now();
      const r = (await client.eval(
        HIT,
        1,
        `${prefix}${key}`,
        now,
        windowMs,
        limit,
        `${now}-${id}-${n++}`,
      )) as [number, number, number];
      return { allowed: r[0] === 1, count: r[1], retryAfterMs: r[2] };
    },
    async reserve(key, limit, windowMs) {
      const now = clock.now();
      return (await client.eval(
        RESERVE,
        1,
        `${prefix}${key}`,
        now,
        windowMs,
        limit,
        `${now}-${id}-${n++}`,
      )) as number;
    },
  };
}
