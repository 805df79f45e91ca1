/**
 * @module One thread in the trace UI — its figures, and its turns in order as the roots of a
 * trace tree (a thread is a run, its turns the steps of that run, so a turn's delegations and
 * tool calls are its children), each with its role, status, text and output, duration,
 * tokens and cost. Kept live by the thread's stream (`GET /v1/threads/{id}/stream`: a new
 * turn shows when it starts, the current turn's text as it comes, the thread's end at once)
 * and by reading the thread and its steps again every second while it is live (new
 * children). A step opened shows in the step panel, its events from the thread's stream (a
 * turn) or its own (any other step). Every token and cost figure is the API's: the thread's
 * and its turns' from `GET /v1/threads/{id}`, other steps' from their records.
 */
import { followThread, getJson, isFinalRefusal, type TurnEventData } from './api.js';
import type { Step, StepEventData, Thread, Turn } from './api-types.js';
import { el, figureList, setText } from './dom.js';
import { LIVE_STEP, LIVE_THREAD, cost, duration, elapsed, json, tokens, when } from './format.js';
import { createPoller, type Poller } from './poller.js';
import { createStepDetail, createStepLog, type ShownUsage, type StepLog } from './step-detail.js';
import { createStepFollows, type StepFollows } from './step-follows.js';
import { createTurnTimeline } from './timeline-turns.js';
import type { TimelineTurn } from './timeline-model.js';
import { createTraceTree, type TraceNode } from './trace-tree.js';
import type { App, Route, View } from './view.js';

// Read the thread and its steps again this long after its stream said something (a burst
// of events, one read); nothing is read while the stream is quiet.
const REREAD_MS = 1000;
const SLOW_MS = 2500; // read again after a failure that reading again may mend
// Streams of live steps below the turns followed at once, besides the thread's and the
// opened step's: a browser opens about six connections to one server.
const MAX_FOLLOWS = 2;
const TURN_TOKEN = /^turn-(\d+)$/;

/** A turn's number and role. */
interface TurnTag {
  readonly n: number;
  readonly role: string;
}

/** The turn a step is, or null: a root step submitted with client token `turn-<n>`. */
function turnOf(step: Step): TurnTag | null {
  const m = step.parent_step_id !== null ? null : TURN_TOKEN.exec(step.client_token ?? '');
  if (!m) return null;
  const name = step.name ?? step.actor_path?.[0] ?? '';
  return { n: Number(m[1]), role: name.split('.').pop() ?? '' };
}

/** What the view draws below a turn's row. */
interface TurnNodes {
  readonly text: HTMLElement;
  readonly output: HTMLElement;
  readonly error: HTMLElement;
  /** Chunks of its log appended so far. */
  chunks: number;
  /** Its final text (the API's `raw`) is shown. */
  final: boolean;
}

/** What the view holds of the thread it shows. */
interface ThreadState {
  readonly threadId: string;
  /** The Thread, as last read or as its stream's `thread_end` gave it. */
  thread: Thread | null;
  /** step_id -> its record (a sketch, for a turn seen on the stream only). */
  readonly steps: Map<string, Step>;
  /** The records in creation order. */
  order: Step[];
  /** step_id -> the turn of each turn's step. */
  readonly turns: Map<string, TurnTag>;
  /** step_id -> its log: a turn's from the thread's stream, else its own. */
  readonly logs: Map<string, StepLog>;
  readonly follows: StepFollows;
  readonly poller: Poller;
  /** The thread's stream. */
  readonly stream: AbortController;
  /** The thread's stream said `thread_end`. */
  ended: boolean;
  selected: string | null;
  /** A read asked by the stream is on its way (one per {@link REREAD_MS}). */
  reread: ReturnType<typeof setTimeout> | null;
}

