/** @module Injected time: the system clock and a simulated clock for tests. */

/** An opaque handle for a timer set through a {@link Clock}. */
export type TimerHandle = { readonly __timer: unique symbol } | object;

/**
 * The source of time for everything in a runtime. Inject a {@link SimulatedClock} in tests
 * so timeouts and deadlines fire when the test says, not when the wall clock does.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `fn` after `ms` milliseconds. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer; a handle that already fired or was cleared is ignored. */
  clearTimeout(handle: TimerHandle): void;
}

/**
 * The wall clock. Its timers keep the process alive like any Node timer; the runtime clears
 * each step's timers when the step ends.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout(handle) {
    clearTimeout(handle as NodeJS.Timeout);
  },
};

interface SimulatedTimer {
  readonly at: number;
  readonly order: number;
  readonly fn: () => void;
}

/**
 * A clock that only moves when told to. Timers fire, in order of due time, during
 * {@link SimulatedClock.advance}.
 *
 * @example
 * const clock = new SimulatedClock(0);
 * clock.setTimeout(() => console.log('fired'), 100);
 * clock.advance(100); // logs "fired"
 */
export class SimulatedClock implements Clock {
  #now: number;
  #order = 0;
  readonly #timers = new Set<SimulatedTimer>();

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer: SimulatedTimer = { at: this.#now + Math.max(0, ms), order: this.#order++, fn };
    this.#timers.add(timer);
    return timer;
  }

  clearTimeout(handle: TimerHandle): void {
    this.#timers.delete(handle as SimulatedTimer);
  }

  /** Number of timers not yet fired or cleared. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Moves time forward by `ms`, firing every timer that falls due, earliest first. */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`SimulatedClock.advance: ms must be >= 0, got ${ms}`);
    const target = this.#now + ms;
    for (;;) {
      let next: SimulatedTimer | undefined;
      for (const t of this.#timers) {
        if (
          t.at <= target &&
          (!next || t.at < next.at || (t.at === next.at && t.order < next.order))
        )
          next = t;
      }
      if (!next) break;
      this.#timers.delete(next);
      this.#now = Math.max(this.#now, next.at);
      next.fn();
    }
    this.#now = target;
  }
}

let lastIsoMs = Number.NaN;
let lastIso = '';

/**
 * `new Date(ms).toISOString()`, remembering the last result: the records of one short run
 * are usually stamped within the same millisecond.
 */
export function isoTime(ms: number): string {
  if (ms !== lastIsoMs) {
    lastIso = new Date(ms).toISOString();
    lastIsoMs = ms;
  }
  return lastIso;
}
