/**
 * @module The live trace of one run, as a run's page and an agent's page (an actor's messages
 * are the steps of its run) show it: the timeline (a bar per step on one time axis,
 * `timeline.ts`), the trace tree of its steps by `parent_step_id`, and the step panel of the
 * opened step. Kept live without a poll: the run's stream (`GET /v1/runs/{id}/stream`) brings
 * each new step and each change, a clock draws the live bars longer, and the streams of the
 * opened step and of up to two live steps are followed (tokens, a first token's time). A run
 * with `cancel_on_disconnect` never has its live steps followed: closing the last stream of a
 * live step would cancel it (its run stream cancels nothing). Its page draws the rest (the
 * run's or the actor's figures) from what {@link RunTraceHooks.changed} hands it.
 */
import type { ActionHooks } from './actions.js';
import type { Run, Step, StepEventData } from './api-types.js';
import { el } from './dom.js';
import { LIVE_STEP } from './format.js';
import { createStepDetail, type StepLog } from './step-detail.js';
import { createStepFollows, type StepFollows } from './step-follows.js';
import { createTimeline } from './timeline.js';
import { followRunLive, type RunFollow } from './timeline-live.js';
import { timelineModel } from './timeline-model.js';
import { createTraceTree } from './trace-tree.js';

// Streams of live steps followed at once, besides the opened step's: a browser opens about
// six connections to one server; the run's stream takes one, an action's POST another.
const MAX_FOLLOWS = 2;

/** What the page says of a run with `cancel_on_disconnect` (and the step panel of its live steps). */
export const NOT_FOLLOWED =
  'This run has cancel_on_disconnect: closing the last stream of a live step cancels it, ' +
  'so the page does not follow its live steps. Their events show here once they end.';

/** What a run's trace tells its page, and asks of it. */
export interface RunTraceHooks {
  /** The href of the page with step `stepId` of run `runId` open (`null`: none open). */
  readonly href: (runId: string, stepId: string | null) => string;
  /** Opens step `stepId` (a node of the tree was clicked). */
  readonly open: (runId: string, stepId: string) => void;
  /**
   * A step's name on the timeline and in the tree instead of its own (`null`: its own);
   * `root` is its place among the run's steps without a parent (1, 2, …), or `null` for a
   * child.
   */
  readonly label?: (step: Step, root: number | null) => string | null;
  /** The run and its steps as its stream last gave them, once they are drawn. */
  readonly changed: (run: Run | null, steps: readonly Step[], now: number) => void;
  /** A tick of the clock while something is live. */
  readonly tick: (run: Run | null, now: number) => void;
  /** The run's stream, or a step's, was refused for good (404, 401, …). */
  readonly failed: (err: unknown) => void;
  /** The step panel's action (cancel the step; without it, the panel has none). */
  readonly acted?: ActionHooks;
  /** What the timeline and the tree say while the run has no step. */
  readonly empty: string;
  /**
   * The `data-testid`s of the tree, its empty note and the step panel (default `trace-tree`,
   * `trace-empty`, `step-detail`): each view's own, so that one page has each once.
   */
  readonly testIds?: { readonly tree: string; readonly empty: string; readonly detail: string };
}

/** A run's trace; see {@link createRunTrace}. */
export interface RunTrace {
  /** The timeline's section. */
  readonly timeline: HTMLElement;
  /** The tree and the step panel beside it. */
  readonly body: HTMLElement;
  /**
   * Shows run `runId` with step `selected` open, following it from the first show on; true
   * when it was not the run shown before (the page starts afresh).
   */
  show(runId: string, selected: string | null): boolean;
  /** The run as its stream last gave it. */
  run(): Run | null;
  /** A step's place among the run's steps without a parent (1, 2, …), or null. */
  rootOf(stepId: string): number | null;
  /** Closes every stream and empties the trace. */
  stop(): void;
}

/** What the trace holds of the run it shows. */
interface TraceState {
  readonly runId: string;
  run: Run | null;
  /** step_id -> the step's record, as last read. */
  readonly steps: Map<string, Step>;
  /** The records in creation order. */
  order: Step[];
  /** step_id -> its place among the steps without a parent (1, 2, …). */
  readonly roots: Map<string, number>;
  /** step_id -> its log, while followed or once its stream ended. */
  readonly logs: Map<string, StepLog>;
  readonly follows: StepFollows;
  /** The run's stream and clock, from the first show on. */
  live: RunFollow | null;
  /** step_id -> when its first token came on its followed stream (ms): a running step's TTFT. */
  readonly firstTokens: Map<string, number>;
  selected: string | null;
}

