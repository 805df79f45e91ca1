/**
 * @module Pure text helpers every responder shares: a result's text, markdown made plain,
 * and text fitted to a channel's length — counted in Unicode code points, cut on a word
 * boundary, never through a surrogate pair.
 */
import type { AgentResult } from '../actors/agent-result.js';
import type { Channel } from './responder.js';

/** The mark appended to a text that was cut; it counts toward the channel's limit. */
export const ELLIPSIS = '…';

/**
 * The text a user sees for `result`.
 *
 * - `success`: a string output as it is; `null` / `undefined` as `''`; anything else as JSON
 *   (a `bigint` as its digits in a string; an output JSON cannot show at all, such as a
 *   cycle or a function, as a fixed placeholder rather than an exception).
 * - `needs_data` and `needs_credentials`: the handler's message as it is, since it was
 *   written for the user ("Which city?"); the bare status if there is none.
 * - `error`, `timeout` and `wrong_handler`: `"<status>: <message>"`, the message being the
 *   error's (else the handler's); the bare status if there is none. The error's `code`,
 *   `details` and `cause` are left out: they are for logs, not for users.
 *
 * @example
 * textOf({ ...result, status: 'error', output: null, error: new InternalError('boom') }); // 'error: boom'
 */
export function textOf(result: AgentResult): string {
  if (typeof result !== 'object' || (result as unknown) === null) {
    throw new TypeError('result must be an AgentResult object');
  }
  const output: unknown = result.output;
  if (result.status === 'success') return valueText(output);
  const message = result.error?.message ?? (typeof output === 'string' ? output : '');
  if (result.status === 'needs_data' || result.status === 'needs_credentials') {
    return message === '' ? result.status : message;
  }
  return message === '' ? result.status : `${result.status}: ${message}`;
}

function valueText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return '';
  try {
    // Undefined for a function or a symbol; a cycle throws.
    const json = JSON.stringify(value, (_key, v: unknown) =>
      typeof v === 'bigint' ? v.toString() : v,
    ) as string | undefined;
    if (json !== undefined) return json;
  } catch {
    // Shown as below.
  }
  return UNSHOWABLE;
}

/** The text of a successful output that JSON cannot show (a function, a cycle). */
const UNSHOWABLE = '[an output that cannot be shown as text]';

/**
 * `text` cut to `channel.maxLength` Unicode code points (not UTF-16 units), with
 * `truncated` saying whether it was cut. A cut text ends in {@link ELLIPSIS}, counted
 * within the limit, so the result never has more than `maxLength` code points.
 *
 * The cut is at the last whitespace at or before the limit, with trailing whitespace
 * removed. A text with no such whitespace (one long word) is cut at the limit, on a
 * grapheme boundary when there is one (an emoji with modifiers, a flag, stays whole),
 * else on a code-point boundary — never through a surrogate pair. With `maxLength` 1 a cut
 * text is just the ellipsis. `maxLength` `null`: the text is unchanged. A text that fits
 * is returned unchanged, trailing whitespace and all.
 *
 * @example
 * fitToChannel('the quick brown fox', { ...DEFAULT_CHANNEL, maxLength: 12 }); // { text: 'the quick…', truncated: true }
 */
export function fitToChannel(
  text: string,
  channel: Channel,
): { readonly text: string; readonly truncated: boolean } {
  const max = channel.maxLength;
  if (max === null) return { text, truncated: false };
  const points = Array.from(text);
  if (points.length <= max) return { text, truncated: false };
  const room = max - ELLIPSIS.length;
  // Whitespace at index `room` counts too: cutting there keeps `room` code points.
  let cut = -1;
  for (let i = Math.min(room, points.length - 1); i > 0; i--) {
    if (isSpace(points[i])) {
      cut = i;
      break;
    }
  }
  let kept = cut > 0 ? trimEnd(points.slice(0, cut)) : [];
  if (kept.length === 0) kept = trimEnd(hardCut(points, room));
  return { text: kept.join('') + ELLIPSIS, truncated: true };
}

function isSpace(point: string | undefined): boolean {
  return point !== undefined && /^\s$/u.test(point);
}

function trimEnd(points: string[]): string[] {
  let end = points.length;
  while (end > 0 && isSpace(points[end - 1])) end--;
  return points.slice(0, end);
}

/** The first `room` code points of `points`, shortened to the last grapheme boundary. */
function hardCut(points: readonly string[], room: number): string[] {
  const head = points.slice(0, room);
  if (room <= 0) return head;
  // The grapheme that straddles the limit is left out whole, unless it is the first one.
  let boundary = 0;
  for (const { segment } of graphemes().segment(points.slice(0, room + 1).join(''))) {
    const size = Array.from(segment).length;
    if (boundary + size > room) break;
    boundary += size;
  }
  return boundary === 0 ? head : head.slice(0, boundary);
}

