/**
 * @module The wake-ups of a step log's followers: each step actor of the runtime tells its
 * feeds when it has appended, and a follower waiting for the next append (see
 * `runs/step-follow.ts`) wakes then, or after its poll interval, whichever comes first.
 *
 * A follower opens a {@link Feed} for as long as it follows: an append bumps the feed's
 * `version` (a counter, no allocation) and wakes it if it waits. A follower that keeps up
 * reads, sees the version moved while it read, and reads again — no timer and no promise
 * per append; it waits (a timer for the poll) only when a read found nothing new.
 */
import type { Clock } from '../context/clock.js';

/** The wake-ups of followers, by step: told by each step of the runtime that appends. */
export class StepFeeds {
  readonly #open = new Map<string, Set<Feed>>();
  #watcher: FeedWatcher | null = null;

  /**
   * Told when a step gets its first open feed and when its last one closes: how the appends
   * of a step that runs elsewhere (a fleet worker) reach this runtime's followers.
   */
  watch(watcher: FeedWatcher): void {
    this.#watcher = watcher;
  }

  /** A step appended events to its log: tells its open feeds. */
  appended(stepId: string): void {
    const feeds = this.#open.get(stepId);
    if (!feeds) return;
    for (const feed of feeds) feed.bump();
  }

  /** A feed of `stepId`'s appends, open until its `close`. */
  open(stepId: string): Feed {
    let feeds = this.#open.get(stepId);
    if (!feeds) {
      feeds = new Set();
      this.#open.set(stepId, feeds);
      this.#watcher?.opened(stepId);
    }
    const feed = new Feed(() => {
      feeds.delete(feed);
      if (feeds.size === 0 && this.#open.get(stepId) === feeds) {
        this.#open.delete(stepId);
        this.#watcher?.closed(stepId);
      }
    });
    feeds.add(feed);
    return feed;
  }
}

/** Told of the steps with open feeds (see {@link StepFeeds.watch}). */
export interface FeedWatcher {
  opened(stepId: string): void;
  closed(stepId: string): void;
}

/** One follower's view of a step's appends (see {@link StepFeeds.open}). */
export class Feed {
  /** Appends told since the feed opened: read it before a read of the log. */
  version = 0;
  #wake: (() => void) | null = null;
  #closed = false;
  readonly #detach: () => void;

  constructor(detach: () => void) {
    this.#detach = detach;
  }

  /** @internal An append: counts it, wakes the waiting follower. */
  bump(): void {
    this.version++;
    this.#wake?.();
  }

  /**
   * Resolves at the next append (`true`), after `ms` on `clock` (the poll of a step that
   * runs elsewhere; `false`), or at `close` (`false`), whichever comes first.
   */
  wait(clock: Clock, ms: number): Promise<boolean> {
    if (this.#closed) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const timer = clock.setTimeout(() => {
        this.#wake = null;
        resolve(false);
      }, ms);
      this.#wake = () => {
        this.#wake = null;
        clock.clearTimeout(timer);
        resolve(!this.#closed);
      };
    });
  }

  /** Stops the feed: a wait resolves, no append is told any more. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#detach();
    this.#wake?.();
  }
}
