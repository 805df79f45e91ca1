/**
 * @module The supervisor of a worker pool's threads: one-for-one restarts (a dead thread is
 * replaced; only its step fails) with exponential backoff, and a maximum restart intensity.
 * Past `maxRestarts` in `withinMs` the pool is degraded: new steps are refused until the
 * window holds no more than that many restarts again.
 */
import type { Clock } from '../context/clock.js';

/** Options of the restart strategy. */
export interface RestartOptions {
  /** The first backoff after a restart; default 100 ms. */
  readonly minBackoffMs?: number;
  /** The longest backoff; default 10 000 ms. */
  readonly maxBackoffMs?: number;
  /** Each backoff varies by up to this fraction either way; default 0.2. */
  readonly jitter?: number;
  /** Restarts allowed within `withinMs` before the pool is degraded; default 5. */
  readonly maxRestarts?: number;
  /** The window of the restart intensity; default 60 000 ms. */
  readonly withinMs?: number;
}

/** Defaults of {@link RestartOptions}. */
export const RESTART_DEFAULTS = {
  minBackoffMs: 100,
  maxBackoffMs: 10_000,
  jitter: 0.2,
  maxRestarts: 5,
  withinMs: 60_000,
} as const;

/** What {@link RestartSupervisor.restarted} concluded. */
export type RestartVerdict =
  | { readonly kind: 'backoff'; readonly delayMs: number }
  | { readonly kind: 'degraded'; readonly restarts: number; readonly withinMs: number };

/**
 * Tracks a pool's thread restarts. Steps ask {@link admit} before they start: it waits out
 * the current backoff, or refuses while the pool is degraded.
 */
export class RestartSupervisor {
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #o: Required<RestartOptions>;
  /** Clock times of recent restarts, oldest first. */
  #restarts: number[] = [];
  /** Restarts since the last step that ended well: the backoff's exponent. */
  #consecutive = 0;
  #resumeAt = 0;

  constructor(clock: Clock, options: RestartOptions = {}, random: () => number = Math.random) {
    const o = { ...RESTART_DEFAULTS, ...options };
    for (const [key, value] of Object.entries(o)) {
      if (!(Number.isFinite(value) && value >= 0)) {
        throw new RangeError(`workers.restart.${key} must be a number >= 0, got ${value}`);
      }
    }
    if (o.maxBackoffMs < o.minBackoffMs || o.jitter > 1) {
      throw new RangeError('workers.restart: need minBackoffMs <= maxBackoffMs and jitter <= 1');
    }
    this.#clock = clock;
    this.#random = random;
    this.#o = o;
  }

  /** True while more than `maxRestarts` restarts fall within the window. */
  get degraded(): boolean {
    return this.#recent() > this.#o.maxRestarts;
  }

  /** Restarts within the window now. */
  get restarts(): number {
    return this.#recent();
  }

  /** A thread died and was replaced. */
  restarted(): RestartVerdict {
    const now = this.#clock.now();
    this.#restarts.push(now);
    const recent = this.#recent();
    if (recent > this.#o.maxRestarts) {
      return { kind: 'degraded', restarts: recent, withinMs: this.#o.withinMs };
    }
    const base = Math.min(this.#o.maxBackoffMs, this.#o.minBackoffMs * 2 ** this.#consecutive);
    const delayMs = Math.round(base * (1 + this.#o.jitter * (2 * this.#random() - 1)));
    this.#consecutive++;
    this.#resumeAt = Math.max(this.#resumeAt, now + delayMs);
    return { kind: 'backoff', delayMs };
  }

  /** A step ended without its thread dying: the backoff starts from the minimum again. */
  healthy(): void {
    this.#consecutive = 0;
  }

  /**
   * Whether a step may start: `true` at once, `false` while the pool is degraded, or a
   * promise that resolves (to the same) after the current backoff. Synchronous on the
   * usual path, which costs a step nothing.
   */
  admit(): boolean | Promise<boolean> {
    if (this.degraded) return false;
    const wait = this.#resumeAt - this.#clock.now();
    if (wait <= 0) return true;
    return new Promise<boolean>((resolve) => {
      this.#clock.setTimeout(() => {
        resolve(!this.degraded);
      }, wait);
    });
  }

  #recent(): number {
    const since = this.#clock.now() - this.#o.withinMs;
    while (this.#restarts.length > 0 && (this.#restarts[0] ?? 0) <= since) this.#restarts.shift();
    return this.#restarts.length;
  }
}
