import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../src/context/clock.js';
import { BreakerTable } from '../../src/supervisors/breaker-table.js';
import { BREAKER_DEFAULTS, CircuitBreaker } from '../../src/supervisors/circuit-breaker.js';

function breaker(options: { failureThreshold?: number; recoveryMs?: number } = {}) {
  const clock = new SimulatedClock(1_000);
  return { clock, b: new CircuitBreaker('agent:x', clock, options) };
}

describe('POLICY-3002: the circuit breaker', () => {
  it('has Nerva’s defaults: 3 failures, 60 s recovery', () => {
    expect(BREAKER_DEFAULTS).toEqual({ failureThreshold: 3, recoveryMs: 60_000 });
  });

  it('opens after N consecutive failures; a success in between starts the count again', () => {
    const { b } = breaker({ failureThreshold: 3 });
    expect(b.failure()).toBe(false);
    expect(b.failure()).toBe(false);
    b.success();
    expect(b.failure()).toBe(false);
    expect(b.failure()).toBe(false);
    expect(b.state).toBe('closed');
    expect(b.failure()).toBe(true);
    expect(b.state).toBe('open');
  });

  it('fails fast while open, and says when a probe may go', () => {
    const { b, clock } = breaker({ failureThreshold: 1, recoveryMs: 5_000 });
    b.failure();
    expect(b.tryAcquire()).toBe(false);
    clock.advance(2_000);
    expect(b.retryAfterMs).toBe(3_000);
    expect(b.tryAcquire()).toBe(false);
  });

  it('goes half-open after the recovery time on the injected clock, and lets one probe through', () => {
    const { b, clock } = breaker({ failureThreshold: 1, recoveryMs: 5_000 });
    b.failure();
    clock.advance(4_999);
    expect(b.state).toBe('open');
    clock.advance(1);
    expect(b.state).toBe('half_open');
    expect(b.tryAcquire()).toBe(true);
    // One probe at a time.
    expect(b.tryAcquire()).toBe(false);
  });

  it('a successful probe closes it', () => {
    const { b, clock } = breaker({ failureThreshold: 1, recoveryMs: 10 });
    b.failure();
    clock.advance(10);
    expect(b.tryAcquire()).toBe(true);
    b.success();
    expect(b.state).toBe('closed');
    expect(b.tryAcquire()).toBe(true);
  });

  it('a failed probe opens it again for another recovery time', () => {
    const { b, clock } = breaker({ failureThreshold: 1, recoveryMs: 10 });
    b.failure();
    clock.advance(10);
    expect(b.tryAcquire()).toBe(true);
    expect(b.failure()).toBe(true);
    expect(b.state).toBe('open');
    clock.advance(9);
    expect(b.state).toBe('open');
    clock.advance(1);
    expect(b.state).toBe('half_open');
  });

  it('refuses bad options', () => {
    const clock = new SimulatedClock();
    expect(() => new CircuitBreaker('t', clock, { failureThreshold: 0 })).toThrow(RangeError);
    expect(() => new CircuitBreaker('t', clock, { recoveryMs: -1 })).toThrow(RangeError);
  });
});

describe('BreakerTable', () => {
  it('makes breakers on first use, and none once stopped: a late call after close leaves no timer behind', () => {
    const clock = new SimulatedClock(1_000);
    const table = new BreakerTable(clock, { failureThreshold: 1, recoveryMs: 5_000 });
    const agent = table.get('agent', 'a');
    expect(table.get('agent', 'a')).toBe(agent);
    table.get('tool', 't')?.failure();
    expect(table.states()).toEqual([
      { target: 'agent:a', state: 'closed' },
      { target: 'tool:t', state: 'open' },
    ]);
    table.stop();
    expect(table.get('tool', 'late')).toBeNull();
    expect(clock.pending).toBe(0);
    expect(new BreakerTable(clock, false).get('engine', 'e')).toBeNull();
  });
});
