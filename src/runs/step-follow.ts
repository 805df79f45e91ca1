/**
 * @module Following a step's log: every event after a `seq`, then the new ones as they are
 * logged, until the step's `end` or `error` — what `GET /v1/steps/{id}/stream` serves, with
 * `Last-Event-ID` as the `seq` (API.md). The log is the truth: a follower reads it, from the
 * store, at its own pace, and a step of this runtime only wakes it when it has appended
 * (`StepFeeds`, `step-feeds.ts`). A step running elsewhere (another process sharing the store) is read
 * every `pollMs`. The producer never waits for a follower and nothing is dropped: a slow
 * follower reads what it has not read yet from the log.
 */
import type { Clock } from '../context/clock.js';
import { NotFoundError } from '../errors/not-found-error.js';
import { flushed, type RunStore } from '../store/run-store.js';
import type { StepEvent } from '../streams/events.js';
import type { StepFeeds, Watch } from '../actors/step-feeds.js';

/** Options of `runtime.followStep`. */
export interface FollowOptions {
  /** Only events with `seq` above this (a client's `Last-Event-ID`); default 0, all. */
  readonly afterSeq?: number;
  /**
   * How often the log of a step this runtime does not run is read again, in milliseconds;
   * default 100. A step of this runtime wakes its followers itself.
   */
  readonly pollMs?: number;
}

/** What following needs from the runtime. */
export interface FollowDeps {
  readonly store: RunStore;
  readonly clock: Clock;
  readonly feeds: StepFeeds;
}

/** The events that end a step's log. */
const LAST: ReadonlySet<string> = new Set(['end', 'error']);
/** The statuses of a step whose log is complete. */
const ENDED: ReadonlySet<string> = new Set(['succeeded', 'failed', 'cancelled']);

/**
 * The step's events with `seq > afterSeq`, in order, then each new one once it is durable,
 * ending after the step's `end` or `error` (at once for a step that has ended). Rejects with
 * `NotFoundError` for an unknown step. Stop early with `break` (or `return()`).
 */
export async function* followStep(
  deps: FollowDeps,
  stepId: string,
  options: FollowOptions = {},
): AsyncGenerator<StepEvent, void, undefined> {
  let last = options.afterSeq ?? 0;
  const pollMs = options.pollMs ?? 100;
  if (!(Number.isInteger(last) && last >= 0)) {
    throw new RangeError(`followStep: afterSeq must be an integer >= 0, got ${String(last)}`);
  }
  if (!(Number.isFinite(pollMs) && pollMs > 0)) {
    throw new RangeError(`followStep: pollMs must be a number > 0, got ${String(pollMs)}`);
  }
  if (!(await deps.store.getStep(stepId))) throw new NotFoundError('step', stepId);
  let watch: Watch | null = null;
  try {
    for (;;) {
      // The wait for the next append starts before the read: whatever is logged between
      // them wakes it, and the next read has it.
      watch = deps.feeds.watch(stepId, deps.clock, pollMs);
      const events = await deps.store.readEvents(stepId, last);
      // Shown only once durable: whatever a follower has seen is in the log.
      await flushed(deps.store);
      if (events.length === 0) {
        // A step that has ended logged its last event before its record ended.
        if (ENDED.has((await deps.store.getStep(stepId))?.status ?? '')) return;
        await watch.woken;
        continue;
      }
      watch.cancel();
      for (const event of events) {
        last = event.seq;
        yield event;
        if (LAST.has(event.type)) return;
      }
    }
  } finally {
    watch?.cancel();
  }
}
