/**
 * @module What the trace UI keeps of a followed step's events (its log: tokens joined as
 * text, tool suggestions, narration, facts, the last metrics, the end or error) and the panel
 * that shows one step — its record; what it was asked first (a tool step's arguments, another
 * step's input), then its text, the tool calls it made (its `tool_call` children) and its
 * events as they arrive, each section shown only once it has something. Every token and cost
 * figure shown is the API's (the step's `budget_usage`); what a live step's stream has shown
 * is told apart (`… streamed`).
 */
import { ACTIONABLE_STEP, actionButton, type ActionHooks } from './actions.js';
import type { Step, StepEventData, StepStatus } from './api-types.js';
import { el, setText } from './dom.js';
import { LIVE_STEP, cost, duration, elapsed, json, stepName, tokens } from './format.js';

/** One event of a step's log. */
export interface LoggedEvent {
  readonly type: string;
  readonly data: StepEventData;
}

/** The events of one step as they come from its stream; see {@link createStepLog}. */
export interface StepLog {
  /** Token events seen. */
  tokens: number;
  /** Their texts, in order. */
  readonly chunks: string[];
  /** The last `metrics` event's data. */
  metrics: StepEventData | null;
  started: StepEventData | null;
  /** The `end` or `error` event, once it came. */
  last: LoggedEvent | null;
  /** The events other than tokens and metrics, in order. */
  readonly events: LoggedEvent[];
  /** Why the stream failed for good, if it did. */
  failed: unknown;
  /** Told of each event after it is logged. */
  onEvent: ((type: string, data: StepEventData) => void) | null;
  push(type: string, data: StepEventData): void;
}

/** An empty log; `push` each event of the step's stream to it. */
export function createStepLog(): StepLog {
  const log: StepLog = {
    tokens: 0,
    chunks: [],
    metrics: null,
    started: null,
    last: null,
    events: [],
    failed: null,
    onEvent: null,
    push(type, data) {
      if (type === 'token') {
        log.tokens += 1;
        log.chunks.push(typeof data.t === 'string' ? data.t : '');
      } else if (type === 'metrics') {
        log.metrics = data;
      } else {
        if (type === 'started') log.started = data;
        if (type === 'end' || type === 'error') log.last = { type, data };
        log.events.push({ type, data });
      }
      log.onEvent?.(type, data);
    },
  };
  return log;
}

/** The status a step has by its log's last event, else its record's. */
export function statusOf(step: Pick<Step, 'status'>, log: StepLog | null): StepStatus {
  if (log?.last && LIVE_STEP.has(step.status)) {
    if (log.last.type === 'end') return 'succeeded';
    return log.last.data.code === 'CANCELLED' ? 'cancelled' : 'failed';
  }
  return step.status;
}

/** A step's tokens and cost as the page shows them. */
export interface ShownUsage {
  readonly tokensIn: number;
  readonly tokensOut: number;
  readonly cost: number;
}

/** Tokens and cost of a step: its record's (the API's `budget_usage`), nothing else. */
export function usageOf(step: Pick<Step, 'budget_usage'>): ShownUsage {
  const u = step.budget_usage as Partial<Step['budget_usage']> | undefined;
  return { tokensIn: u?.tokens_in ?? 0, tokensOut: u?.tokens_out ?? 0, cost: u?.cost_usd ?? 0 };
}

/**
 * What a live step's stream has shown so far, told apart from its figures: `12 streamed`
 * while it runs and has streamed tokens; empty otherwise (its record's figures are final).
 */
export function streamedText(step: Pick<Step, 'status'>, log: StepLog | null): string {
  if (!log || log.tokens === 0 || !LIVE_STEP.has(statusOf(step, log))) return '';
  return `${log.tokens} streamed`;
}

function eventItem(type: string, data: StepEventData): HTMLLIElement {
  const item = el('li', { 'data-testid': 'step-event', 'data-type': type, class: 'event' });
  item.append(el('span', { class: 'event-type' }, type));
  switch (type) {
    case 'started':
      item.append(
        ` on ${data.pool_id ?? 'its pool'}${data.replica_id ? ` / ${data.replica_id}` : ''}`,
      );
      break;
    case 'narration':
      item.append(` ${data.text ?? ''}`);
      break;
    case 'tool_suggest':
      item.append(` ${data.tool ?? ''} `, el('code', null, json(data.args, 400)));
      if (data.reason) item.append(` - ${data.reason}`);
      break;
    case 'fact':
      item.append(` ${data.type ?? ''} `, el('code', null, json(data.data, 400)));
      break;
    case 'checkpoint':
      item.append(` ${data.checkpoint_id ?? ''}`);
      break;
    case 'escalation':
      item.append(` ${data.reason ?? ''}${data.target ? ` -> ${data.target}` : ''}`);
      break;
    case 'end':
      item.append(el('pre', { 'data-testid': 'step-output' }, json(data.output)));
      break;
    case 'error':
      item.append(
        ' ',
        el('code', { 'data-testid': 'step-error-code' }, data.code ?? 'ERROR'),
        ` ${data.message ?? ''}`,
      );
      break;
    default:
      item.append(' ', el('code', null, json(data, 400)));
  }
  return item;
}

