import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonicalHash,
  canonicalJson,
  MAX_CANONICAL_DEPTH,
} from '../../src/context/canonical-json.js';
import { InvalidParamsError } from '../../src/errors/invalid-params-error.js';

describe('canonicalJson (API.md: keys sorted, no insignificant whitespace)', () => {
  it('sorts keys at every depth and leaves out undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: undefined } })).toBe(
      '{"a":{"d":[3,{"y":2,"z":1}]},"b":1}',
    );
  });

  it('gives the same text for the same content whatever the key order (NERVE-4001)', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (record) => {
        const reversed = Object.fromEntries(Object.entries(record).reverse());
        expect(canonicalJson(reversed)).toBe(canonicalJson(record));
        expect(canonicalHash(reversed)).toBe(canonicalHash(record));
      }),
    );
  });

  it('round-trips through JSON.parse to equal content', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(JSON.parse(canonicalJson(value))).toEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
  });

  it('changes when any value changes', () => {
    expect(canonicalHash({ a: 1 })).not.toBe(canonicalHash({ a: 2 }));
    expect(canonicalHash(['a', 'b'])).not.toBe(canonicalHash(['b', 'a']));
  });

  it('refuses what JSON cannot hold, naming where it is', () => {
    expect(() => canonicalJson({ a: [1, Number.NaN] })).toThrow(/\$\.a\[1\] is NaN/);
    expect(() => canonicalJson({ f: () => 1 })).toThrow(/\$\.f is a function/);
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow(/cycle/);
  });

  it('regression: a value nested 100 000 deep is INVALID_PARAMS naming the bound, not a stack overflow', () => {
    const nest = (depth: number): unknown => {
      let v: unknown = [];
      for (let i = 1; i < depth; i++) v = i % 2 === 0 ? [v] : { v };
      return v;
    };
    const err = (() => {
      try {
        canonicalHash(nest(100_000));
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(err).toBeInstanceOf(InvalidParamsError);
    expect((err as InvalidParamsError).details).toEqual({
      limit: 'depth',
      max: MAX_CANONICAL_DEPTH,
    });
    // Up to the bound, it hashes.
    expect(canonicalJson(nest(MAX_CANONICAL_DEPTH))).toMatch(/^\{"v":/);
    expect(() => canonicalJson(nest(MAX_CANONICAL_DEPTH + 1))).toThrow(InvalidParamsError);
  });
});
