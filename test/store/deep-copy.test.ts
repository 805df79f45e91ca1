import { describe, expect, it } from 'vitest';
import {
  deepCopy,
  isImmutable,
  shareImmutable,
  shareImmutableItems,
} from '../../src/store/deep-copy.js';

describe('deepCopy and shareImmutable', () => {
  it('copies plain data all the way down', () => {
    const value = { a: [1, { b: 'x' }], c: null };
    const copy = deepCopy(value);
    expect(copy).toStrictEqual(value);
    expect(copy).not.toBe(value);
    expect(copy.a).not.toBe(value.a);
    expect(copy.a[1]).not.toBe(value.a[1]);
  });

  it('shares an immutable list instead of copying it, and copies what holds it', () => {
    const history = shareImmutable([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'hello' },
    ]);
    const input = { message: 'next', history };
    const copy = deepCopy(input);
    expect(copy).toStrictEqual(input);
    expect(copy).not.toBe(input);
    expect(copy.history).toBe(history);
  });

  it('freezes what it shares all the way down, so no holder can change it', () => {
    const shared = shareImmutable({ list: [{ n: 1 }], name: 'x' });
    expect(isImmutable(shared)).toBe(true);
    expect(Object.isFrozen(shared.list)).toBe(true);
    expect(Object.isFrozen(shared.list[0])).toBe(true);
    expect(() => {
      (shared.list as { n: number }[]).push({ n: 2 });
    }).toThrow(TypeError);
    expect(() => {
      (shared.list[0] as { n: number }).n = 5;
    }).toThrow(TypeError);
    // JSON and for...in see the data only.
    expect(JSON.stringify(shared)).toBe('{"list":[{"n":1}],"name":"x"}');
  });

  it('refuses what freezing would not make immutable', () => {
    expect(() => shareImmutable({ at: new Date(0) })).toThrow(/plain objects and arrays/);
    expect(() => shareImmutable({ f: () => 1 })).toThrow(/function cannot be shared/);
    expect(() => shareImmutable(new Map())).toThrow(TypeError);
  });

  it('a frozen list not made by shareImmutable is still copied', () => {
    const frozen = Object.freeze([{ role: 'user', content: 'hi' }]);
    expect(isImmutable(frozen)).toBe(false);
    const copy = deepCopy({ history: frozen });
    expect(copy.history).not.toBe(frozen);
    expect(copy.history).toStrictEqual(frozen);
  });

  it('shareImmutableItems freezes and shares a list of immutable items', () => {
    const items = [shareImmutable({ a: 1 }), shareImmutable({ a: 2 })];
    const list = shareImmutableItems(items);
    expect(Object.isFrozen(list)).toBe(true);
    expect(deepCopy({ list }).list).toBe(list);
  });
});