/**
 * What a step was asked, as the panel shows it first: a tool step's arguments (its input's
 * `args`), any other step's whole input; `null` before its record is read.
 */
export function askedOf(step: Pick<Step, 'type' | 'input'>): {
  readonly title: string;
  readonly value: unknown;
} | null {
  if (step.input === null || step.input === undefined) return null;
  if (step.type === 'tool_call' && typeof step.input === 'object' && 'args' in step.input) {
    return { title: 'Arguments', value: (step.input as Readonly<Record<string, unknown>>)['args'] };
  }
  return { title: 'Input', value: step.input };
}

/** A titled section of the panel, hidden while it has nothing to show. */
function section(testId: string, title: HTMLElement | string, body: HTMLElement): HTMLElement {
  return el(
    'section',
    { class: 'detail-section', 'data-testid': testId, hidden: true },
    typeof title === 'string' ? el('h3', null, title) : title,
    body,
  );
}

/** The links of a step panel. */
export interface StepDetailLinks {
  /** The href that opens a step (a tool call's). */
  readonly step: (step: Step) => string;
  /** The href that closes the panel. */
  readonly close: (step: Step) => string;
}

/** The panel of one step; see {@link createStepDetail}. */
export interface StepDetail {
  /** Shows `step` with its log (null: not followed) and why, when not followed. */
  show(step: Step, log: StepLog | null, children: readonly Step[], reason: string | null): void;
  /** Updates the record's fields and the tool calls (children of type `tool_call`). */
  update(step: Step, children: readonly Step[]): void;
  /** An event of the shown step's log, as it arrives. */
  event(type: string, data: StepEventData): void;
  /** The step shown, or null. */
  current(): string | null;
  hide(): void;
}

/**
 * The panel of one step, in `root`; hidden until `show()`. With `actions`, it has a button
 * that cancels the step while it is live (`POST /v1/steps/{id}/cancel`), told to `actions`.
 */
