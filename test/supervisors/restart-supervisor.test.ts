import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../src/context/clock.js';
import { RestartSupervisor } from '../../src/supervisors/restart-supervisor.js';

const noJitter = { jitter: 0 };

describe('restart strategy: one-for-one with backoff and a maximum intensity', () => {
  it('admits at once, synchronously, when nothing died', () => {
    expect(new RestartSupervisor(new SimulatedClock(0)).admit()).toBe(true);
  });

  it('backs off exponentially from min to max', () => {
    const clock = new SimulatedClock(0);
    const s = new RestartSupervisor(clock, {
      ...noJitter,
      minBackoffMs: 100,
      maxBackoffMs: 1_000,
      maxRestarts: 100,
    });
    const delays = Array.from({ length: 6 }, () => {
      const v = s.restarted();
      return v.kind === 'backoff' ? v.delayMs : -1;
    });
    expect(delays).toEqual([100, 200, 400, 800, 1_000, 1_000]);
    s.healthy();
    expect(s.restarted()).toEqual({ kind: 'backoff', delayMs: 100 });
  });

  it('jitters each backoff within the given fraction', () => {
    const clock = new SimulatedClock(0);
    const low = new RestartSupervisor(clock, { jitter: 0.2, minBackoffMs: 100 }, () => 0);
    const high = new RestartSupervisor(clock, { jitter: 0.2, minBackoffMs: 100 }, () => 1);
    expect(low.restarted()).toEqual({ kind: 'backoff', delayMs: 80 });
    expect(high.restarted()).toEqual({ kind: 'backoff', delayMs: 120 });
  });

  it('admit waits out the backoff on the injected clock', async () => {
    const clock = new SimulatedClock(0);
    const s = new RestartSupervisor(clock, { ...noJitter, minBackoffMs: 500 });
    s.restarted();
    let admitted: boolean | null = null;
    const admission = s.admit();
    expect(admission).toBeInstanceOf(Promise);
    void Promise.resolve(admission).then((ok) => (admitted = ok));
    await Promise.resolve();
    expect(admitted).toBeNull();
    clock.advance(499);
    await Promise.resolve();
    expect(admitted).toBeNull();
    clock.advance(1);
    await new Promise((r) => setImmediate(r));
    expect(admitted).toBe(true);
  });

  it('past N restarts in T the pool is degraded and refuses; it recovers as the window moves on', async () => {
    const clock = new SimulatedClock(0);
    const s = new RestartSupervisor(clock, { ...noJitter, maxRestarts: 2, withinMs: 10_000 });
    expect(s.restarted().kind).toBe('backoff');
    clock.advance(1_000);
    expect(s.restarted().kind).toBe('backoff');
    clock.advance(1_000);
    expect(s.restarted()).toEqual({ kind: 'degraded', restarts: 3, withinMs: 10_000 });
    expect(s.degraded).toBe(true);
    expect(s.admit()).toBe(false);
    clock.advance(8_000); // the first restart leaves the window
    expect(s.degraded).toBe(false);
    expect(s.restarts).toBe(2);
  });

  it('refuses bad options', () => {
    const clock = new SimulatedClock();
    expect(() => new RestartSupervisor(clock, { maxRestarts: -1 })).toThrow(RangeError);
    expect(() => new RestartSupervisor(clock, { minBackoffMs: 10, maxBackoffMs: 5 })).toThrow(
      RangeError,
    );
  });
});