/** The view of one thread (the hash `#thread=<id>[&step=<id>]`), in `root`. */
export function createThreadView(root: HTMLElement, app: App): View {
  const back = el(
    'a',
    { href: '#threads', class: 'back', 'data-testid': 'back-to-threads' },
    '< Threads',
  );
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
  const empty = el(
    'p',
    { class: 'empty', 'data-testid': 'thread-turns-empty', hidden: true },
    'No turns yet: the thread waits for its first.',
  );
  const aside = el('aside', { class: 'detail', 'data-testid': 'thread-step-detail' });
  const timeline = createTurnTimeline({
    href: (stepId) => app.href({ thread: state?.threadId ?? '', step: stepId }),
    selected: () => state?.selected ?? null,
    turns: () => (state ? timelineTurns(state) : []),
    createdAt: () => state?.thread?.created_at ?? null,
    tick: (now) => {
      if (state?.thread) setText(took, duration(elapsed(state.thread, now)));
    },
  });
  root.append(
    el('div', { class: 'toolbar' }, back, title, status, reason, asRun),
    figureList([
      ['thread', threadId],
      ['input', input],
      ['started', started],
      ['duration', took],
      ['rounds', rounds],
      ['tokens', used],
      ['cost', spent],
    ]),
    failure,
    timeline.root,
    el('div', { class: 'split' }, el('section', { class: 'trace' }, list, empty), aside),
  );
  let state: ThreadState | null = null;
  const turnNodes = new Map<string, TurnNodes>();
  const tree = createTraceTree(list, {
    open: (step) => {
      if (state) app.go({ thread: state.threadId, step: step.step_id });
    },
    label(step) {
      const turn = state?.turns.get(step.step_id);
      return turn ? { name: turn.role, type: `turn ${turn.n}` } : null;
    },
    usage(step): ShownUsage | null {
      // A turn's figures are the thread's word for them; a sketch's, none yet.
      const turn = turnView(step.step_id);
      return turn
        ? { tokensIn: turn.tokens_in, tokensOut: turn.tokens_out, cost: turn.cost_usd }
        : null;
    },
  });
  const detail = createStepDetail(aside, {
    step: (step) => app.href({ thread: state ? state.threadId : step.run_id, step: step.step_id }),
    close: () => app.href({ thread: state ? state.threadId : '' }),
  });

  function fresh(id: string): ThreadState {
    const logs = new Map<string, StepLog>();
    const s: ThreadState = {
      threadId: id,
      thread: null,
      steps: new Map(),
      order: [],
      turns: new Map(),
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
      stream: new AbortController(),
      ended: false,
      selected: null,
      reread: null,
    };
    return s;
  }

  /** The turns as the timeline draws them: the thread's word for each, else its sketch. */
  function timelineTurns(s: ThreadState): TimelineTurn[] {
    const out: TimelineTurn[] = [];
    for (const [id, tag] of s.turns) {
      const step = s.steps.get(id);
      const started = step ? (step.started_at ?? step.created_at) : null;
      const sketch: TimelineTurn = {
        ...tag,
        step_id: id,
        status: step?.status ?? 'running',
        started_at: started,
        ended_at: step?.ended_at ?? null,
        tokens_in: 0,
        tokens_out: 0,
        cost_usd: 0,
      };
      out.push(turnView(id) ?? sketch);
    }
    return out.sort((a, b) => a.n - b.n);
  }

  /** The stream said something: read the thread and its steps again soon (once a burst). */
  function readSoon(s: ThreadState): void {
    if (s.reread !== null || s !== state) return;
    s.reread = setTimeout(() => {
      s.reread = null;
      if (s === state) s.poller.poke();
    }, REREAD_MS);
  }

  function stop(): void {
    if (!state) return;
    state.poller.stop();
    state.stream.abort();
    if (state.reread !== null) clearTimeout(state.reread);
    timeline.clear();
    state.follows.stop();
    state = null;
    turnNodes.clear();
    tree.clear();
    detail.hide();
  }

  function childrenOf(s: ThreadState, stepId: string): Step[] {
    return s.order.filter((st) => st.parent_step_id === stepId);
  }

  /** What the thread's view says of the turn of `stepId`, or null. */
  function turnView(stepId: string): Turn | null {
    return state?.thread?.turns?.find((x) => x.step_id === stepId) ?? null;
  }

  /** A turn's text, output and error, below its row. */
  function renderTurn(n: TraceNode, step: Step, log: StepLog | null): void {
    let t = turnNodes.get(step.step_id);
    if (!t) {
      t = {
        text: el('pre', { class: 'turn-text', 'data-testid': 'thread-turn-text' }),
        output: el('pre', {
          class: 'turn-output',
          'data-testid': 'thread-turn-output',
          hidden: true,
        }),
        error: el('p', { class: 'turn-error', 'data-testid': 'thread-turn-error', hidden: true }),
        chunks: 0,
        final: false,
      };
      turnNodes.set(step.step_id, t);
      n.extra.append(t.text, t.output, t.error);
      n.extra.hidden = false;
      n.extra.classList.add('turn');
    }
    const view = turnView(step.step_id);
    const out =
      step.output !== null && typeof step.output === 'object'
        ? (step.output as { readonly raw?: unknown; readonly output?: unknown })
        : null;
    const raw =
      view && typeof view.raw === 'string'
        ? view.raw
        : typeof out?.raw === 'string'
          ? out.raw
          : null;
    if (raw !== null) {
      if (!t.final) setText(t.text, raw);
      t.final = true;
    } else if (log && !t.final) {
      // The tokens so far, appended as they come.
      while (t.chunks < log.chunks.length) t.text.append(log.chunks[t.chunks++] ?? '');
    }
    const output = view ? view.output : out ? out.output : null;
    const extra = output !== null && output !== undefined && output !== raw;
    t.output.hidden = !extra;
    if (extra) setText(t.output, `-> ${json(output, 1200)}`);
    const lastError = log?.last?.type === 'error' ? log.last.data : null;
    const error = step.error ?? view?.error ?? lastError;
    t.error.hidden = !error;
    if (error) setText(t.error, `${error.code ?? 'ERROR'}: ${error.message ?? ''}`);
  }

  function node(s: ThreadState, step: Step, now: number): void {
    const log = s.logs.get(step.step_id) ?? null;
    const n = tree.node(step, log, s.selected === step.step_id, now);
    const turn = s.turns.get(step.step_id);
    if (turn) {
      n.row.dataset['turn'] = String(turn.n);
      n.row.dataset['role'] = turn.role;
      renderTurn(n, step, log);
    }
  }

  function renderThread(s: ThreadState, now: number): void {
    const t = s.thread;
    if (!t) return;
    setText(title, t.workflow);
    setText(status, t.status);
    status.dataset['status'] = t.status;
    setText(reason, t.end_reason !== null ? `ended: ${t.end_reason}` : '');
    asRun.setAttribute('href', app.href({ run: t.thread_id }));
    setText(threadId, t.thread_id);
    setText(input, t.input);
    setText(started, when(t.created_at));
    setText(took, duration(elapsed(t, now)));
    setText(rounds, String(t.rounds));
    // The thread's figures, as the API gives them: its turns' that ended.
    setText(used, tokens(t.tokens_in, t.tokens_out));
    setText(spent, cost(t.cost_usd));
    failure.hidden = !t.error;
    if (t.error) setText(failure, `${t.error.code}: ${t.error.message}`);
  }

  function renderDetail(s: ThreadState): void {
    const step = s.selected !== null ? s.steps.get(s.selected) : undefined;
    if (!step) {
      detail.hide();
      return;
    }
    detail.show(step, s.logs.get(step.step_id) ?? null, childrenOf(s, step.step_id), null);
  }

  function render(s: ThreadState): void {
    const now = Date.now();
    renderThread(s, now);
    for (const step of s.order) node(s, step, now);
    empty.hidden = s.order.length > 0;
    timeline.draw(now);
    timeline.live(s.thread === null || LIVE_THREAD.has(s.thread.status));
    renderDetail(s);
  }

  /** A step's log told of an event: its node, the panel. */
  function onLogEvent(s: ThreadState, id: string, type: string, data: StepEventData): void {
    if (s !== state) return;
    const step = s.steps.get(id);
    if (step) node(s, step, Date.now());
    if (s.selected === id && detail.current() === id) {
      detail.event(type, data);
      if (step) detail.update(step, childrenOf(s, id));
    }
    // The step's record, its parent's and the thread's change when it ends: read them soon.
    if (type === 'end' || type === 'error') s.poller.poke();
  }

  /** A turn's step event on the thread's stream. */
  function onTurnEvent(s: ThreadState, type: string, data: TurnEventData): void {
    const id = data.step_id;
    if (type === 'token') timeline.firstToken(id, data.ts);
    // Its step's record, its children and the thread's figures may have changed.
    readSoon(s);
    if (!s.turns.has(id)) s.turns.set(id, { n: data.turn, role: data.role });
    if (!s.steps.has(id)) {
      // A new turn, seen on the stream before its record is read: a sketch of it until then.
      const sketch: Step = {
        step_id: id,
        run_id: s.threadId,
        type: 'agent',
        name: data.role,
        client_token: `turn-${data.turn}`,
        parent_step_id: null,
        status: 'running',
        created_at: new Date(data.ts).toISOString(),
        ended_at: null,
        budget_usage: { tokens_in: 0, tokens_out: 0, cost_usd: 0 },
        input: null,
        output: null,
        error: null,
      };
      s.steps.set(id, sketch);
      s.order.push(sketch);
      empty.hidden = true;
      timeline.draw(Date.now());
    }
    let log = s.logs.get(id);
    if (!log) {
      log = createStepLog();
      log.onEvent = (t, d) => {
        onLogEvent(s, id, t, d);
      };
      s.logs.set(id, log);
      const step = s.steps.get(id);
      if (step) node(s, step, Date.now());
      if (s.selected === id) renderDetail(s);
    }
    log.push(type, data);
  }

  /**
   * Starts and stops step streams: the opened step's when it is no turn (the turns' events
   * come on the thread's stream), and the newest live steps below the turns (MAX_FOLLOWS).
   */
  function syncFollows(s: ThreadState): void {
    const wanted: string[] = [];
    if (s.selected !== null && s.steps.has(s.selected) && !s.turns.has(s.selected)) {
      wanted.push(s.selected);
    }
    const live = s.order.filter(
      (st) => !s.turns.has(st.step_id) && LIVE_STEP.has(st.status) && !wanted.includes(st.step_id),
    );
    for (const st of live.slice(-MAX_FOLLOWS).reverse()) wanted.push(st.step_id);
    s.follows.sync(wanted);
  }

  function openStream(s: ThreadState): void {
    followThread(
      s.threadId,
      (frame) => {
        if (s !== state) return;
        if (frame.kind === 'end') {
          s.ended = true;
          s.thread = frame.thread;
          renderThread(s, Date.now());
          s.poller.poke();
        } else {
          onTurnEvent(s, frame.type, frame.data);
        }
      },
      s.stream.signal,
    ).catch((err: unknown) => {
      if (s === state) app.showError(err);
    });
  }

  async function refresh(s: ThreadState, current: () => boolean): Promise<number | null> {
    const id = encodeURIComponent(s.threadId);
    try {
      const [thread, steps] = await Promise.all([
        getJson<Thread>(`/v1/threads/${id}`),
        getJson<Step[]>(`/v1/runs/${id}/steps`),
      ]);
      if (!current()) return null;
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
      render(s);
      syncFollows(s);
      // Live, it is read again when its stream says something (readSoon), not on a timer.
      return null;
    } catch (err) {
      if (!current()) return null;
      app.showError(err);
      // 401 (the key form is up), 404 (no such thread, or not the caller's): stop here.
      if (isFinalRefusal(err)) {
        s.stream.abort();
        return null;
      }
      return SLOW_MS;
    }
  }

  return {
    root,
    show(route: Route) {
      const id = route.thread ?? '';
      let s = state;
      if (s?.threadId !== id) {
        stop();
        s = fresh(id);
        state = s;
        setText(title, 'thread');
        setText(status, '');
        setText(reason, '');
        failure.hidden = true;
        openStream(s);
      }
      s.selected = route.step ?? null;
      if (s.thread) {
        render(s);
        syncFollows(s);
      }
      s.poller.poke();
    },
    hide() {
      stop();
    },
  };
}
