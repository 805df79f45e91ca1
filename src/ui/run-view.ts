/**
 * @module One run in the trace UI — its figures, and the trace tree of its steps by
 * `parent_step_id`, kept live: the step list is read again every second while a step is live
 * (new children appear), and the streams of the opened step and of up to three live steps
 * are followed (tokens, ends). A run with `cancel_on_disconnect` is never followed live:
 * closing the last stream of a live step would cancel it. Every token and cost figure is the
 * API's (`GET /v1/runs/{id}`, `GET /v1/runs/{id}/steps`).
 */
import { getJson, isFinalRefusal } from './api.js';
import type { Run, Step, StepEventData } from './api-types.js';
import { el, setText } from './dom.js';
import { LIVE_RUN, LIVE_STEP, cost, duration, elapsed, tokens, when } from './format.js';
import { createPoller, type Poller } from './poller.js';
import { createStepDetail, type StepLog } from './step-detail.js';
import { createStepFollows, type StepFollows } from './step-follows.js';
import { createTraceTree } from './trace-tree.js';
import type { App, Route, View } from './view.js';

const FAST_MS = 1000; // re-read the steps this often while one of them is live
const SLOW_MS = 2500; // ... and this often while the run is live and no step is
// Streams of live steps followed at once, besides the opened step's: a browser opens about
// six connections to one server, and the polls need one too.
const MAX_FOLLOWS = 3;
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
  readonly poller: Poller;
  selected: string | null;
}

/** The view of one run (the hash `#run=<id>[&step=<id>]`), in `root`. */
export function createRunView(root: HTMLElement, app: App): View {
  const back = el('a', { href: '#runs', class: 'back', 'data-testid': 'back-to-runs' }, '< Runs');
  const entry = el('h1', { 'data-testid': 'run-entry' });
  const status = el('span', { class: 'status', 'data-testid': 'run-status' });
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
  root.append(
    el('div', { class: 'toolbar' }, back, entry, status, asThread),
    el(
      'dl',
      { class: 'figures' },
      el('dt', null, 'run'),
      el('dd', null, runId),
      el('dt', null, 'started'),
      started,
      el('dt', null, 'duration'),
      took,
      el('dt', null, 'tokens'),
      used,
      el('dt', null, 'cost'),
      spent,
    ),
    note,
    el('div', { class: 'split' }, el('section', { class: 'trace' }, list, empty), aside),
  );
  const tree = createTraceTree(list, {
    open: (step) => {
      app.go({ run: step.run_id, step: step.step_id });
    },
  });
  const detail = createStepDetail(aside, {
    step: (step) => app.href({ run: step.run_id, step: step.step_id }),
    close: (step) => app.href({ run: step.run_id }),
  });
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
      poller: createPoller((current) => refresh(s, current)),
      selected: null,
    };
    return s;
  }

  function stop(): void {
    if (!state) return;
    state.poller.stop();
    state.follows.stop();
    state = null;
    tree.clear();
    detail.hide();
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
    const step = s.steps.get(id);
    if (step) node(s, step, Date.now());
    if (s.selected === id && detail.current() === id) {
      detail.event(type, data);
      if (step) detail.update(step, childrenOf(s, id));
    }
    // The step's record and its parent's change when it ends: read them soon.
    if (type === 'end' || type === 'error') s.poller.poke();
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

  async function refresh(s: RunState, current: () => boolean): Promise<number | null> {
    const path = `/v1/runs/${encodeURIComponent(s.runId)}`;
    try {
      const [run, steps] = await Promise.all([
        getJson<Run>(path),
        getJson<Step[]>(`${path}/steps`),
      ]);
      if (!current()) return null;
      app.clearError();
      s.run = run;
      s.order = steps;
      for (const step of steps) s.steps.set(step.step_id, step);
      const now = Date.now();
      renderRun(s, run, now);
      for (const step of steps) node(s, step, now);
      empty.hidden = steps.length > 0;
      syncFollows(s);
      renderDetail(s);
      const stepLive = steps.some((st) => LIVE_STEP.has(st.status));
      return stepLive ? FAST_MS : LIVE_RUN.has(run.status) ? SLOW_MS : null;
    } catch (err) {
      if (!current()) return null;
      app.showError(err);
      // 401 (the key form is up), 404 (no such run, or not the caller's): stop here.
      return isFinalRefusal(err) ? null : SLOW_MS;
    }
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
      }
      s.selected = route.step ?? null;
      if (s.run) {
        for (const step of s.order) node(s, step, Date.now());
        syncFollows(s);
        renderDetail(s);
      }
      s.poller.poke();
    },
    hide() {
      stop();
    },
  };
}