let segmenter: Intl.Segmenter | null = null;
function graphemes(): Intl.Segmenter {
  segmenter ??= new Intl.Segmenter(undefined, { granularity: 'grapheme' });
  return segmenter;
}

/**
 * `text` with its markdown made plain, for a channel whose `supportsMarkdown` is false:
 * emphasis (`*`, `**`, `_`, `__`, `~~`) and inline-code backticks removed, heading `#`s
 * removed, `[text](url)` and `![alt](url)` as `text (url)`, code fences removed (their
 * content kept as it is), `> ` quote marks removed, and list bullets (`*`, `+`, `-`) as
 * `- `. Code (inline or fenced) is left as it is inside.
 *
 * Gotchas: `_` only counts as emphasis at word edges, so `snake_case` stays; an unpaired
 * `*` (`2 * 3`) stays. It is a plain-text rendering, not a markdown parser: HTML,
 * reference links and tables pass through.
 *
 * @example
 * stripMarkdown('## Hi\n* **bold** [docs](https://x.dev)'); // 'Hi\n- bold docs (https://x.dev)'
 */
export function stripMarkdown(text: string): string {
  // Odd parts are fenced code: kept as they are, their fence lines dropped.
  const parts = text.split(/^[ \t]*```[^\n]*\n?/m);
  return parts.map((part, i) => (i % 2 === 1 ? part : stripBlocks(part))).join('');
}

function stripBlocks(text: string): string {
  const lines = text
    .replace(/^[ \t]{0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/gm, '$1')
    .replace(/^[ \t]{0,3}#{1,6}[ \t]*$/gm, '')
    .replace(/^([ \t]*)(?:>[ \t]?)+/gm, '$1')
    .replace(/^([ \t]*)[*+-][ \t]+/gm, '$1- ');
  // Odd parts are inline code: its backticks removed, its content kept as it is.
  return lines
    .split(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/)
    .map((part, i) => (i % 3 === 0 ? stripInline(part) : i % 3 === 2 ? part : ''))
    .join('');
}

function stripInline(text: string): string {
  let out = text.replace(/!?\[([^\]\n]*)\]\(([^()\s]*)\)/g, (_m, label: string, url: string) =>
    label === '' ? url : url === '' ? label : `${label} (${url})`,
  );
  // Innermost pairs first: `**a *b* c**` takes two passes.
  for (let pass = 0; pass < 4; pass++) {
    const before = out;
    out = out
      .replace(/(\*{1,3})([^*\s](?:[^*]*[^*\s])?)\1/g, '$2')
      .replace(/(^|[^\p{L}\p{N}_])(_{1,3})([^_\s](?:[^_]*[^_\s])?)\2(?![\p{L}\p{N}_])/gu, '$1$3')
      .replace(/~~([^~\s](?:[^~]*[^~\s])?)~~/g, '$1');
    if (out === before) break;
  }
  return out;
}

/**
 * `text` made ready for `channel`: its markdown made plain when the channel does not render
 * markdown ({@link stripMarkdown}), then fitted to its length ({@link fitToChannel}).
 */
export function textForChannel(
  text: string,
  channel: Channel,
): { readonly text: string; readonly truncated: boolean } {
  return fitToChannel(channel.supportsMarkdown ? text : stripMarkdown(text), channel);
}

/**
 * `channel` if it is a valid {@link Channel}; else a `TypeError` (a field of the wrong
 * type) or a `RangeError` (an empty name; a `maxLength` that is not a positive integer)
 * naming the field.
 *
 * @example
 * checkChannel({ name: 'sms', supportsMarkdown: false, supportsMedia: false, maxLength: 160 });
 */
export function checkChannel(channel: unknown, where = 'channel'): Channel {
  if (typeof channel !== 'object' || channel === null) {
    throw new TypeError(`${where} must be an object`);
  }
  const c = channel as Record<string, unknown>;
  if (typeof c['name'] !== 'string') throw new TypeError(`${where}.name must be a string`);
  if (c['name'] === '') throw new RangeError(`${where}.name must not be empty`);
  for (const flag of ['supportsMarkdown', 'supportsMedia'] as const) {
    if (typeof c[flag] !== 'boolean') throw new TypeError(`${where}.${flag} must be a boolean`);
  }
  const max = c['maxLength'];
  if (max !== null && typeof max !== 'number') {
    throw new TypeError(`${where}.maxLength must be a number or null`);
  }
  if (max !== null && !(Number.isInteger(max) && max > 0)) {
    throw new RangeError(`${where}.maxLength must be a positive integer or null, got ${max}`);
  }
  return channel as Channel;
}