/** The trace of one run at a time; see the module. */
export function createRunTrace(hooks: RunTraceHooks): RunTrace {
  const ids = hooks.testIds ?? { tree: 'trace-tree', empty: 'trace-empty', detail: 'step-detail' };
  const list = el('ul', { class: 'tree', 'data-testid': ids.tree });
  const empty = el('p', { class: 'empty', 'data-testid': ids.empty, hidden: true }, hooks.empty);
  const aside = el('aside', { class: 'detail', 'data-testid': ids.detail });
  const timeline = createTimeline({
    href: (stepId) => hooks.href(state?.runId ?? '', stepId),
    selected: () => state?.selected ?? null,
    empty: hooks.empty,
  });
  const body = el('div', { class: 'split' }, el('section', { class: 'trace' }, list, empty), aside);
  const labelOf = (step: Step): string | null =>
    hooks.label?.(step, state?.roots.get(step.step_id) ?? null) ?? null;
  const tree = createTraceTree(list, {
    open: (step) => {
      hooks.open(step.run_id, step.step_id);
    },
    ...(hooks.label
      ? {
          label: (step: Step) => {
            const name = labelOf(step);
            return name === null ? null : { name, type: step.type };
          },
        }
      : {}),
  });
  const detail = createStepDetail(
    aside,
    {
      step: (step) => hooks.href(step.run_id, step.step_id),
      close: (step) => hooks.href(step.run_id, null),
    },
    hooks.acted,
  );
  let state: TraceState | null = null;

  function fresh(id: string): TraceState {
    const logs = new Map<string, StepLog>();
    const s: TraceState = {
      runId: id,
      run: null,
      steps: new Map(),
      order: [],
      roots: new Map(),
      logs,
      follows: createStepFollows(logs, {
        event: (stepId, type, data) => {
          onLogEvent(s, stepId, type, data);
        },
        failed: (err) => {
          if (s === state) hooks.failed(err);
        },
      }),
      live: null,
      firstTokens: new Map(),
      selected: null,
    };
    return s;
  }

  function stop(): void {
    if (!state) return;
    state.live?.stop();
    state.follows.stop();
    state = null;
    tree.clear();
    timeline.clear();
    detail.hide();
  }

  function drawTimeline(s: TraceState, now: number): void {
    const steps = hooks.label
      ? s.order.map((st) => {
          const name = labelOf(st);
          return name === null ? st : { ...st, name };
        })
      : s.order;
    timeline.render(timelineModel(steps, { now, firstTokens: s.firstTokens }));
  }

  function childrenOf(s: TraceState, stepId: string): Step[] {
    return s.order.filter((st) => st.parent_step_id === stepId);
  }

  function node(s: TraceState, step: Step, now: number): void {
    tree.node(step, s.logs.get(step.step_id) ?? null, s.selected === step.step_id, now);
  }

  function renderDetail(s: TraceState): void {
    const step = s.selected !== null ? s.steps.get(s.selected) : undefined;
    if (!step) {
      detail.hide();
      return;
    }
    const log = s.logs.get(step.step_id) ?? null;
    const unfollowed = !log && s.run?.cancel_on_disconnect === true && LIVE_STEP.has(step.status);
    detail.show(step, log, childrenOf(s, step.step_id), unfollowed ? NOT_FOLLOWED : null);
  }

  function onLogEvent(s: TraceState, id: string, type: string, data: StepEventData): void {
    if (s !== state) return;
    if (type === 'token' && !s.firstTokens.has(id)) s.firstTokens.set(id, data.ts);
    const step = s.steps.get(id);
    if (step) node(s, step, Date.now());
    if (s.selected === id && detail.current() === id) {
      detail.event(type, data);
      if (step) detail.update(step, childrenOf(s, id));
    }
    // The step's record (and its parent's) change when it ends: the run's stream brings them.
  }

  /** Starts and stops streams: the opened step's, and the newest live steps' (MAX_FOLLOWS). */
  function syncFollows(s: TraceState): void {
    const guarded = s.run?.cancel_on_disconnect === true;
    const wanted: string[] = [];
    const selected = s.selected !== null ? s.steps.get(s.selected) : undefined;
    if (selected && !(guarded && LIVE_STEP.has(selected.status))) wanted.push(selected.step_id);
    if (!guarded) {
      const live = s.order.filter((st) => LIVE_STEP.has(st.status) && !wanted.includes(st.step_id));
      for (const st of live.slice(-MAX_FOLLOWS).reverse()) wanted.push(st.step_id);
    }
    s.follows.sync(wanted);
  }

  /** The run and its steps as the run's stream last gave them: draw them all. */
  function changed(s: TraceState, run: Run | null, steps: readonly Step[]): void {
    if (s !== state) return;
    s.run = run;
    s.order = [...steps];
    for (const step of steps) {
      s.steps.set(step.step_id, step);
      if (step.parent_step_id === null && !s.roots.has(step.step_id)) {
        s.roots.set(step.step_id, s.roots.size + 1);
      }
    }
    const now = Date.now();
    for (const step of steps) node(s, step, now);
    empty.hidden = steps.length > 0;
    drawTimeline(s, now);
    syncFollows(s);
    renderDetail(s);
    hooks.changed(run, steps, now);
  }

  /** The clock, while something is live: the live bars reach `now`. */
  function tick(s: TraceState, now: number): void {
    if (s !== state) return;
    // With no live step the timeline does not depend on now: an idle run (an actor between
    // messages, whose run stays running) is not drawn again four times a second.
    if (s.order.some((st) => LIVE_STEP.has(st.status))) drawTimeline(s, now);
    hooks.tick(s.run, now);
  }

  function follow(s: TraceState): RunFollow {
    return followRunLive(s.runId, {
      changed: (run, steps) => {
        changed(s, run as Run | null, steps as unknown as readonly Step[]);
      },
      tick: (now) => {
        tick(s, now);
      },
      failed: (err) => {
        // 401 (the key form is up), 404 (no such run, or not the caller's).
        if (s === state) hooks.failed(err);
      },
    });
  }

  return {
    timeline: timeline.root,
    body,
    show(runId, selected) {
      let s = state;
      const started = s?.runId !== runId;
      if (!s || started) {
        stop();
        s = fresh(runId);
        state = s;
      }
      s.selected = selected;
      if (s.run) {
        const now = Date.now();
        for (const step of s.order) node(s, step, now);
        drawTimeline(s, now);
        syncFollows(s);
        renderDetail(s);
      }
      s.live ??= follow(s);
      return started;
    },
    run: () => state?.run ?? null,
    rootOf: (stepId) => state?.roots.get(stepId) ?? null,
    stop,
  };
}
