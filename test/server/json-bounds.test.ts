import { describe, expect, it } from 'vitest';
import { HttpError } from '../../src/server/http-errors.js';
import { parseJsonBody } from '../../src/server/json-body.js';
import { checkJsonBounds, MAX_JSON_DEPTH, MAX_JSON_KEYS } from '../../src/server/json-bounds.js';

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');

/** The refusal of `text`'s bounds, or `null`. */
function refusal(text: string): HttpError | null {
  try {
    checkJsonBounds(bytes(text));
    return null;
  } catch (err) {
    expect(err).toBeInstanceOf(HttpError);
    return err as HttpError;
  }
}

describe('the JSON bounds of a request body', () => {
  it(`takes ${MAX_JSON_DEPTH} levels of arrays and objects, refuses one more naming the bound`, () => {
    const nested = (n: number): string => `${'[{"a":'.repeat(n / 2)}1${'}]'.repeat(n / 2)}`;
    expect(refusal(nested(MAX_JSON_DEPTH))).toBeNull();
    const err = refusal(nested(MAX_JSON_DEPTH + 2));
    expect(err).toMatchObject({
      status: 400,
      code: 'INVALID_PARAMS',
      details: { limit: 'depth', max: MAX_JSON_DEPTH },
    });
    expect(refusal('['.repeat(100_000))?.details).toEqual({ limit: 'depth', max: 64 });
  });

  it(`takes ${MAX_JSON_KEYS} keys in one object, refuses one more; keys of sibling objects count apart`, () => {
    const object = (n: number, from = 0): string =>
      `{${Array.from({ length: n }, (_, i) => `"k${from + i}":${i}`).join(',')}}`;
    expect(refusal(object(MAX_JSON_KEYS))).toBeNull();
    expect(refusal(object(MAX_JSON_KEYS + 1))?.details).toEqual({
      limit: 'keys',
      max: MAX_JSON_KEYS,
    });
    expect(refusal(`[${object(MAX_JSON_KEYS)},${object(MAX_JSON_KEYS)}]`)).toBeNull();
    // A nested object's keys are its own: the outer one has two.
    expect(refusal(`{"a":${object(MAX_JSON_KEYS)},"b":1}`)).toBeNull();
  });

  it('counts structure only outside strings: brackets, colons and escaped quotes inside them are text', () => {
    const text = JSON.stringify({ s: `${'['.repeat(500)}${':'.repeat(5_000)}\\"{{{` });
    expect(refusal(text)).toBeNull();
    expect(refusal(JSON.stringify(Array(2_000).fill('a:b')))).toBeNull();
  });

  it('leaves malformed JSON to the parser, which names it', () => {
    expect(refusal(']]]}}}')).toBeNull();
    expect(() => parseJsonBody(bytes(']]'))).toThrow(/not valid JSON/);
    expect(() => parseJsonBody(bytes('['.repeat(65)))).toThrow(/deeper than 64/);
  });
});
