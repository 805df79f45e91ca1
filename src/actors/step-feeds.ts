/**
 * @module The wake-ups of a step log's followers: each step actor of the runtime tells its
 * feeds when it has appended, and a follower waiting for the next append (see
 * `runs/step-follow.ts`) wakes then, or after its poll interval, whichever comes first.
 */
import type { Clock } from '../context/clock.js';

/** The wake-ups of followers, by step: told by each step of the runtime that appends. */
export class StepFeeds {
  readonly #waiting = new Map<string, Set<() => void>>();

  /** A step appended events to its log: wakes its followers. */
  appended(stepId: string): void {
    const wakers = this.#waiting.get(stepId);
    if (!wakers) return;
    this.#waiting.delete(stepId);
    for (const wake of wakers) wake();
  }

  /**
   * A wait for the step's next append, or `ms` on `clock`, whichever comes first; `cancel`
   * gives it up (and its timer).
   */
  watch(stepId: string, clock: Clock, ms: number): Watch {
    let resolve!: () => void;
    const woken = new Promise<void>((r) => {
      resolve = r;
    });
    const done = (): void => {
      clock.clearTimeout(timer);
      const set = this.#waiting.get(stepId);
      set?.delete(done);
      if (set?.size === 0) this.#waiting.delete(stepId);
      resolve();
    };
    const timer = clock.setTimeout(done, ms);
    let wakers = this.#waiting.get(stepId);
    if (!wakers) {
      wakers = new Set();
      this.#waiting.set(stepId, wakers);
    }
    wakers.add(done);
    return { woken, cancel: done };
  }
}

/** A follower's wait for the next append (see {@link StepFeeds.watch}). */
export interface Watch {
  readonly woken: Promise<void>;
  cancel(): void;
}