export function createStepDetail(
  root: HTMLElement,
  links: StepDetailLinks,
  actions?: ActionHooks,
): StepDetail {
  const cancel = actions ? actionButton('cancel-step', 'step-cancel', actions) : null;
  const name = el('h2', { 'data-testid': 'step-detail-name' });
  const status = el('span', { class: 'status', 'data-testid': 'step-detail-status' });
  const type = el('dd', { 'data-testid': 'step-detail-type' });
  const idCode = el('code', { 'data-testid': 'step-detail-id' });
  const id = el('dd', null, idCode);
  const took = el('dd', { 'data-testid': 'step-detail-duration' });
  const used = el('span', { 'data-testid': 'step-detail-tokens' });
  const streamed = el('span', { class: 'muted streamed', 'data-testid': 'step-detail-streamed' });
  const spent = el('dd', { 'data-testid': 'step-detail-cost' });
  const note = el('p', { class: 'note', 'data-testid': 'step-note', hidden: true });
  const metrics = el('p', { class: 'muted', 'data-testid': 'step-metrics', hidden: true });
  const text = el('pre', { class: 'text', 'data-testid': 'step-text' });
  const calls = el('ul', { class: 'calls', 'data-testid': 'step-tool-calls' });
  const events = el('ol', { class: 'events', 'data-testid': 'step-events' });
  const inputTitle = el('h3', { 'data-testid': 'step-input-title' });
  const input = el('pre', { class: 'input', 'data-testid': 'step-input' });
  // In the order a reader asks: what it was asked, what it said, what it called, what happened.
  const inputSection = section('step-section-input', inputTitle, input);
  const textSection = section('step-section-text', 'Text', text);
  const callsSection = section('step-section-calls', 'Tool calls', calls);
  const eventsSection = section('step-section-events', 'Events', events);
  const close = el(
    'a',
    { class: 'close', 'data-testid': 'step-detail-close', title: 'close' },
    'x',
  );
  root.append(
    el('div', { class: 'detail-head' }, name, status, cancel?.button ?? null, close),
    el(
      'dl',
      null,
      el('dt', null, 'type'),
      type,
      el('dt', null, 'step'),
      id,
      el('dt', null, 'duration'),
      took,
      el('dt', null, 'tokens'),
      el('dd', null, used, streamed),
      el('dt', null, 'cost'),
      spent,
    ),
    note,
    inputSection,
    textSection,
    metrics,
    callsSection,
    eventsSection,
  );
  root.hidden = true;
  let shown: { step: Step; readonly log: StepLog | null } | null = null;
  // The input shown: not yet (a sketch of a turn has none until its record is read).
  let inputShown = false;

  /** Each section shown when it has something, hidden otherwise. */
  function showFilled(): void {
    textSection.hidden = text.textContent === '';
    callsSection.hidden = calls.childElementCount === 0;
    eventsSection.hidden = events.childElementCount === 0;
  }

  /** A live step's last metrics event, as its stream said it (hidden once it ended). */
  function renderMetrics(step: Step, log: StepLog | null): void {
    const m = log?.metrics ?? null;
    const live = m !== null && LIVE_STEP.has(statusOf(step, log));
    metrics.hidden = !live;
    if (live) {
      setText(
        metrics,
        `live metrics event: ${tokens(m.tokens_in ?? 0, m.tokens_out ?? 0)}, ${cost(m.cost_usd ?? 0)}`,
      );
    }
  }

  const detail: StepDetail = {
    show(step, log, children, reason) {
      const fresh = shown?.step.step_id !== step.step_id || shown.log !== log;
      shown = { step, log };
      root.hidden = false;
      close.setAttribute('href', links.close(step));
      if (fresh) {
        text.textContent = log ? log.chunks.join('') : '';
        events.replaceChildren(...(log ? log.events.map((e) => eventItem(e.type, e.data)) : []));
        inputShown = false;
        inputSection.hidden = true;
      }
      note.hidden = reason === null;
      setText(note, reason ?? '');
      detail.update(step, children);
    },
    update(step, children) {
      if (shown?.step.step_id !== step.step_id) return;
      shown.step = step;
      const log = shown.log;
      setText(name, stepName(step));
      const st = statusOf(step, log);
      cancel?.target(ACTIONABLE_STEP.has(st) ? step.step_id : null);
      setText(status, st);
      status.dataset['status'] = st;
      setText(type, step.type);
      setText(idCode, step.step_id);
      // A step's input does not change, but a record may come after a sketch of the step
      // without one (a thread's turn seen on its stream first).
      const asked = inputShown ? null : askedOf(step);
      if (asked) {
        inputShown = true;
        setText(inputTitle, asked.title);
        setText(input, json(asked.value));
        inputSection.hidden = false;
      }
      setText(took, duration(elapsed(step, Date.now())));
      const u = usageOf(step);
      setText(used, tokens(u.tokensIn, u.tokensOut));
      const live = streamedText(step, log);
      setText(streamed, live === '' ? '' : ` (${live})`);
      setText(spent, cost(u.cost));
      renderMetrics(step, log);
      const items = children
        .filter((c) => c.type === 'tool_call')
        .map((c) => {
          const args =
            c.input !== null && typeof c.input === 'object'
              ? (c.input as Readonly<Record<string, unknown>>)['args']
              : undefined;
          const call = el(
            'a',
            { href: links.step(c) },
            stepName(c),
            ' ',
            el('code', null, json(args, 300)),
          );
          const out = c.error
            ? `${c.error.code}: ${c.error.message}`
            : LIVE_STEP.has(c.status)
              ? c.status
              : json(c.output, 300);
          return el(
            'li',
            { 'data-testid': 'step-tool-call', 'data-step-id': c.step_id, 'data-status': c.status },
            call,
            ' -> ',
            el('code', null, out),
          );
        });
      const same =
        calls.childElementCount === items.length &&
        items.every((li, i) => li.textContent === calls.children[i]?.textContent);
      if (!same) calls.replaceChildren(...items);
      showFilled();
    },
    event(type, data) {
      if (!shown) return;
      if (type === 'token') text.append(typeof data.t === 'string' ? data.t : '');
      else if (type === 'metrics') renderMetrics(shown.step, shown.log);
      else events.append(eventItem(type, data));
      showFilled();
      if (type === 'token') {
        const live = streamedText(shown.step, shown.log);
        setText(streamed, live === '' ? '' : ` (${live})`);
      }
    },
    current() {
      return shown ? shown.step.step_id : null;
    },
    hide() {
      shown = null;
      cancel?.target(null);
      root.hidden = true;
    },
  };
  return detail;
}
