/**
 * @module The trace UI's `ui/format.js` (a browser module, kept as a string): how runs,
 * steps and threads read on the page — durations, tokens, cost, a step's name — and a tiny
 * DOM helper. Pure functions; no state.
 */

/** `ui/format.js`. */
export const FORMAT_JS = String.raw`// axon trace UI: formatting, and a DOM helper.

/** Run statuses that may still change. */
export const LIVE_RUN = new Set(['running', 'waiting', 'cancelling']);
/** Step statuses that may still change. */
export const LIVE_STEP = new Set(['queued', 'running', 'waiting']);
/** Thread statuses that may still change. */
export const LIVE_THREAD = new Set(['queued', 'started']);

/** An element: el('span', { class: 'x', 'data-testid': 'y' }, 'text', child, ...). */
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

/** Sets an element's text only when it differs (no needless layout). */
export function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

/** A duration in ms as '350 ms', '4.2 s', '3 m 05 s', '2 h 07 m'. */
export function duration(ms) {
  if (!(ms >= 0)) return '-';
  if (ms < 1000) return Math.round(ms) + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(1) + ' s';
  const minutes = Math.floor(ms / 60000);
  if (minutes < 60) {
    return minutes + ' m ' + String(Math.floor((ms % 60000) / 1000)).padStart(2, '0') + ' s';
  }
  return Math.floor(minutes / 60) + ' h ' + String(minutes % 60).padStart(2, '0') + ' m';
}

/** How long a run or step took, or has been going (ended_at null: until now). */
export function elapsed(record, now) {
  const start = Date.parse(record.created_at);
  const end = record.ended_at ? Date.parse(record.ended_at) : now;
  return end - start;
}

/** Tokens as '12 in / 340 out'. */
export function tokens(tokensIn, tokensOut) {
  return (tokensIn || 0) + ' in / ' + (tokensOut || 0) + ' out';
}

/** A cost in USD: '$0', '$0.0042', '$1.25'. */
export function cost(usd) {
  if (!usd) return '$0';
  return usd >= 0.01 ? '$' + usd.toFixed(2) : '$' + usd.toPrecision(2);
}

/** A timestamp as the local time, with the date when it is not today. */
export function when(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '-';
  const today = new Date().toDateString() === d.toDateString();
  return today ? d.toLocaleTimeString() : d.toLocaleString();
}

/**
 * A step's name: the server's name field when the view has one, else what its input names
 * (the tool, the agent, the engine or model, the file operation).
 */
export function stepName(step) {
  if (typeof step.name === 'string' && step.name !== '') return step.name;
  const input = step.input && typeof step.input === 'object' ? step.input : {};
  switch (step.type) {
    case 'tool_call':
      return input.tool || 'tool';
    case 'agent':
      return input.agent || 'agent';
    case 'llm_call':
    case 'llm_plan':
      return input.model || input.engine || (step.provenance && step.provenance.engine) || 'llm';
    case 'fs_op':
      return (input.op || 'fs') + (input.path ? ' ' + input.path : '');
    case 'gate_eval':
      return input.fact_type || 'gate';
    case 'checkpoint':
      return input.label || 'checkpoint';
    default:
      return step.type;
  }
}

/** JSON for people: indented, cut past limit characters. */
export function json(value, limit) {
  let text;
  try {
    text = JSON.stringify(value, null, 2);
  } catch {
    text = String(value);
  }
  if (text === undefined) text = 'null';
  const max = limit || 4000;
  return text.length > max ? text.slice(0, max) + '\n...' : text;
}
`;
