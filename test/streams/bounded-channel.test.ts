import { describe, expect, it } from 'vitest';
import { firstValueFrom, lastValueFrom, Subject, tap, toArray } from 'rxjs';
import {
  bounded,
  BoundedChannel,
  DROPPABLE_TYPES,
  fromChannel,
} from '../../src/streams/bounded-channel.js';

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

describe('the bounded channel as RxJS', () => {
  const isDroppable = (item: Item) => DROPPABLE_TYPES.has(item.type);

  it('bounded(): behind by its capacity, drops only droppable items (counted), keeps order', async () => {
    const source = new Subject<Item>();
    const seen: Item[] = [];
    const dropped: Item[] = [];
    const done = lastValueFrom(
      source.pipe(
        bounded(2, isDroppable, (item) => dropped.push(item)),
        tap((item) => seen.push(item)),
      ),
      { defaultValue: null },
    );
    // A synchronous burst: the consumer has not pulled anything yet.
    source.next(token(1));
    source.next({ type: 'narration', n: 2 });
    source.next({ type: 'narration', n: 3 });
    source.next(token(4));
    source.next({ type: 'metrics', n: 5 });
    source.complete();
    await done;
    expect(seen.map((i) => i.n)).toEqual([1, 2, 4]);
    expect(dropped.map((i) => i.n)).toEqual([3, 5]);
  });

  it('fromChannel(): a source that ends, or fails, with its channel', async () => {
    const ch = channel(4);
    void ch.push(token(1));
    void ch.push(token(2));
    ch.close();
    expect(await firstValueFrom(fromChannel(ch).pipe(toArray()))).toEqual([token(1), token(2)]);

    const failing = channel(1);
    failing.fail(new Error('gone'));
    await expect(firstValueFrom(fromChannel(failing))).rejects.toThrow('gone');
  });

  it('an error upstream reaches the subscriber after the items before it', async () => {
    const source = new Subject<Item>();
    const seen: number[] = [];
    const done = lastValueFrom(
      source.pipe(
        bounded(4, isDroppable),
        tap((i) => seen.push(i.n)),
      ),
    );
    source.next(token(1));
    source.error(new Error('upstream failed'));
    await expect(done).rejects.toThrow('upstream failed');
    expect(seen).toEqual([1]);
  });
});
