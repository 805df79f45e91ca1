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
import { STEP_ENDED } from '../store/records.js';
import { flushed, type RunStore } from '../store/run-store.js';
import type { StepEvent } from '../streams/events.js';
import type { StepFeeds } from '../actors/step-feeds.js';
import type { FlowApiDeps } from './flow-api.js';
import { cancelStep, onFleet } from './run-control.js';

/** Options of `runtime.followStep`. */
export interface FollowOptions {
  /** Only events with `seq` above this (a client's `Last-Event-ID`); default 0, all. */
  readonly afterSeq?: number;
  /**
   * How often the log of a step this runtime does not run is read again, in milliseconds;
   * default 100. A step of this runtime wakes its followers itself.
   */
  readonly pollMs?: number;
  /**
   * The follower's connection: aborting it is a disconnect. The follow ends, and if this
   * was the step's last open follow, the step is live and its run has
   * `cancel_on_disconnect`, the step is cancelled (API.md). The HTTP server passes its
   * socket's close; an embedded caller passes its own signal.
   */
  readonly signal?: AbortSignal;
}

/** What following needs from the runtime. */
export interface FollowDeps {
  readonly store: RunStore;
  readonly clock: Clock;
  readonly feeds: StepFeeds;
  /** The open follows of each step (of this runtime), counted here. */
  readonly open: Map<string, number>;
  /** Told when a follower disconnected and no follow of the step is left open. */
  readonly lastDisconnected: (stepId: string) => void;
}

/** Events a follower reads from the log at once. */
export const FOLLOW_PAGE = 256;

/** The events that end a step's log. */
const LAST: ReadonlySet<string> = new Set(['end', 'error']);
/** The statuses of a step whose log is complete. */

/**
 * The step's events with `seq > afterSeq`, in order, then each new one once it is durable,
 * ending after the step's `end` or `error` (at once for a step that has ended), or when
 * `signal` aborts (see {@link FollowOptions.signal}). Rejects with `NotFoundError` for an
 * unknown step. Stop early with `break` (or `return()`): that closes the follow without
 * counting as a disconnect.
 */
export async function* followStep(
  deps: FollowDeps,
  stepId: string,
  options: FollowOptions = {},
): AsyncGenerator<StepEvent, void, undefined> {
  const signal = options.signal;
  for await (const page of followStepPages(deps, stepId, options)) {
    for (const event of page) {
      if (signal?.aborted) return;
      yield event;
    }
  }
}

/**
 * {@link followStep} a page at a time: the events one read of the log returned (at most
 * {@link FOLLOW_PAGE}, never empty), the last page ending with the step's `end` or `error`.
 * What a writer that can send many events at once takes (the SSE stream: one socket write
 * a page). The same options, errors and disconnect.
 */
export async function* followStepPages(
  deps: FollowDeps,
  stepId: string,
  options: FollowOptions = {},
): AsyncGenerator<readonly StepEvent[], void, undefined> {
  let last = options.afterSeq ?? 0;
  const pollMs = options.pollMs ?? 100;
  const signal = options.signal;
  if (!(Number.isInteger(last) && last >= 0)) {
    throw new RangeError(`followStep: afterSeq must be an integer >= 0, got ${String(last)}`);
  }
  if (!(Number.isFinite(pollMs) && pollMs > 0)) {
    throw new RangeError(`followStep: pollMs must be a number > 0, got ${String(pollMs)}`);
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError('followStep: signal must be an AbortSignal');
  }
  if (!(await deps.store.getStep(stepId))) throw new NotFoundError('step', stepId);
  // Told of every append of a step of this runtime from now on.
  const feed = deps.feeds.open(stepId);
  // This follow counts as open until it ends or its follower disconnects.
  let open = true;
  const close = (): number => {
    if (!open) return -1;
    open = false;
    const left = (deps.open.get(stepId) ?? 1) - 1;
    if (left > 0) deps.open.set(stepId, left);
    else deps.open.delete(stepId);
    return left;
  };
  deps.open.set(stepId, (deps.open.get(stepId) ?? 0) + 1);
  const onAbort = (): void => {
    feed.close();
    // Told at once, even while the follower is not reading: it has gone.
    if (close() === 0) deps.lastDisconnected(stepId);
  };
  if (signal?.aborted) onAbort();
  else signal?.addEventListener('abort', onAbort, { once: true });
  // Whether an empty read must look at the step's record: at first (a step that has
  // ended, or a follow from past its end), and after a wait the poll ended — not after an
  // append woke the follower: a step of this runtime logs its `end` before its record
  // ends, and that append wakes the follower, so the next read has the `end`.
  let checkEnded = true;
  try {
    for (;;) {
      if (signal?.aborted) return;
      // Appends told from here on show in `feed.version`: one between this read and the
      // wait below sends the follower round again instead of waiting.
      const version = feed.version;
      // A page at a time: a follower holds at most FOLLOW_PAGE events, however long the
      // log it is behind on (a reader that stops reading holds no more).
      const events = await deps.store.readEvents(stepId, last, FOLLOW_PAGE);
      // Shown only once durable: whatever a follower has seen is in the log.
      await flushed(deps.store);
      if (events.length === 0) {
        // A step that has ended logged its last event before its record ended; but it may
        // have ended after the read above, its last events logged since: read once more.
        if (checkEnded && STEP_ENDED.has((await deps.store.getStep(stepId))?.status ?? '')) {
          if ((await deps.store.readEvents(stepId, last, 1)).length === 0) return;
          continue;
        }
        // An append during the read: read again. Else wait for one, or for the poll.
        checkEnded = feed.version === version && !(await feed.wait(deps.clock, pollMs));
        continue;
      }
      if (signal?.aborted) return;
      const end = events.findIndex((e) => LAST.has(e.type));
      const page = end === -1 ? events : events.slice(0, end + 1);
      last = (page.at(-1) as StepEvent).seq;
      yield page;
      if (end !== -1) return;
    }
  } finally {
    feed.close();
    signal?.removeEventListener('abort', onAbort);
    close();
  }
}

/**
 * A step's last follower disconnected: cancels the step if it is still live and its run
 * asked for `cancel_on_disconnect` (API.md). Resolves `true` when it cancelled. A step of
 * this runtime's fleet is cancelled on its pool; one that runs in another process merely
 * sharing the store is left alone (its own process cancels it).
 */
export async function cancelOnDisconnect(deps: FlowApiDeps, stepId: string): Promise<boolean> {
  const step = await deps.store.getStep(stepId);
  if (!step || STEP_ENDED.has(step.status)) return false;
  const run = await deps.store.getRun(step.run_id);
  if (!run?.cancel_on_disconnect) return false;
  // Live here, waiting for an approval, or queued or running on a fleet's pool.
  const live =
    deps.system.get(stepId) !== undefined ||
    step.status === 'waiting' ||
    (deps.dispatch !== null && onFleet(step));
  if (!live) return false;
  await cancelStep(deps, stepId);
  return true;
}
