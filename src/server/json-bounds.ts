/**
 * @module The shape limits of a request body, checked on its bytes before it is parsed: how
 * deep its arrays and objects nest, and how many keys one object has. A body past either is
 * the caller's 400 `INVALID_PARAMS` naming the limit, so no recursive code of the server
 * (hashing, copying, schema checks) ever sees a value deeper than {@link MAX_JSON_DEPTH}.
 * One pass over the bytes, no allocation; what is not valid JSON is left to `JSON.parse`.
 */
import { HttpError } from './http-errors.js';

/** How deep arrays and objects may nest in a request body (the top value is depth 1). */
export const MAX_JSON_DEPTH = 64;
/** How many keys one object of a request body may have. */
export const MAX_JSON_KEYS = 1_000;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COLON = 0x3a;

/**
 * Throws {@link HttpError} 400 `INVALID_PARAMS` when the JSON text in `bytes` nests deeper
 * than {@link MAX_JSON_DEPTH} or has an object with more than {@link MAX_JSON_KEYS} keys;
 * `details` names the limit (`limit: 'depth' | 'keys'`, `max`). Only structure outside
 * strings counts (a `{` inside a string is a character). Malformed JSON passes through
 * unjudged: the parser after it says what is wrong.
 */
export function checkJsonBounds(bytes: Uint8Array): void {
  // The key count of each open object, by depth (arrays hold -1: their `:` are not keys).
  const keys = new Int32Array(MAX_JSON_DEPTH + 1);
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i] as number;
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
      continue;
    }
    switch (b) {
      case QUOTE:
        inString = true;
        break;
      case OPEN_OBJECT:
      case OPEN_ARRAY:
        if (depth === MAX_JSON_DEPTH) {
          throw new HttpError(
            400,
            'INVALID_PARAMS',
            `the body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`,
            { limit: 'depth', max: MAX_JSON_DEPTH },
          );
        }
        keys[++depth] = b === OPEN_OBJECT ? 0 : -1;
        break;
      case CLOSE_OBJECT:
      case CLOSE_ARRAY:
        if (depth > 0) depth--;
        break;
      case COLON: {
        const n = keys[depth] ?? -1;
        if (depth === 0 || n < 0) break;
        keys[depth] = n + 1;
        if (n + 1 > MAX_JSON_KEYS) {
          throw new HttpError(
            400,
            'INVALID_PARAMS',
            `an object of the body has more than ${MAX_JSON_KEYS} keys`,
            { limit: 'keys', max: MAX_JSON_KEYS },
          );
        }
        break;
      }
      default:
        break;
    }
  }
}
