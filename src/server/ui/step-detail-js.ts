/**
 * @module The trace UI's `ui/step-detail.js` (a browser module, kept as a string): what the
 * page keeps of a followed step's events (its log: tokens joined as text, tool suggestions,
 * narration, facts, the last metrics, the end or error) and the panel that shows one step —
 * its record, its events as they arrive, and the tool calls it made (its `tool_call`
 * children).
 */

/** `ui/step-detail.js`. */
export const STEP_DETAIL_JS = String.raw`// axon trace UI: a step's events, and the panel that shows them.
import { LIVE_STEP, cost, duration, el, elapsed, json, setText, stepName, tokens } from './format.js';

/**
 * The events of one step as they come from its stream: tokens (count and text), the last
 * metrics, the started and end/error events, and the others in order. onEvent(type, data)
 * is told of each.
 */
export function createStepLog() {
  const log = {
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
      if (log.onEvent) log.onEvent(type, data);
    },
  };
  return log;
}

/** The status a step has by its log's last event, else its record's. */
export function statusOf(step, log) {
  if (log && log.last && LIVE_STEP.has(step.status)) {
    if (log.last.type === 'end') return 'succeeded';
    return log.last.data.code === 'CANCELLED' ? 'cancelled' : 'failed';
  }
  return step.status;
}

/** Tokens and cost of a step: its record's, or what its stream has shown, the larger. */
export function usageOf(step, log) {
  const usage = step.budget_usage || {};
  const m = (log && log.metrics) || {};
  return {
    tokensIn: Math.max(usage.tokens_in || 0, m.tokens_in || 0),
    tokensOut: Math.max(usage.tokens_out || 0, m.tokens_out || 0, log ? log.tokens : 0),
    cost: Math.max(usage.cost_usd || 0, m.cost_usd || 0),
  };
}

function eventItem(type, data) {
  const item = el('li', { 'data-testid': 'step-event', 'data-type': type, class: 'event' });
  item.append(el('span', { class: 'event-type' }, type));
  switch (type) {
    case 'started':
      item.append(' on ' + (data.pool_id || 'its pool') + (data.replica_id ? ' / ' + data.replica_id : ''));
      break;
    case 'narration':
      item.append(' ' + (data.text || ''));
      break;
    case 'tool_suggest':
      item.append(' ' + data.tool + ' ', el('code', null, json(data.args, 400)));
      if (data.reason) item.append(' - ' + data.reason);
      break;
    case 'fact':
      item.append(' ' + data.type + ' ', el('code', null, json(data.data, 400)));
      break;
    case 'checkpoint':
      item.append(' ' + data.checkpoint_id);
      break;
    case 'escalation':
      item.append(' ' + (data.reason || '') + (data.target ? ' -> ' + data.target : ''));
      break;
    case 'end':
      item.append(el('pre', { 'data-testid': 'step-output' }, json(data.output)));
      break;
    case 'error':
      item.append(
        ' ',
        el('code', { 'data-testid': 'step-error-code' }, data.code || 'ERROR'),
        ' ' + (data.message || ''),
      );
      break;
    default:
      item.append(' ', el('code', null, json(data, 400)));
  }
  return item;
}

/**
 * The panel of one step, in root; hidden until show(). links.step(record) is the href that
 * opens a step (a tool call's), links.close(record) the one that closes the panel.
 */
export function createStepDetail(root, links) {
  const name = el('h2', { 'data-testid': 'step-detail-name' });
  const status = el('span', { class: 'status', 'data-testid': 'step-detail-status' });
  const type = el('dd', { 'data-testid': 'step-detail-type' });
  const id = el('dd', null, el('code', { 'data-testid': 'step-detail-id' }));
  const took = el('dd', { 'data-testid': 'step-detail-duration' });
  const used = el('dd', { 'data-testid': 'step-detail-tokens' });
  const spent = el('dd', { 'data-testid': 'step-detail-cost' });
  const note = el('p', { class: 'note', 'data-testid': 'step-note', hidden: true });
  const metrics = el('p', { class: 'muted', 'data-testid': 'step-metrics', hidden: true });
  const text = el('pre', { class: 'text', 'data-testid': 'step-text' });
  const calls = el('ul', { class: 'calls', 'data-testid': 'step-tool-calls' });
  const events = el('ol', { class: 'events', 'data-testid': 'step-events' });
  const input = el('pre', { 'data-testid': 'step-input' });
  const close = el('a', { class: 'close', 'data-testid': 'step-detail-close', title: 'close' }, 'x');
  root.append(
    el('div', { class: 'detail-head' }, name, status, close),
    el('dl', null, el('dt', null, 'type'), type, el('dt', null, 'step'), id,
      el('dt', null, 'duration'), took, el('dt', null, 'tokens'), used, el('dt', null, 'cost'), spent),
    note,
    el('h3', null, 'Text'),
    text,
    metrics,
    el('h3', null, 'Tool calls'),
    calls,
    el('h3', null, 'Events'),
    events,
    el('details', null, el('summary', null, 'Input'), input),
  );
  root.hidden = true;
  let shown = null;
  const UNSET = {};
  let shownInput = UNSET;

  function renderMetrics(log) {
    metrics.hidden = !(log && log.metrics);
    if (log && log.metrics) {
      setText(metrics, 'metrics: ' + tokens(log.metrics.tokens_in, log.metrics.tokens_out) +
        ', ' + cost(log.metrics.cost_usd));
    }
  }

  return {
    /** Shows step (a record) with its log (null: not followed) and why, when not followed. */
    show(step, log, children, reason) {
      const fresh = !shown || shown.step.step_id !== step.step_id || shown.log !== log;
      shown = { step, log };
      root.hidden = false;
      close.setAttribute('href', links.close(step));
      if (fresh) {
        text.textContent = log ? log.chunks.join('') : '';
        events.replaceChildren(...(log ? log.events.map((e) => eventItem(e.type, e.data)) : []));
        shownInput = UNSET;
        renderMetrics(log);
      }
      note.hidden = !reason;
      setText(note, reason || '');
      this.update(step, children);
    },
    /** Updates the record's fields and the tool calls (children of type tool_call). */
    update(step, children) {
      if (!shown || shown.step.step_id !== step.step_id) return;
      shown.step = step;
      const log = shown.log;
      const now = Date.now();
      setText(name, stepName(step));
      const st = statusOf(step, log);
      setText(status, st);
      status.dataset.status = st;
      setText(type, step.type);
      setText(id.firstChild, step.step_id);
      // A step's input does not change, but a record may come after a sketch of the step
      // without one (a thread's turn seen on its stream first).
      if (shownInput === UNSET || (shownInput === null && step.input !== null)) {
        shownInput = step.input;
        setText(input, json(step.input));
      }
      setText(took, duration(elapsed(step, now)));
      const u = usageOf(step, log);
      setText(used, tokens(u.tokensIn, u.tokensOut));
      setText(spent, cost(u.cost));
      const items = children.filter((c) => c.type === 'tool_call').map((c) => {
        const call = el('a', { href: links.step(c) },
          stepName(c), ' ', el('code', null, json(c.input && c.input.args, 300)));
        const out = c.error ? c.error.code + ': ' + c.error.message
          : LIVE_STEP.has(c.status) ? c.status : json(c.output, 300);
        return el('li', { 'data-testid': 'step-tool-call', 'data-step-id': c.step_id, 'data-status': c.status },
          call, ' -> ', el('code', null, out));
      });
      if (calls.childElementCount !== items.length || items.some((li, i) => li.textContent !== calls.children[i].textContent)) {
        calls.replaceChildren(...items);
      }
    },
    /** An event of the shown step's log, as it arrives. */
    event(type, data) {
      if (!shown) return;
      if (type === 'token') text.append(typeof data.t === 'string' ? data.t : '');
      else if (type === 'metrics') renderMetrics(shown.log);
      else events.append(eventItem(type, data));
    },
    /** The step shown, or null. */
    current() {
      return shown ? shown.step.step_id : null;
    },
    hide() {
      shown = null;
      root.hidden = true;
    },
  };
}
`;
