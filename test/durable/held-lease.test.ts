/**
 * An actor's lease as a fleet replica holds it (issue 46, §5): renewed while this process
 * runs, lost for good once it froze past the lease — never taken back, even when the lease
 * lay free after another replica took it and let it go. Memory leases on the faked clock.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from '../../src/context/clock.js';
import { HeldLease } from '../../src/durable/fleet-actors.js';
import { memoryLeases } from '../../src/runtime/leases.js';

const TTL = 1_500;
const KEY = 'actor:act_1';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'Date'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('HeldLease', () => {
  it('is renewed every third of its time while this process runs: no one else can take it', async () => {
    const leases = memoryLeases(systemClock);
    const held = await HeldLease.take(leases, 'act_1', TTL);
    expect(held).not.toBeNull();
    await vi.advanceTimersByTimeAsync(TTL * 4);
    expect(held?.lost).toBe(false);
    expect(await leases.acquire(KEY, 'another replica', TTL)).toBe(false);
    await held?.release();
    expect(await leases.acquire(KEY, 'another replica', TTL)).toBe(true);
  });

  it('frozen past its lease while another replica took the actor and let it go: lost, and not taken again', async () => {
    const leases = memoryLeases(systemClock);
    const held = await HeldLease.take(leases, 'act_1', TTL);
    if (!held) throw new Error('the lease was not taken');
    // Frozen (SIGSTOP): the wall clock runs on, none of this process's timers fire.
    vi.setSystemTime(Date.now() + TTL * 3);
    expect(await leases.acquire(KEY, 'another replica', TTL)).toBe(true);
    await leases.release(KEY, 'another replica');
    // Thawed: the overdue renewal runs first.
    await vi.advanceTimersByTimeAsync(TTL);
    expect(held.lost).toBe(true);
    // The lease is free, not this process's again: its fences would not hold.
    expect(await leases.acquire(KEY, 'a third replica', TTL)).toBe(true);
  });

  it('a renewal that finds another holding it: lost, and no later renewal takes it back once free', async () => {
    const leases = memoryLeases(systemClock);
    const held = await HeldLease.take(leases, 'act_1', TTL);
    if (!held) throw new Error('the lease was not taken');
    vi.setSystemTime(Date.now() + TTL * 2);
    expect(await leases.acquire(KEY, 'another replica', TTL * 10)).toBe(true);
    await vi.advanceTimersByTimeAsync(TTL / 3);
    expect(held.lost).toBe(true);
    await leases.release(KEY, 'another replica');
    await vi.advanceTimersByTimeAsync(TTL * 3);
    expect(await leases.acquire(KEY, 'a third replica', TTL)).toBe(true);
  });

  it('renewals that fail (Redis gone) past its time: lost, and not taken back once Redis is there again', async () => {
    const leases = memoryLeases(systemClock);
    let down = false;
    const flaky = {
      acquire: (key: string, owner: string, ttlMs: number) =>
        down ? Promise.reject(new Error('Redis gone')) : leases.acquire(key, owner, ttlMs),
      release: (key: string, owner: string) => leases.release(key, owner),
    };
    const held = await HeldLease.take(flaky, 'act_1', TTL);
    if (!held) throw new Error('the lease was not taken');
    down = true;
    await vi.advanceTimersByTimeAsync(TTL * 2);
    expect(held.lost).toBe(true);
    down = false;
    await vi.advanceTimersByTimeAsync(TTL * 3);
    expect(await leases.acquire(KEY, 'another replica', TTL)).toBe(true);
  });
});
