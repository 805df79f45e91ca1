/**
 * @module The trace UI's one polling loop: a view's `read` run now and again — never two at
 * once (asked while one is out, it runs once more right after) — at the delay each read
 * returns (`null`: read no more until poked). Stopped, a poller reads no more and a read
 * still out learns it (`current()` turns false) so it draws nothing. The run, thread, runs
 * and threads views each keep one per thing shown.
 */

/** A view's read: draws what it read, and says when to read again (ms), or `null`. */
export type PollRead = (current: () => boolean) => Promise<number | null>;

/** A running poll; see {@link createPoller}. */
export interface Poller {
  /** Reads in `ms` (default now), or right after the read that is out. */
  poke(ms?: number): void;
  /** Reads no more; a read that is out is told through its `current()`. */
  stop(): void;
  /** Whether {@link Poller.stop} has not been called. */
  readonly active: boolean;
}

/**
 * A poller of `read`, idle until poked.
 *
 * @example
 * const poller = createPoller(async (current) => {
 *   const runs = await getJson<Run[]>('/v1/runs');
 *   if (!current()) return null;
 *   draw(runs);
 *   return 5_000;
 * });
 * poller.poke();
 */
export function createPoller(read: PollRead): Poller {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let busy = false;
  let again = false;
  let stopped = false;
  const current = (): boolean => !stopped;

  function schedule(ms: number | null): void {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    if (stopped || ms === null) return;
    timer = setTimeout(() => void run(), ms);
  }

  async function run(): Promise<void> {
    timer = null;
    if (stopped) return;
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    let next: number | null = null;
    try {
      next = await read(current);
    } finally {
      busy = false;
    }
    if (again) {
      again = false;
      next = 0;
    }
    schedule(next);
  }

  return {
    poke(ms = 0) {
      if (busy && ms === 0) again = true;
      else schedule(ms);
    },
    stop() {
      stopped = true;
      schedule(null);
    },
    get active() {
      return !stopped;
    },
  };
}
