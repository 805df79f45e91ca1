/**
 * @module One run in the trace UI — its status (with how many of its steps failed, counted
 * from the steps its stream gives), its figures, its timeline (a bar per step on one time
 * axis, `timeline.ts`), the trace tree of its steps by `parent_step_id`, and the operator's
 * actions (cancel the run, complete it, cancel the opened step). Kept live without a poll:
 * the run's stream (`GET /v1/runs/{id}/stream`) brings each new step and each change, a clock
 * draws the live bars longer, and the streams of the opened step and of up to two live steps
 * are followed (tokens, a first token's time). A run with `cancel_on_disconnect` never has
 * its live steps followed: closing the last stream of a live step would cancel it (its run
 * stream cancels nothing). Every token and cost figure is the API's.
 */
import { ACTIONABLE_RUN, actionButton, type ActionHooks } from './actions.js';
import type { Run, Step, StepEventData } from './api-types.js';
import { el, figureList, setText } from './dom.js';
import {
  LIVE_STEP,
  cost,
  duration,
  elapsed,
  failedCount,
  failedNote,
  tokens,
  when,
} from './format.js';
import { createStepDetail, type StepLog } from './step-detail.js';
import { createStepFollows, type StepFollows } from './step-follows.js';
import { createTimeline } from './timeline.js';
import { followRunLive, type RunFollow } from './timeline-live.js';
import { timelineModel } from './timeline-model.js';
import { createTraceTree } from './trace-tree.js';
import type { App, Route, View } from './view.js';

// Streams of live steps followed at once, besides the opened step's: a browser opens about
// six connections to one server; the run's stream takes one, an action's POST another.
const MAX_FOLLOWS = 2;
const NOT_FOLLOWED =
  'This run has cancel_on_disconnect: closing the last stream of a live step cancels it, ' +
  'so the page does not follow its live steps. Their events show here once they end.';

/** What the view holds of the run it shows. */
interface RunState {
  readonly runId: string;
  run: Run | null;
  /** step_id -> the step's record, as last read. */
  readonly steps: Map<string, Step>;
  /** The records in creation order. */
  order: Step[];
  /** step_id -> its log, while followed or once its stream ended. */
  readonly logs: Map<string, StepLog>;
  readonly follows: StepFollows;
  /** The run's stream and clock, from the first show on. */
  live: RunFollow | null;
  /** step_id -> when its first token came on its followed stream (ms): a running step's TTFT. */
  readonly firstTokens: Map<string, number>;
  selected: string | null;
}

