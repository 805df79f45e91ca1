/**
 * @module The one clock of due wakes (issue 46): a single timer, set for the soonest due time
 * the store's index of wakes (and schedules) holds, not one timer per sleeper. When it rings,
 * everything due is handled and the timer is set again; a wake added sooner than the one it
 * waits for moves it. It also looks again every `MAX_WAIT_MS` at most, for wakes another
 * process added. Its timer does not hold the process open.
 */
import type { Clock, TimerHandle } from '../context/clock.js';
import type { Logger } from '../observability/logger.js';

/** The longest the clock waits before it looks at the store again. */
export const MAX_WAIT_MS = 30_000;

/** What the clock asks, and what it does when time comes. */
export interface WakeSource {
  /** The soonest due time of anything pending, or `null`. */
  next(): Promise<number | null>;
  /** Handles everything due at `now`. */
  fire(now: number): Promise<void>;
}

/** See the module. */
export class WakeClock {
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #sources: WakeSource[];
  #timer: TimerHandle | null = null;
  /** When the timer is set to ring; `Infinity` with none set. */
  #at = Infinity;
  #firing = false;
  /** Set while firing when a wake came due before the next look. */
  #again = false;
  #stopped = false;

  constructor(clock: Clock, logger: Logger, ...sources: WakeSource[]) {
    this.#clock = clock;
    this.#logger = logger;
    this.#sources = sources;
  }

  /** Adds a source (a schedules table) beside the wakes. */
  add(source: WakeSource): void {
    this.#sources.push(source);
    this.poke();
  }

  /** Starts: looks at the store now. */
  start(): void {
    this.poke();
  }

  /** Looks at the store at once (after a restart, after a change elsewhere). */
  poke(): void {
    this.#set(this.#clock.now());
  }

  /** A wake due at `dueAt` was added: the timer rings by then. */
  added(dueAt: number): void {
    if (this.#firing) {
      if (dueAt <= this.#clock.now()) this.#again = true;
      return;
    }
    if (dueAt < this.#at) this.#set(dueAt);
  }

  #set(at: number): void {
    if (this.#stopped) return;
    if (this.#timer !== null) this.#clock.clearTimeout(this.#timer);
    const now = this.#clock.now();
    const target = Math.min(at, now + MAX_WAIT_MS);
    this.#at = target;
    this.#timer = this.#clock.setTimeout(
      () => {
        this.#timer = null;
        this.#at = Infinity;
        void this.#ring();
      },
      Math.max(0, target - now),
    );
    (this.#timer as { unref?: () => void }).unref?.();
  }

  async #ring(): Promise<void> {
    if (this.#stopped) return;
    this.#firing = true;
    this.#again = false;
    let next: number | null = null;
    try {
      // Again while a wake came due as it fired (`added` sets `#again` meanwhile).
      for (let again = true; again; again = this.#takeAgain()) {
        const now = this.#clock.now();
        for (const source of this.#sources) await source.fire(now);
      }
      for (const source of this.#sources) {
        const at = await source.next();
        if (at !== null && (next === null || at < next)) next = at;
      }
    } catch (err) {
      this.#logger.error({ err }, 'due wakes could not be handled; trying again shortly');
      next = this.#clock.now() + 1_000;
    } finally {
      this.#firing = false;
    }
    this.#set(next ?? Infinity);
  }

  /** Whether to fire once more (a wake came due while firing), clearing the mark. */
  #takeAgain(): boolean {
    const again = this.#again && !this.#stopped;
    this.#again = false;
    return again;
  }

  /** Handles everything due now (a fleet's `tick` job); resolves once done. */
  async ringNow(): Promise<void> {
    if (this.#firing) {
      this.#again = true;
      return;
    }
    if (this.#timer !== null) this.#clock.clearTimeout(this.#timer);
    this.#timer = null;
    this.#at = Infinity;
    await this.#ring();
  }

  /** Stops: the timer is cleared and never set again. */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== null) this.#clock.clearTimeout(this.#timer);
    this.#timer = null;
  }
}
