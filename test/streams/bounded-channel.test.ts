import { describe, expect, it } from 'vitest';
import { BoundedChannel, DROPPABLE_TYPES } from '../../src/streams/bounded-channel.js';

type Item = { readonly type: string; readonly n: number };
const channel = (capacity: number) =>
  new BoundedChannel<Item>(capacity, (item) => DROPPABLE_TYPES.has(item.type));
const token = (n: number): Item => ({ type: 'token', n });

describe('STREAM-2003: a bounded channel', () => {
  it('passes items in order and asks the producer to wait once it is full', async () => {
    const ch = channel(2);
    expect(ch.push(token(1))).toBeNull();
    const wait = ch.push(token(2));
    expect(wait).toBeInstanceOf(Promise);
    let released = false;
    void wait?.then(() => (released = true));
    await Promise.resolve();
    expect(released).toBe(false);
    expect(await ch.next()).toEqual({ done: false, value: token(1) });
    await Promise.resolve();
    expect(released).toBe(true);
    expect(await ch.next()).toEqual({ done: false, value: token(2) });
  });

  it('when full drops metrics and narration (counted) but never tokens or facts', () => {
    const ch = channel(1);
    void ch.push(token(1));
    expect(ch.push({ type: 'narration', n: 2 })).toBeNull();
    expect(ch.push({ type: 'metrics', n: 3 })).toBeNull();
    void ch.push({ type: 'fact', n: 4 });
    void ch.push(token(5));
    expect(ch.dropped).toBe(2);
    expect(ch.size).toBe(3);
  });

  it('keeps droppable events while there is room', () => {
    const ch = channel(4);
    void ch.push({ type: 'narration', n: 1 });
    expect(ch.dropped).toBe(0);
    expect(ch.size).toBe(1);
  });

  it('ends after close, fails after fail, and lets the producer go when abandoned', async () => {
    const ch = channel(1);
    void ch.push(token(1));
    ch.close();
    expect(await ch.next()).toEqual({ done: false, value: token(1) });
    expect((await ch.next()).done).toBe(true);

    const failing = channel(1);
    failing.fail(new Error('producer failed'));
    await expect(failing.next()).rejects.toThrow('producer failed');

    const abandoned = channel(1);
    const wait = abandoned.push(token(1));
    abandoned.abandon();
    await expect(wait).resolves.toBeUndefined();
    expect(abandoned.push(token(2))).toBeNull();
  });

  it('refuses a capacity below 1', () => {
    expect(() => channel(0)).toThrow(RangeError);
  });
});
