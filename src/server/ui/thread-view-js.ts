/**
 * @module The trace UI's `ui/thread-view.js` (a browser module, kept as a string): one thread
 * — its figures, and its turns in order as the roots of a trace tree (a thread is a run, its
 * turns the steps of that run, so a turn's delegations and tool calls are its children),
 * each with its role, status, text and output, duration, tokens and cost. Kept live by the
 * thread's stream (`GET /v1/threads/{id}/stream`: a new turn shows when it starts, the
 * current turn's tokens as they come, the thread's end at once) and by reading the thread and
 * its steps again every second while it is live (new children). A step opened shows in the
 * step panel, its events from the thread's stream (a turn) or its own (any other step).
 */

/** `ui/thread-view.js`. */
export const THREAD_VIEW_JS = String.raw`// axon trace UI: one thread and its turns.
import { followStep, followThread, getJson } from './api.js';
import { LIVE_STEP, LIVE_THREAD, cost, duration, el, elapsed, json, setText, tokens, when } from './format.js';
import { createStepDetail, createStepLog, usageOf } from './step-detail.js';
import { createTraceTree } from './trace-tree.js';

const FAST_MS = 1000; // read the thread and its steps again this often while it is live
// Streams of live steps below the turns followed at once, besides the thread's and the
// opened step's: a browser opens about six connections to one server.
const MAX_FOLLOWS = 2;
const TURN_TOKEN = /^turn-(\d+)$/;

/** The turn a step is ({ n, role }), or null: a root step submitted with client token turn-<n>. */
function turnOf(step) {
  const m = step.parent_step_id ? null : TURN_TOKEN.exec(step.client_token || '');
  if (!m) return null;
  const name = step.name || (step.actor_path && step.actor_path[0]) || '';
  return { n: Number(m[1]), role: name.split('.').pop() };
}

/** The view of one thread (the hash #thread=<id>[&step=<id>]), in root. */
export function createThreadView(root, app) {
  const back = el('a', { href: '#threads', class: 'back', 'data-testid': 'back-to-threads' }, '< Threads');
  const title = el('h1', { 'data-testid': 'thread-workflow' });
  const status = el('span', { class: 'status', 'data-testid': 'thread-status' });
  const reason = el('span', { class: 'muted', 'data-testid': 'thread-end-reason' });
  const asRun = el('a', { 'data-testid': 'thread-run-link' }, 'open as a run');
  const threadId = el('code', { 'data-testid': 'thread-id' });
  const input = el('dd', { class: 'input', 'data-testid': 'thread-input' });
  const started = el('dd', { 'data-testid': 'thread-started' });
  const took = el('dd', { 'data-testid': 'thread-duration' });
  const rounds = el('dd', { 'data-testid': 'thread-rounds' });
  const used = el('dd', { 'data-testid': 'thread-tokens' });
  const spent = el('dd', { 'data-testid': 'thread-cost' });
  const failure = el('p', { class: 'note bad', 'data-testid': 'thread-error', hidden: true });
  const list = el('ul', { class: 'tree', 'data-testid': 'thread-turns' });
  const empty = el('p', { class: 'empty', 'data-testid': 'thread-turns-empty', hidden: true },
    'No turns yet: the thread waits for its first.');
  const aside = el('aside', { class: 'detail', 'data-testid': 'thread-step-detail' });
  root.append(
    el('div', { class: 'toolbar' }, back, title, status, reason, asRun),
    el('dl', { class: 'figures' }, el('dt', null, 'thread'), el('dd', null, threadId),
      el('dt', null, 'input'), input, el('dt', null, 'started'), started,
      el('dt', null, 'duration'), took, el('dt', null, 'rounds'), rounds,
      el('dt', null, 'tokens'), used, el('dt', null, 'cost'), spent),
    failure,
    el('div', { class: 'split' }, el('section', { class: 'trace' }, list, empty), aside),
  );
  const tree = createTraceTree(list, {
    open: (step) => app.go({ thread: state.threadId, step: step.step_id }),
    label(step) {
      const turn = state && state.turns.get(step.step_id);
      return turn ? { name: turn.role, type: 'turn ' + turn.n } : null;
    },
  });
  const detail = createStepDetail(aside, {
    step: (step) => app.href({ thread: state ? state.threadId : step.run_id, step: step.step_id }),
    close: () => app.href({ thread: state ? state.threadId : '' }),
  });
  let state = null;

  function fresh(id) {
    return {
      threadId: id,
      thread: null, // the Thread, as last read or as its stream's thread_end gave it
      steps: new Map(), // step_id -> its record (a sketch, for a turn seen on the stream only)
      order: [], // the records in creation order
      turns: new Map(), // step_id -> { n, role } of each turn's step
      logs: new Map(), // step_id -> its log: a turn's from the thread's stream, else its own
      follows: new Map(), // step_id -> the AbortController of a step stream
      stream: new AbortController(), // the thread's stream
      ended: false, // the thread's stream said thread_end
      selected: null,
      timer: null,
      busy: false,
      again: false,
    };
  }

  function stop() {
    if (!state) return;
    clearTimeout(state.timer);
    state.stream.abort();
    for (const ctrl of state.follows.values()) ctrl.abort();
    state = null;
    tree.clear();
    detail.hide();
  }

  function childrenOf(stepId) {
    return state.order.filter((st) => st.parent_step_id === stepId);
  }

  /** What the thread's view says of the turn of stepId, or null. */
  function turnView(stepId) {
    const t = state.thread;
    return (t && t.turns && t.turns.find((x) => x.step_id === stepId)) || null;
  }

  /** A turn's text, output and error, below its row. */
  function renderTurn(n, step, log) {
    if (!n.turn) {
      n.turn = {
        text: el('pre', { class: 'turn-text', 'data-testid': 'thread-turn-text' }),
        output: el('pre', { class: 'turn-output', 'data-testid': 'thread-turn-output', hidden: true }),
        error: el('p', { class: 'turn-error', 'data-testid': 'thread-turn-error', hidden: true }),
        chunks: 0,
        final: false,
      };
      n.extra.append(n.turn.text, n.turn.output, n.turn.error);
      n.extra.hidden = false;
      n.extra.classList.add('turn');
    }
    const t = n.turn;
    const view = turnView(step.step_id);
    const out = step.output && typeof step.output === 'object' ? step.output : null;
    const raw = view && typeof view.raw === 'string' ? view.raw
      : out && typeof out.raw === 'string' ? out.raw : null;
    if (raw !== null) {
      if (!t.final) setText(t.text, raw);
      t.final = true;
    } else if (log && !t.final) {
      // The tokens so far, appended as they come.
      while (t.chunks < log.chunks.length) t.text.append(log.chunks[t.chunks++]);
    }
    const output = view ? view.output : out ? out.output : null;
    const extra = output !== null && output !== undefined && output !== raw;
    t.output.hidden = !extra;
    if (extra) setText(t.output, '-> ' + json(output, 1200));
    const error = step.error || (view && view.error) ||
      (log && log.last && log.last.type === 'error' ? log.last.data : null);
    t.error.hidden = !error;
    if (error) setText(t.error, (error.code || 'ERROR') + ': ' + (error.message || ''));
  }

  function node(step, now) {
    const log = state.logs.get(step.step_id) || null;
    const n = tree.node(step, log, state.selected === step.step_id, now);
    const turn = state.turns.get(step.step_id);
    if (turn) {
      n.row.dataset.turn = String(turn.n);
      n.row.dataset.role = turn.role;
      renderTurn(n, step, log);
    }
  }

  function renderThread(now) {
    const t = state.thread;
    if (!t) return;
    setText(title, t.workflow);
    setText(status, t.status);
    status.dataset.status = t.status;
    setText(reason, t.end_reason ? 'ended: ' + t.end_reason : '');
    asRun.setAttribute('href', app.href({ run: t.thread_id }));
    setText(threadId, t.thread_id);
    setText(input, t.input);
    setText(started, when(t.created_at));
    setText(took, duration(elapsed(t, now)));
    // Turns live now count what their streams have shown; the thread's record, what ended.
    let tokensIn = 0;
    let tokensOut = 0;
    let usd = 0;
    for (const id of state.turns.keys()) {
      const step = state.steps.get(id);
      if (!step) continue;
      const u = usageOf(step, state.logs.get(id) || null);
      tokensIn += u.tokensIn;
      tokensOut += u.tokensOut;
      usd += u.cost;
    }
    setText(rounds, String(t.rounds));
    setText(used, tokens(Math.max(tokensIn, t.tokens_in), Math.max(tokensOut, t.tokens_out)));
    setText(spent, cost(Math.max(usd, t.cost_usd)));
    failure.hidden = !t.error;
    if (t.error) setText(failure, (t.error.code || 'ERROR') + ': ' + (t.error.message || ''));
  }

  function renderDetail() {
    const step = state.selected ? state.steps.get(state.selected) : null;
    if (!step) {
      detail.hide();
      return;
    }
    detail.show(step, state.logs.get(step.step_id) || null, childrenOf(step.step_id), null);
  }

  function render() {
    const now = Date.now();
    renderThread(now);
    for (const step of state.order) node(step, now);
    empty.hidden = state.order.length > 0;
    renderDetail();
  }

  /** A step's log told of an event: its node, the thread's figures, the panel. */
  function onLogEvent(s, id, type, data) {
    if (s !== state) return;
    const step = s.steps.get(id);
    const now = Date.now();
    if (step) node(step, now);
    renderThread(now);
    if (s.selected === id && detail.current() === id) {
      detail.event(type, data);
      if (step) detail.update(step, childrenOf(id));
    }
    // The step's record, its parent's and the thread's change when it ends: read them soon.
    if (type === 'end' || type === 'error') schedule(0);
  }

  /** A frame of the thread's stream: a turn's step event, or the thread's end. */
  function onFrame(s, type, data) {
    if (s !== state) return;
    if (type === 'thread_end') {
      s.ended = true;
      s.thread = data;
      renderThread(Date.now());
      schedule(0);
      return;
    }
    const id = data.step_id;
    if (!s.turns.has(id)) s.turns.set(id, { n: data.turn, role: data.role });
    if (!s.steps.has(id)) {
      // A new turn, seen on the stream before its record is read: a sketch of it until then.
      const sketch = {
        step_id: id,
        run_id: s.threadId,
        type: 'agent',
        name: data.role,
        client_token: 'turn-' + data.turn,
        parent_step_id: null,
        status: 'running',
        created_at: new Date(data.ts).toISOString(),
        ended_at: null,
        budget_usage: {},
        input: null,
        output: null,
        error: null,
      };
      s.steps.set(id, sketch);
      s.order.push(sketch);
      empty.hidden = true;
    }
    let log = s.logs.get(id);
    if (!log) {
      log = createStepLog();
      log.onEvent = (t, d) => onLogEvent(s, id, t, d);
      s.logs.set(id, log);
      node(s.steps.get(id), Date.now());
      if (s.selected === id) renderDetail();
    }
    log.push(type, data);
  }

  /**
   * Starts and stops step streams: the opened step's when it is no turn (the turns' events
   * come on the thread's stream), and the newest live steps below the turns (MAX_FOLLOWS).
   */
  function syncFollows() {
    const s = state;
    const wanted = [];
    if (s.selected && s.steps.has(s.selected) && !s.turns.has(s.selected)) wanted.push(s.selected);
    const live = s.order.filter((st) => !s.turns.has(st.step_id) && LIVE_STEP.has(st.status) &&
      !wanted.includes(st.step_id));
    for (const st of live.slice(-MAX_FOLLOWS).reverse()) wanted.push(st.step_id);
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
    log.onEvent = (type, data) => onLogEvent(s, id, type, data);
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

  function openStream(s) {
    followThread(s.threadId, (type, data) => onFrame(s, type, data), s.stream.signal)
      .catch((err) => {
        if (s !== state) return;
        app.showError(err);
      });
  }

  function schedule(ms) {
    const s = state;
    if (!s) return;
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
    let next = FAST_MS;
    const id = encodeURIComponent(s.threadId);
    try {
      const [thread, steps] = await Promise.all([
        getJson('/v1/threads/' + id),
        getJson('/v1/runs/' + id + '/steps'),
      ]);
      if (s !== state) return;
      app.clearError();
      // The stream's thread_end may be newer than a read that started before it.
      if (!(s.ended && LIVE_THREAD.has(thread.status))) s.thread = thread;
      const known = new Set(steps.map((st) => st.step_id));
      // Sketches of turns the read did not see yet stay, after the records.
      s.order = steps.concat(s.order.filter((st) => !known.has(st.step_id)));
      for (const step of steps) {
        s.steps.set(step.step_id, step);
        const turn = turnOf(step);
        if (turn) s.turns.set(step.step_id, turn);
      }
      render();
      syncFollows();
      const stepLive = steps.some((st) => LIVE_STEP.has(st.status));
      next = LIVE_THREAD.has(s.thread.status) || stepLive ? FAST_MS : null;
    } catch (err) {
      if (s !== state) return;
      app.showError(err);
      // 401 (the key form is up), 404 (no such thread, or not the caller's): stop here.
      if (err.status >= 400 && err.status < 500 && err.status !== 429) {
        next = null;
        s.stream.abort();
      }
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
    /** Opens route.thread, and in it route.step (or no step). */
    show(route) {
      if (!state || state.threadId !== route.thread) {
        stop();
        state = fresh(route.thread);
        setText(title, 'thread');
        setText(status, '');
        setText(reason, '');
        failure.hidden = true;
        openStream(state);
      }
      state.selected = route.step || null;
      if (state.thread) {
        render();
        syncFollows();
      }
      schedule(0);
    },
    hide() {
      stop();
    },
  };
}
`;
