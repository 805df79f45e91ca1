import { describe, expect, it } from 'vitest';
import { SimulatedClock, systemClock } from '../../src/context/clock.js';
import { createSequentialIdSource, defaultIdSource } from '../../src/context/id-source.js';

describe('SimulatedClock', () => {
  it('starts at the given time and only moves when advanced', () => {
    const clock = new SimulatedClock(1_000);
    expect(clock.now()).toBe(1_000);
    expect(clock.now()).toBe(1_000);
    clock.advance(250);
    expect(clock.now()).toBe(1_250);
    clock.advance(0);
    expect(clock.now()).toBe(1_250);
  });

  it('fires timers in order of due time, not in the order they were set', () => {
    const clock = new SimulatedClock(0);
    const fired: string[] = [];
    clock.setTimeout(() => fired.push('c@300'), 300);
    clock.setTimeout(() => fired.push('a@100'), 100);
    clock.setTimeout(() => fired.push('b@200'), 200);
    clock.advance(1_000);
    expect(fired).toEqual(['a@100', 'b@200', 'c@300']);
    expect(clock.pending).toBe(0);
  });

  it('fires timers due at the same time in the order they were set', () => {
    const clock = new SimulatedClock(0);
    const fired: number[] = [];
    for (let i = 0; i < 5; i++) clock.setTimeout(() => fired.push(i), 50);
    clock.advance(50);
    expect(fired).toEqual([0, 1, 2, 3, 4]);
  });

  it('fires only the timers due within the advance, and shows each its due time as now', () => {
    const clock = new SimulatedClock(0);
    const seen: [string, number][] = [];
    clock.setTimeout(() => seen.push(['early', clock.now()]), 40);
    clock.setTimeout(() => seen.push(['late', clock.now()]), 160);
    clock.advance(100);
    expect(seen).toEqual([['early', 40]]);
    expect(clock.now()).toBe(100);
    expect(clock.pending).toBe(1);
    clock.advance(59);
    expect(seen).toEqual([['early', 40]]);
    clock.advance(1);
    expect(seen).toEqual([
      ['early', 40],
      ['late', 160],
    ]);
    expect(clock.now()).toBe(160);
  });

  it('fires a timer set by a firing timer when it falls due within the same advance', () => {
    const clock = new SimulatedClock(0);
    const seen: number[] = [];
    clock.setTimeout(() => {
      seen.push(clock.now());
      clock.setTimeout(() => seen.push(clock.now()), 30);
    }, 10);
    clock.advance(100);
    expect(seen).toEqual([10, 40]);
  });

  it('treats a negative delay as zero', () => {
    const clock = new SimulatedClock(500);
    let fired = false;
    clock.setTimeout(() => {
      fired = true;
    }, -20);
    clock.advance(0);
    expect(fired).toBe(true);
  });

  it('clearTimeout prevents a timer from firing', () => {
    const clock = new SimulatedClock(0);
    const fired: string[] = [];
    const keep = clock.setTimeout(() => fired.push('keep'), 10);
    const drop = clock.setTimeout(() => fired.push('drop'), 20);
    clock.clearTimeout(drop);
    expect(clock.pending).toBe(1);
    clock.advance(100);
    expect(fired).toEqual(['keep']);
    // Clearing a fired or already-cleared handle is ignored.
    clock.clearTimeout(keep);
    clock.clearTimeout(drop);
    expect(clock.pending).toBe(0);
  });

  it('a timer can clear a later one before it fires', () => {
    const clock = new SimulatedClock(0);
    const fired: string[] = [];
    const later = clock.setTimeout(() => fired.push('later'), 50);
    clock.setTimeout(() => {
      fired.push('first');
      clock.clearTimeout(later);
    }, 10);
    clock.advance(100);
    expect(fired).toEqual(['first']);
  });

  it.each([-1, Number.NaN])('advance(%s) throws RangeError and leaves time alone', (ms) => {
    const clock = new SimulatedClock(10);
    expect(() => {
      clock.advance(ms);
    }).toThrow(RangeError);
    expect(clock.now()).toBe(10);
  });
});

describe('systemClock', () => {
  it('reads the wall clock', () => {
    const before = Date.now();
    const now = systemClock.now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });

  it('clearTimeout stops a real timer', async () => {
    let fired = false;
    const handle = systemClock.setTimeout(() => {
      fired = true;
    }, 0);
    systemClock.clearTimeout(handle);
    // A timer set later with the same delay fires after the cleared one would have.
    await new Promise<void>((resolve) => {
      systemClock.setTimeout(resolve, 0);
    });
    expect(fired).toBe(false);
  });
});

describe('createSequentialIdSource', () => {
  it('is deterministic: two sources give the same sequence', () => {
    const take = (): string[] => {
      const ids = createSequentialIdSource();
      return [ids.id('run'), ids.id('step'), ids.traceId(), ids.spanId(), ids.id('request')];
    };
    const first = take();
    expect(first).toEqual(take());
    expect(first).toEqual([
      'run_1',
      'step_2',
      '00000000000000000000000000000003',
      '0000000000000004',
      'req_5',
    ]);
  });

  it('never repeats an id and counts each instance on its own', () => {
    const a = createSequentialIdSource();
    const b = createSequentialIdSource();
    const seen = new Set<string>();
    for (let i = 0; i < 100; i++) seen.add(a.id('step'));
    expect(seen.size).toBe(100);
    expect(b.id('step')).toBe('step_1');
  });

  it('uses one readable prefix per kind', () => {
    const ids = createSequentialIdSource();
    expect(ids.id('actor')).toMatch(/^act_\d+$/);
    expect(ids.id('flow')).toMatch(/^flow_\d+$/);
    expect(ids.id('fact')).toMatch(/^fact_\d+$/);
    expect(ids.id('checkpoint')).toMatch(/^cp_\d+$/);
  });

  it('gives W3C-shaped trace and span ids that are not all zero', () => {
    const ids = createSequentialIdSource();
    const t = ids.traceId();
    const s = ids.spanId();
    expect(t).toMatch(/^[0-9a-f]{32}$/);
    expect(s).toMatch(/^[0-9a-f]{16}$/);
    expect(t).not.toBe('0'.repeat(32));
    expect(s).not.toBe('0'.repeat(16));
  });
});

describe('defaultIdSource', () => {
  it('traceId() is 32 lowercase hex digits, not all zero, and unique', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const t = defaultIdSource.traceId();
      expect(t).toMatch(/^[0-9a-f]{32}$/);
      expect(t).not.toBe('0'.repeat(32));
      seen.add(t);
    }
    expect(seen.size).toBe(200);
  });

  it('spanId() is 16 lowercase hex digits', () => {
    expect(defaultIdSource.spanId()).toMatch(/^[0-9a-f]{16}$/);
  });

  it('id() is the kind prefix, the time in ms (12 hex digits) and 80 random bits: unique, and later ids sort later', () => {
    const seen = new Set<string>();
    const before = Date.now();
    let last = '';
    for (let i = 0; i < 2_000; i++) {
      const id = defaultIdSource.id('request');
      expect(id).toMatch(/^req_[0-9a-f]{32}$/);
      const ms = parseInt(id.slice(4, 16), 16);
      expect(ms).toBeGreaterThanOrEqual(before);
      expect(ms).toBeLessThanOrEqual(Date.now());
      // Ordered by time: an id of a later millisecond sorts after every earlier one.
      if (id.slice(4, 16) > last.slice(4, 16)) expect(id > last).toBe(true);
      last = id;
      seen.add(id);
    }
    expect(seen.size).toBe(2_000);
  });
});