/** The view of one run (the hash `#run=<id>[&step=<id>]`), in `root`. */
export function createRunView(root: HTMLElement, app: App): View {
  const back = el('a', { href: '#runs', class: 'back', 'data-testid': 'back-to-runs' }, '< Runs');
  const entry = el('h1', { 'data-testid': 'run-entry' });
  const status = el('span', { class: 'status', 'data-testid': 'run-status' });
  // How many of its steps failed (its status alone says `running` while it goes on).
  const failed = el('span', { class: 'failed-steps', 'data-testid': 'run-failed', hidden: true });
  const asThread = el('a', { 'data-testid': 'run-thread-link', hidden: true }, 'open as a thread');
  const runId = el('code', { 'data-testid': 'run-id' });
  const started = el('dd', { 'data-testid': 'run-started' });
  const took = el('dd', { 'data-testid': 'run-duration' });
  const used = el('dd', { 'data-testid': 'run-tokens' });
  const spent = el('dd', { 'data-testid': 'run-cost' });
  const note = el('p', { class: 'note', 'data-testid': 'run-note', hidden: true }, NOT_FOLLOWED);
  const list = el('ul', { class: 'tree', 'data-testid': 'trace-tree' });
  const empty = el(
    'p',
    { class: 'empty', 'data-testid': 'trace-empty', hidden: true },
    'No steps yet: submit one with POST /v1/runs/{run_id}/steps.',
  );
  const aside = el('aside', { class: 'detail', 'data-testid': 'step-detail' });
  // The operator's actions; a refused one shows the API's error in the banner. What an
  // accepted one changes comes on the run's stream.
  const acted: ActionHooks = {
    done: () => {
      app.clearError();
    },
    failed: (err) => {
      app.showError(err);
    },
  };
  const cancelRun = actionButton('cancel-run', 'run-cancel', acted);
  const completeRun = actionButton('complete-run', 'run-complete', acted);
  const timeline = createTimeline({
    href: (stepId) => app.href({ run: state?.runId ?? '', step: stepId }),
    selected: () => state?.selected ?? null,
  });
  root.append(
    el(
      'div',
      { class: 'toolbar' },
      back,
      entry,
      status,
      failed,
      asThread,
      el('span', { class: 'actions' }, completeRun.button, cancelRun.button),
    ),
    figureList([
      ['run', runId],
      ['started', started],
      ['duration', took],
      ['tokens', used],
      ['cost', spent],
    ]),
    note,
    timeline.root,
    el('div', { class: 'split' }, el('section', { class: 'trace' }, list, empty), aside),
  );
  const tree = createTraceTree(list, {
    open: (step) => {
      app.go({ run: step.run_id, step: step.step_id });
    },
  });
  const detail = createStepDetail(
    aside,
    {
      step: (step) => app.href({ run: step.run_id, step: step.step_id }),
      close: (step) => app.href({ run: step.run_id }),
    },
    acted,
  );
  let state: RunState | null = null;

  function fresh(id: string): RunState {
    const logs = new Map<string, StepLog>();
    const s: RunState = {
      runId: id,
      run: null,
      steps: new Map(),
      order: [],
      logs,
      follows: createStepFollows(logs, {
        event: (stepId, type, data) => {
          onLogEvent(s, stepId, type, data);
        },
        failed: (err) => {
          if (s === state) app.showError(err);
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
    cancelRun.target(null);
    completeRun.target(null);
  }

  function drawTimeline(s: RunState, now: number): void {
    timeline.render(timelineModel(s.order, { now, firstTokens: s.firstTokens }));
  }

  function childrenOf(s: RunState, stepId: string): Step[] {
    return s.order.filter((st) => st.parent_step_id === stepId);
  }

  function node(s: RunState, step: Step, now: number): void {
    tree.node(step, s.logs.get(step.step_id) ?? null, s.selected === step.step_id, now);
  }

  function renderRun(s: RunState, run: Run, now: number): void {
    void app.entryOf(run).then((name) => {
      if (state === s && s.run === run) setText(entry, name);
    });
    setText(status, run.status);
    status.dataset['status'] = run.status;
    setText(runId, run.run_id);
    setText(started, when(run.created_at));
    setText(took, duration(elapsed(run, now)));
    setText(used, tokens(run.budget_usage.tokens_in, run.budget_usage.tokens_out));
    setText(spent, cost(run.budget_usage.cost_usd));
    const actionable = ACTIONABLE_RUN.has(run.status) ? run.run_id : null;
    cancelRun.target(actionable);
    completeRun.target(actionable);
    note.hidden = run.cancel_on_disconnect !== true;
    // A thread is a run of its workflow's flow, 'workflow:<name>'.
    const thread = typeof run.entry === 'string' && run.entry.startsWith('workflow:');
    asThread.hidden = !thread;
    if (thread) asThread.setAttribute('href', app.href({ thread: run.run_id }));
  }

  function renderDetail(s: RunState): void {
    const step = s.selected !== null ? s.steps.get(s.selected) : undefined;
    if (!step) {
      detail.hide();
      return;
    }
    const log = s.logs.get(step.step_id) ?? null;
    const unfollowed = !log && s.run?.cancel_on_disconnect === true && LIVE_STEP.has(step.status);
    detail.show(step, log, childrenOf(s, step.step_id), unfollowed ? NOT_FOLLOWED : null);
  }

  function onLogEvent(s: RunState, id: string, type: string, data: StepEventData): void {
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
  function syncFollows(s: RunState): void {
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
  function changed(s: RunState, run: Run | null, steps: readonly Step[]): void {
    if (s !== state) return;
    app.clearError();
    s.run = run;
    s.order = [...steps];
    for (const step of steps) s.steps.set(step.step_id, step);
    const now = Date.now();
    if (run) renderRun(s, run, now);
    for (const step of steps) node(s, step, now);
    const failures = failedCount(steps);
    setText(failed, failedNote(failures));
    failed.hidden = failures === 0;
    empty.hidden = steps.length > 0;
    drawTimeline(s, now);
    syncFollows(s);
    renderDetail(s);
  }

  /** The clock, while something is live: the live bars and durations reach `now`. */
  function tick(s: RunState, now: number): void {
    if (s !== state) return;
    drawTimeline(s, now);
    if (s.run) setText(took, duration(elapsed(s.run, now)));
  }

  function follow(s: RunState): RunFollow {
    return followRunLive(s.runId, {
      changed: (run, steps) => {
        changed(s, run as Run | null, steps as unknown as readonly Step[]);
      },
      tick: (now) => {
        tick(s, now);
      },
      failed: (err) => {
        // 401 (the key form is up), 404 (no such run, or not the caller's).
        if (s === state) app.showError(err);
      },
    });
  }

  return {
    root,
    show(route: Route) {
      const id = route.run ?? '';
      let s = state;
      if (s?.runId !== id) {
        stop();
        s = fresh(id);
        state = s;
        setText(entry, id);
        setText(status, '');
        setText(failed, '');
        failed.hidden = true;
      }
      s.selected = route.step ?? null;
      if (s.run) {
        const now = Date.now();
        for (const step of s.order) node(s, step, now);
        drawTimeline(s, now);
        syncFollows(s);
        renderDetail(s);
      }
      s.live ??= follow(s);
    },
    hide() {
      stop();
    },
  };
}
