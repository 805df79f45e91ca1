/**
 * @module The trace UI's `ui/run-view.js` (a browser module, kept as a string): one run —
 * its figures, and the trace tree of its steps by `parent_step_id`, kept live: the step list
 * is read again every second while a step is live (new children appear), and the streams of
 * the opened step and of up to three live steps are followed (tokens, ends). A run with
 * `cancel_on_disconnect` is never followed live: closing the last stream of a live step
 * would cancel it.
 */

/** `ui/run-view.js`. */
export const RUN_VIEW_JS = String.raw`// axon trace UI: one run and its trace tree.
import { followStep, getJson } from './api.js';
import { LIVE_RUN, LIVE_STEP, cost, duration, el, elapsed, setText, tokens, when } from './format.js';
import { createStepDetail, createStepLog } from './step-detail.js';
import { createTraceTree } from './trace-tree.js';

const FAST_MS = 1000; // re-read the steps this often while one of them is live
const SLOW_MS = 2500; // ... and this often while the run is live and no step is
// Streams of live steps followed at once, besides the opened step's: a browser opens about
// six connections to one server, and the polls need one too.
const MAX_FOLLOWS = 3;
const NOT_FOLLOWED =
  'This run has cancel_on_disconnect: closing the last stream of a live step cancels it, ' +
  'so the page does not follow its live steps. Their events show here once they end.';

/** The view of one run (the hash #run=<id>[&step=<id>]), in root. */
export function createRunView(root, app) {
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
  const empty = el('p', { class: 'empty', 'data-testid': 'trace-empty', hidden: true },
    'No steps yet: submit one with POST /v1/runs/{run_id}/steps.');
  const aside = el('aside', { class: 'detail', 'data-testid': 'step-detail' });
  root.append(
    el('div', { class: 'toolbar' }, back, entry, status, asThread),
    el('dl', { class: 'figures' }, el('dt', null, 'run'), el('dd', null, runId),
      el('dt', null, 'started'), started, el('dt', null, 'duration'), took,
      el('dt', null, 'tokens'), used, el('dt', null, 'cost'), spent),
    note,
    el('div', { class: 'split' }, el('section', { class: 'trace' }, list, empty), aside),
  );
  const tree = createTraceTree(list, {
    open: (step) => app.go({ run: step.run_id, step: step.step_id }),
  });
  const detail = createStepDetail(aside, {
    step: (step) => app.href({ run: step.run_id, step: step.step_id }),
    close: (step) => app.href({ run: step.run_id }),
  });
  let state = null;

  function fresh(id) {
    return {
      runId: id,
      run: null,
      steps: new Map(), // step_id -> the step's record, as last read
      order: [], // the records in creation order
      logs: new Map(), // step_id -> its log, while followed or once its stream ended
      follows: new Map(), // step_id -> the AbortController of its stream
      selected: null,
      timer: null,
      busy: false,
      again: false,
      stopped: false,
    };
  }

  function stop() {
    if (!state) return;
    state.stopped = true;
    clearTimeout(state.timer);
    for (const ctrl of state.follows.values()) ctrl.abort();
    state = null;
    tree.clear();
    detail.hide();
  }

  function childrenOf(stepId) {
    return state.order.filter((s) => s.parent_step_id === stepId);
  }

  function node(step, now) {
    tree.node(step, state.logs.get(step.step_id) || null, state.selected === step.step_id, now);
  }

  function renderRun(now) {
    const run = state.run;
    app.entryOf(run).then((name) => {
      if (state && state.run === run) setText(entry, name);
    });
    setText(status, run.status);
    status.dataset.status = run.status;
    setText(runId, run.run_id);
    setText(started, when(run.created_at));
    setText(took, duration(elapsed(run, now)));
    const u = run.budget_usage || {};
    setText(used, tokens(u.tokens_in, u.tokens_out));
    setText(spent, cost(u.cost_usd));
    note.hidden = !run.cancel_on_disconnect;
    // A thread is a run of its workflow's flow, 'workflow:<name>'.
    const thread = typeof run.entry === 'string' && run.entry.startsWith('workflow:');
    asThread.hidden = !thread;
    if (thread) asThread.setAttribute('href', app.href({ thread: run.run_id }));
  }

  function renderDetail() {
    const step = state.selected ? state.steps.get(state.selected) : null;
    if (!step) {
      detail.hide();
      return;
    }
    const log = state.logs.get(step.step_id) || null;
    const unfollowed = !log && state.run && state.run.cancel_on_disconnect && LIVE_STEP.has(step.status);
    detail.show(step, log, childrenOf(step.step_id), unfollowed ? NOT_FOLLOWED : null);
  }

  /** Starts and stops streams: the opened step's, and the newest live steps' (MAX_FOLLOWS). */
  function syncFollows() {
    const s = state;
    const guarded = s.run.cancel_on_disconnect;
    const wanted = [];
    const selected = s.selected ? s.steps.get(s.selected) : null;
    if (selected && !(guarded && LIVE_STEP.has(selected.status))) wanted.push(selected.step_id);
    if (!guarded) {
      const live = s.order.filter((st) => LIVE_STEP.has(st.status) && !wanted.includes(st.step_id));
      for (const st of live.slice(-MAX_FOLLOWS).reverse()) wanted.push(st.step_id);
    }
    for (const [id, ctrl] of s.follows) {
      if (!wanted.includes(id)) {
        ctrl.abort();
        s.follows.delete(id);
        s.logs.delete(id); // followed again later, it starts from its first event
      }
    }
    for (const id of wanted) if (!s.logs.has(id)) follow(s, id);
  }

  function follow(s, id) {
    const log = createStepLog();
    const ctrl = new AbortController();
    s.logs.set(id, log);
    s.follows.set(id, ctrl);
    log.onEvent = (type, data) => {
      if (s !== state) return;
      const step = s.steps.get(id);
      if (step) node(step, Date.now());
      if (s.selected === id && detail.current() === id) {
        detail.event(type, data);
        if (step) detail.update(step, childrenOf(id));
      }
      // The step's record and its parent's change when it ends: read them soon.
      if (type === 'end' || type === 'error') schedule(0);
    };
    followStep(id, (type, data) => log.push(type, data), ctrl.signal)
      .catch((err) => {
        if (s !== state) return;
        log.failed = err;
        app.showError(err);
      })
      .finally(() => {
        if (s.follows.get(id) === ctrl) s.follows.delete(id);
      });
  }

  function schedule(ms) {
    const s = state;
    if (!s || s.stopped) return;
    clearTimeout(s.timer);
    s.timer = ms === null ? null : setTimeout(() => refresh(s), ms);
  }

  async function refresh(s) {
    if (s !== state) return;
    if (s.busy) {
      s.again = true;
      return;
    }
    s.busy = true;
    let next = SLOW_MS;
    const path = '/v1/runs/' + encodeURIComponent(s.runId);
    try {
      const [run, steps] = await Promise.all([getJson(path), getJson(path + '/steps')]);
      if (s !== state) return;
      app.clearError();
      s.run = run;
      s.order = steps;
      for (const step of steps) s.steps.set(step.step_id, step);
      const now = Date.now();
      renderRun(now);
      for (const step of steps) node(step, now);
      empty.hidden = steps.length > 0;
      syncFollows();
      renderDetail();
      const stepLive = steps.some((st) => LIVE_STEP.has(st.status));
      next = stepLive ? FAST_MS : LIVE_RUN.has(run.status) ? SLOW_MS : null;
    } catch (err) {
      if (s !== state) return;
      app.showError(err);
      // 401 (the key form is up), 404 (no such run, or not the caller's): stop here.
      if (err.status >= 400 && err.status < 500 && err.status !== 429) next = null;
    } finally {
      s.busy = false;
    }
    if (s !== state) return;
    if (s.again) {
      s.again = false;
      next = 0;
    }
    schedule(next);
  }

  return {
    root,
    /** Opens route.run, and in it route.step (or no step). */
    show(route) {
      if (!state || state.runId !== route.run) {
        stop();
        state = fresh(route.run);
        setText(entry, route.run);
        setText(status, '');
      }
      state.selected = route.step || null;
      if (state.run) {
        for (const step of state.order) node(step, Date.now());
        syncFollows();
        renderDetail();
      }
      schedule(0);
    },
    hide() {
      stop();
    },
  };
}
`;
