/**
 * @module A run kept live for its page, without a poll: one run stream
 * (`GET /v1/runs/{run_id}/stream`) hands over the run and each of its steps as they are made
 * and change — a submitted step, a delegation, a start, an end, usage — and the page is told
 * of the whole state once per burst of frames (a frame's changes are gathered for
 * {@link SETTLE_MS}). While a step or the run is live, a clock ticks so that running bars
 * grow with time: a timer of the page, never a request.
 */
import { followSse, type FollowEnd } from './api.js';
import type { TimelineStep } from './timeline-model.js';

/** How long the frames of one burst are gathered before the page draws them, ms. */
export const SETTLE_MS = 40;
/** How often the bars of live steps are drawn longer, ms. */
export const CLOCK_MS = 250;

const LIVE_RUN: ReadonlySet<string> = new Set(['running', 'waiting', 'cancelling']);
const LIVE_STEP: ReadonlySet<string> = new Set(['queued', 'running', 'waiting']);

/**
 * Follows `GET /v1/runs/{run_id}/stream`: `onFrame(type, data)` for each `run` and `step`
 * frame. The server closes the stream once the run has ended with no live step; the reader
 * sees that moment itself (`ended` says so after each frame) and stops there — any other
 * close is a drop, and the stream is opened again (it starts with the whole state again).
 */
function followRun(
  runId: string,
  onFrame: (type: string, data: unknown) => void,
  ended: () => boolean,
  signal: AbortSignal,
): Promise<FollowEnd> {
  return followSse(
    `/v1/runs/${encodeURIComponent(runId)}/stream`,
    (frame) => {
      onFrame(frame.event, JSON.parse(frame.data) as unknown);
      return ended() ? 'done' : 'next';
    },
    signal,
  );
}

/** A step of the run as the stream gives it: the Step body (at least what a timeline reads). */
export type LiveStep = TimelineStep & { readonly run_id: string; readonly [key: string]: unknown };

/** The run as the stream gives it: the Run body. */
export interface LiveRunBody {
  readonly run_id: string;
  readonly status: string;
  readonly [key: string]: unknown;
}

/** What a followed run tells its page. */
export interface RunFollowHooks {
  /** The run, its steps in creation order: after a burst of changes. */
  readonly changed: (run: LiveRunBody | null, steps: readonly LiveStep[]) => void;
  /** A tick of the clock while something is live: draw the live bars to `now`. */
  readonly tick: (now: number) => void;
  /** The stream was refused for good (404, 401, …). */
  readonly failed: (err: unknown) => void;
}

/** A followed run; {@link RunFollow.stop} closes its stream and its clock. */
export interface RunFollow {
  readonly steps: () => readonly LiveStep[];
  readonly run: () => LiveRunBody | null;
  stop(): void;
}

/** Follows run `runId`; see the module. */
export function followRunLive(runId: string, hooks: RunFollowHooks): RunFollow {
  const ctrl = new AbortController();
  const byId = new Map<string, LiveStep>();
  let order: LiveStep[] = [];
  let run: LiveRunBody | null = null;
  let settle: ReturnType<typeof setTimeout> | null = null;
  let clock: ReturnType<typeof setInterval> | null = null;

  const live = (): boolean =>
    (run !== null && LIVE_RUN.has(run.status)) || order.some((s) => LIVE_STEP.has(s.status));

  function syncClock(): void {
    const want = !ctrl.signal.aborted && live();
    if (want && clock === null) {
      clock = setInterval(() => {
        hooks.tick(Date.now());
      }, CLOCK_MS);
    } else if (!want && clock !== null) {
      clearInterval(clock);
      clock = null;
    }
  }

  function flush(): void {
    settle = null;
    if (ctrl.signal.aborted) return;
    hooks.changed(run, order);
    syncClock();
  }

  function onFrame(type: string, data: unknown): void {
    if (type === 'run') {
      run = data as LiveRunBody;
    } else if (type === 'step') {
      const step = data as LiveStep;
      const known = byId.has(step.step_id);
      byId.set(step.step_id, step);
      // In creation order: a new step goes last, a known one stays where it is.
      order = known ? order.map((s) => (s.step_id === step.step_id ? step : s)) : [...order, step];
    } else {
      return;
    }
    settle ??= setTimeout(flush, SETTLE_MS);
  }

  followRun(runId, onFrame, () => run !== null && !live(), ctrl.signal)
    .then(() => {
      // The run and its steps have ended: draw the last state, stop the clock.
      if (settle !== null) clearTimeout(settle);
      flush();
    })
    .catch((err: unknown) => {
      if (!ctrl.signal.aborted) hooks.failed(err);
    });

  return {
    steps: () => order,
    run: () => run,
    stop() {
      ctrl.abort();
      if (settle !== null) clearTimeout(settle);
      if (clock !== null) clearInterval(clock);
      settle = null;
      clock = null;
    },
  };
}
