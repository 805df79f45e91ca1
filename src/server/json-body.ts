/**
 * @module The server's one body parser: JSON as bytes, strictly. A body nested too deep or
 * with too many keys in an object (`json-bounds.ts`, checked before parsing), invalid UTF-8,
 * malformed JSON and a `__proto__` key (or a `constructor` carrying a `prototype`, the other way to
 * poison an object's prototype once a body is merged) are the caller's 400 `INVALID_PARAMS`;
 * an empty body is no body. This takes the place of Fastify's own parser, whose
 * prototype-poisoning check it keeps.
 */
import { HttpError } from './http-errors.js';
import { checkJsonBounds } from './json-bounds.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Refuses the keys that could reach an object's prototype when a body is copied. */
function refusePoison(key: string, value: unknown): unknown {
  if (key === '__proto__') {
    throw new HttpError(400, 'INVALID_PARAMS', 'the body has a "__proto__" key', { key });
  }
  if (
    key === 'constructor' &&
    typeof value === 'object' &&
    value !== null &&
    Object.hasOwn(value, 'prototype')
  ) {
    throw new HttpError(400, 'INVALID_PARAMS', 'the body has a "constructor.prototype" key', {
      key: 'constructor.prototype',
    });
  }
  return value;
}

/**
 * The JSON value of a request body's bytes; `undefined` for an empty body. Throws
 * {@link HttpError} 400 `INVALID_PARAMS` naming what is wrong.
 */
export function parseJsonBody(bytes: Buffer): unknown {
  if (bytes.length === 0) return undefined;
  checkJsonBounds(bytes);
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new HttpError(400, 'INVALID_PARAMS', 'the body is not valid UTF-8');
  }
  // The reviver (a call per value) only where such a key can be: it holds `proto` or
  // `constructor` as written, or a `\u` escape that could spell either.
  const suspect = text.includes('proto') || text.includes('constructor') || text.includes('\\u');
  try {
    return (suspect ? JSON.parse(text, refusePoison) : JSON.parse(text)) as unknown;
  } catch (err) {
    if (err instanceof HttpError) throw err;
    throw new HttpError(400, 'INVALID_PARAMS', 'the body is not valid JSON', {
      reason: err instanceof Error ? err.message : String(err),
    });
  }
}
