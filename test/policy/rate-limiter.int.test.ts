import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../src/context/clock.js';
import {
  memoryRateLimiter,
  redisRateLimiter,
  type RateLimiter,
} from '../../src/policy/rate-limiter.js';
import { clearRedisPrefix, redisUrl } from '../support/redis.js';

const base = `axon-test:${randomUUID()}:rate:`;
const clients: Redis[] = [];
afterAll(async () => {
  await Promise.all(clients.map((c) => c.quit()));
  await clearRedisPrefix(base);
});

function redisLimiter(clock: SimulatedClock): RateLimiter {
  const client = new Redis(redisUrl());
  clients.push(client);
  return redisRateLimiter(client, clock, `${base}${randomUUID()}:`);
}

describe.each([
  ['memory', (clock: SimulatedClock) => memoryRateLimiter(clock)],
  ['redis', redisLimiter],
])('a sliding-window rate limiter (%s)', (_name, make) => {
  it('allows `limit` hits per window, refuses the next with when to retry, and slides', async () => {
    const clock = new SimulatedClock(1_000_000);
    const limiter = make(clock);
    expect(await limiter.hit('k', 3, 60_000)).toEqual({ allowed: true, count: 1, retryAfterMs: 0 });
    clock.advance(20_000);
    await limiter.hit('k', 3, 60_000);
    clock.advance(20_000);
    expect(await limiter.hit('k', 3, 60_000)).toMatchObject({ allowed: true, count: 3 });
    // The oldest hit leaves the window 20 s from now.
    expect(await limiter.hit('k', 3, 60_000)).toEqual({
      allowed: false,
      count: 3,
      retryAfterMs: 20_000,
    });
    // Keys are counted apart.
    expect((await limiter.hit('other', 3, 60_000)).allowed).toBe(true);
    clock.advance(20_000);
    expect(await limiter.hit('k', 3, 60_000)).toMatchObject({ allowed: true, count: 3 });
  });

  it('reserve queues hits past the limit in order, never more than the limit in a window', async () => {
    const clock = new SimulatedClock(1_000_000);
    const limiter = make(clock);
    const waits = await Promise.all(
      Array.from({ length: 5 }, () => limiter.reserve('q', 2, 60_000)),
    );
    expect([...waits].sort((a, b) => a - b)).toEqual([0, 0, 60_000, 60_000, 120_000]);
    // The queue is counted: a plain hit now is refused, and a later reservation goes after.
    expect((await limiter.hit('q', 2, 60_000)).allowed).toBe(false);
    clock.advance(30_000);
    // The slot 120 s after the start has room for one more: 90 s from now.
    expect(await limiter.reserve('q', 2, 60_000)).toBe(90_000);
    expect(await limiter.reserve('q', 2, 60_000)).toBe(150_000);
  });

  it('never lets concurrent hits past the limit together', async () => {
    const limiter = make(new SimulatedClock(5_000));
    const verdicts = await Promise.all(
      Array.from({ length: 50 }, () => limiter.hit('burst', 7, 1_000)),
    );
    expect(verdicts.filter((v) => v.allowed)).toHaveLength(7);
  });
});

describe('a rate limit shared by processes through Redis', () => {
  it('processes count against one limit: what one used, the others do not get; at once, exactly the limit', async () => {
    const fixture = fileURLToPath(new URL('../fixtures/rate-hits.ts', import.meta.url));
    const prefix = `${base}shared-${randomUUID()}:`;
    const start = (hits: number) => {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', fixture, prefix, '25', String(hits)],
        { stdio: ['pipe', 'pipe', 'pipe'] },
      );
      let out = '';
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const ready = new Promise<void>((resolve) => {
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('ready')) resolve();
        });
      });
      const result = new Promise<number>((resolve, reject) => {
        child.on('exit', (code) => {
          if (code !== 0) reject(new Error(`rate-hits exited ${code}: ${err}`));
          else
            resolve(
              (JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as { allowed: number }).allowed,
            );
        });
      });
      return { child, ready, result };
    };
    // One process uses 15 of the 25 ...
    const first = start(15);
    await first.ready;
    first.child.stdin.end('go\n');
    expect(await first.result).toBe(15);
    // ... so two more, hitting 20 times each at once, get the 10 left between them.
    const a = start(20);
    const b = start(20);
    await Promise.all([a.ready, b.ready]);
    a.child.stdin.end('go\n');
    b.child.stdin.end('go\n');
    const [fromA, fromB] = await Promise.all([a.result, b.result]);
    expect(fromA + fromB).toBe(10);
  }, 60_000);
});
