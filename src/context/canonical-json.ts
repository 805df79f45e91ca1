/**
 * @module Canonical JSON (API.md): keys sorted, no insignificant whitespace, so that the
 * same content always gives the same text, and the same sha256 (NERVE-4001, NERVE-4012).
 */
import { hash } from 'node:crypto';
import { InvalidParamsError } from '../errors/invalid-params-error.js';

/**
 * How deep arrays and objects may nest in a canonicalised value: a bound on the recursion,
 * twice what the server takes in a request body, so nothing a caller sends can exhaust
 * the stack here.
 */
export const MAX_CANONICAL_DEPTH = 128;

/**
 * The canonical JSON text of `value`: object keys sorted by code unit, no whitespace,
 * `undefined` members left out (as `JSON.stringify` does). Throws `TypeError` for what JSON
 * cannot hold exactly — a non-finite number, a bigint, a function, a symbol, a cycle —
 * rather than hashing something that does not round-trip, and `InvalidParamsError` for a
 * value nested deeper than {@link MAX_CANONICAL_DEPTH}.
 *
 * @example
 * canonicalJson({ b: 1, a: [true, null] }); // '{"a":[true,null],"b":1}'
 */
export function canonicalJson(value: unknown): string {
  return write(value, new Set(), '$', 0);
}

/** The sha256 (hex) of `text` as UTF-8. */
export function sha256Hex(text: string): string {
  // One-shot `crypto.hash` (Node 20.12+): a third of `createHash`'s time for short texts.
  return hash('sha256', text, 'hex');
}

/** The sha256 (hex) of `value`'s canonical JSON. */
export function canonicalHash(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

function write(value: unknown, seen: Set<object>, path: string, depth: number): string {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) {
        throw new TypeError(`canonicalJson: ${path} is ${value}, which JSON cannot hold`);
      }
      return JSON.stringify(value);
    case 'object': {
      if (value === null) return 'null';
      if (seen.has(value)) throw new TypeError(`canonicalJson: ${path} is a cycle`);
      if (depth === MAX_CANONICAL_DEPTH) {
        throw new InvalidParamsError(
          `the value nests arrays and objects deeper than ${MAX_CANONICAL_DEPTH} levels`,
          { details: { limit: 'depth', max: MAX_CANONICAL_DEPTH } },
        );
      }
      seen.add(value);
      let out: string;
      if (Array.isArray(value)) {
        out = `[${value.map((v: unknown, i) => (v === undefined ? 'null' : write(v, seen, `${path}[${i}]`, depth + 1))).join(',')}]`;
      } else {
        const json = (value as { toJSON?: unknown }).toJSON;
        if (typeof json === 'function') {
          out = write((json as () => unknown).call(value), seen, path, depth);
        } else {
          const record = value as Record<string, unknown>;
          const parts: string[] = [];
          for (const key of Object.keys(record).sort()) {
            const v = record[key];
            if (v === undefined) continue;
            parts.push(`${JSON.stringify(key)}:${write(v, seen, `${path}.${key}`, depth + 1)}`);
          }
          out = `{${parts.join(',')}}`;
        }
      }
      seen.delete(value);
      return out;
    }
    default:
      throw new TypeError(`canonicalJson: ${path} is a ${typeof value}, which JSON cannot hold`);
  }
}
