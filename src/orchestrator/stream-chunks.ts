/**
 * @module A streamed response: text chunks held to a channel's length, then one final chunk
 * with the formatted response; and the two wire framings of a chunk, SSE and websocket.
 */
import { checkChannel, stripMarkdown } from './channel-text.js';
import type { Channel, Response, ResponseChunk } from './responder.js';

/**
 * The JSON message of `chunk`: `{"type":"chunk","index":0,"text":"Hel"}`, or for the final
 * chunk `{"type":"done","index":3,"text":"","response":{…}}`. The websocket framing sends it
 * as one text message; the SSE framing as the `data` of one event.
 */
function chunkMessage(chunk: ResponseChunk): string {
  if (typeof chunk !== 'object' || (chunk as unknown) === null) {
    throw new TypeError('chunk must be a ResponseChunk object');
  }
  if (!(Number.isInteger(chunk.index) && chunk.index >= 0)) {
    throw new RangeError(`chunk.index must be an integer >= 0, got ${String(chunk.index)}`);
  }
  if (typeof chunk.text !== 'string') throw new TypeError('chunk.text must be a string');
  return JSON.stringify({
    type: chunk.done ? 'done' : 'chunk',
    index: chunk.index,
    text: chunk.text,
    ...(chunk.response === undefined ? {} : { response: chunk.response }),
  });
}

/**
 * `chunk` as one Server-Sent Events frame: `event: chunk` (`event: done` for the final
 * one), `id: <index>`, one `data:` line holding the chunk's JSON message (the same message
 * {@link websocketChunk} sends), then a blank line. JSON escapes line breaks inside strings,
 * so the data never needs a second line.
 *
 * @example
 * res.write(sseChunk({ index: 0, text: 'Hel', done: false }));
 * // 'event: chunk\nid: 0\ndata: {"type":"chunk","index":0,"text":"Hel"}\n\n'
 */
export function sseChunk(chunk: ResponseChunk): string {
  const data = chunkMessage(chunk);
  return `event: ${chunk.done ? 'done' : 'chunk'}\nid: ${chunk.index}\ndata: ${data}\n\n`;
}

/**
 * `chunk` as one websocket text message: `{"type":"chunk","index":0,"text":"Hel"}`, or
 * `{"type":"done","index":3,"text":"","response":{…}}` for the final one.
 *
 * @example
 * socket.send(websocketChunk(chunk));
 */
export function websocketChunk(chunk: ResponseChunk): string {
  return chunkMessage(chunk);
}

/**
 * The chunks of a streamed response: each text of `texts` as a chunk as it comes, then a
 * final `{ done: true, text: '', response }` whose response `finish` makes (typically the
 * responder's `format` of the finished result).
 *
 * - The chunks' texts together never have more than `channel.maxLength` code points: the
 *   text that would pass it is cut at the limit (on a code point, not a word: what is sent
 *   cannot be taken back to cut it elsewhere), and later texts are read but not sent, so the
 *   source runs to its end and `finish` can see the whole result. The final response,
 *   fitted by its responder, is what a client should keep.
 * - On a channel without markdown each text is made plain on its own
 *   ({@link stripMarkdown}); markup spanning two texts (`**bo` + `ld**`) is not recognised
 *   and passes through. A high surrogate ending a text is held back until the next, so an
 *   emoji split between two texts is sent whole. Empty texts are skipped.
 * - Backpressure: `texts` is read only when the consumer asks for the next chunk. If the
 *   consumer stops early (`break`, `return()`), the source's `return()` is called. If the
 *   source or `finish` fails, the iteration rejects with its error and there is no final
 *   chunk.
 *
 * @example
 * for await (const chunk of chunksOfText(tokens, channel, () => responder.format(result(), channel, ctx))) {
 *   res.write(sseChunk(chunk));
 * }
 */
export function chunksOfText(
  texts: AsyncIterable<string>,
  channel: Channel,
  finish: () => Promise<Response>,
): AsyncIterable<ResponseChunk> {
  checkChannel(channel);
  if (
    typeof texts !== 'object' ||
    (texts as unknown) === null ||
    typeof texts[Symbol.asyncIterator] !== 'function'
  ) {
    throw new TypeError('chunksOfText: texts must be an async iterable of strings');
  }
  if (typeof finish !== 'function') throw new TypeError('chunksOfText: finish must be a function');
  return chunks(texts, channel, finish);
}

async function* chunks(
  texts: AsyncIterable<string>,
  channel: Channel,
  finish: () => Promise<Response>,
): AsyncGenerator<ResponseChunk, void, undefined> {
  let index = 0;
  let left = channel.maxLength ?? Infinity;
  let held = '';
  // `for await` calls the source's `return()` when this generator is returned early.
  for await (const value of texts) {
    if (typeof value !== 'string') {
      throw new TypeError(`chunksOfText: texts must yield strings, got ${typeof value}`);
    }
    if (left === 0) continue;
    let text = held + value;
    held = '';
    if (isHighSurrogate(text.charCodeAt(text.length - 1))) {
      held = text.slice(-1);
      text = text.slice(0, -1);
    }
    const piece = cutTo(channel.supportsMarkdown ? text : stripMarkdown(text), left);
    if (piece.text === '') continue;
    left -= piece.points;
    yield { index: index++, text: piece.text, done: false };
  }
  if (held !== '' && left > 0) yield { index: index++, text: held, done: false };
  const response = await finish();
  yield { index, text: '', done: true, response };
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** `text`'s first `max` code points, and how many code points that is. */
function cutTo(text: string, max: number): { text: string; points: number } {
  const points = Array.from(text);
  if (points.length <= max) return { text, points: points.length };
  return { text: points.slice(0, max).join(''), points: max };
}
