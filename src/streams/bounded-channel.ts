/**
 * @module A bounded channel for a stream of step events, with STREAM-2003's policy: when it
 * is full, `metrics` and `narration` are dropped (and counted), while everything else —
 * `token` and `fact` above all — is kept, and the producer is asked to wait for room.
 */
import { Observable, type OperatorFunction } from 'rxjs';

/** Event types the channel may drop when full. */
export const DROPPABLE_TYPES: ReadonlySet<string> = new Set(['metrics', 'narration']);

/** Default capacity of a channel, in items. */
export const DEFAULT_CHANNEL_CAPACITY = 1_024;

/**
 * One producer, one consumer. `push` returns `null` when the producer may go on, or a promise
 * that resolves when the consumer has made room. Items come out in order.
 */
export class BoundedChannel<T> {
  readonly capacity: number;
  readonly #droppable: (item: T) => boolean;
  #queue: T[] = [];
  #head = 0;
  #dropped = 0;
  #closed = false;
  #failure: { readonly error: unknown } | null = null;
  #room: (() => void)[] = [];
  #wake: (() => void) | null = null;

  constructor(capacity = DEFAULT_CHANNEL_CAPACITY, droppable: (item: T) => boolean = () => false) {
    if (!(Number.isInteger(capacity) && capacity >= 1)) {
      throw new RangeError(`channel capacity must be a whole number >= 1, got ${capacity}`);
    }
    this.capacity = capacity;
    this.#droppable = droppable;
  }

  /** Items waiting for the consumer. */
  get size(): number {
    return this.#queue.length - this.#head;
  }

  /** Droppable items let go because the channel was full. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Adds `item`, or drops it if it may be dropped and the channel is full. */
  push(item: T): Promise<void> | null {
    if (this.#closed) return null;
    const full = this.size >= this.capacity;
    if (full && this.#droppable(item)) {
      this.#dropped++;
      return null;
    }
    this.#queue.push(item);
    this.#notify();
    if (!full && this.size < this.capacity) return null;
    return new Promise((resolve) => this.#room.push(resolve));
  }

  /** No more items; the consumer sees the end after the queued ones. */
  close(): void {
    this.#closed = true;
    this.#notify();
  }

  /** The producer failed; the consumer sees the error after the queued items. */
  fail(error: unknown): void {
    this.#failure = { error };
    this.close();
  }

  /** Takes the next item, waiting for one; `done` after close. */
  async next(): Promise<IteratorResult<T>> {
    for (;;) {
      if (this.#head < this.#queue.length) {
        const value = this.#queue[this.#head++] as T;
        if (this.#head > 1_024 && this.#head * 2 > this.#queue.length) {
          this.#queue = this.#queue.slice(this.#head);
          this.#head = 0;
        }
        if (this.size < this.capacity) this.#release();
        return { done: false, value };
      }
      if (this.#failure) throw this.#failure.error;
      if (this.#closed) return { done: true, value: undefined };
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  /** The consumer stopped early: drop what is queued and let the producer go. */
  abandon(): void {
    this.#closed = true;
    this.#queue = [];
    this.#head = 0;
    this.#release();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }

  #release(): void {
    const room = this.#room;
    this.#room = [];
    for (const resolve of room) resolve();
  }
}

/**
 * The channel's items as an RxJS source: it pulls at the pace of its subscriber (whose
 * `next` runs synchronously), and ends or fails with the channel. One subscriber: a second
 * would split the items.
 */
export function fromChannel<T>(channel: BoundedChannel<T>): Observable<T> {
  return new Observable<T>((subscriber) => {
    void (async () => {
      try {
        for (;;) {
          const r = await channel.next();
          if (subscriber.closed) return;
          if (r.done) {
            subscriber.complete();
            return;
          }
          subscriber.next(r.value);
        }
      } catch (err) {
        subscriber.error(err);
      }
    })();
    return () => {
      channel.abandon();
    };
  });
}

/**
 * An RxJS operator that passes its source through a {@link BoundedChannel}: when the
 * consumer downstream falls `capacity` items behind, droppable items are dropped and counted
 * (`onDrop`) and everything else is kept in order (STREAM-2003). An Observable cannot hold
 * its producer, so kept items may pass the capacity; use `RunStream` iteration for a stream
 * that holds its steps.
 */
export function bounded<T>(
  capacity: number,
  droppable: (item: T) => boolean,
  onDrop: (item: T) => void = () => undefined,
): OperatorFunction<T, T> {
  return (source) =>
    new Observable<T>((subscriber) => {
      const channel = new BoundedChannel<T>(capacity, (item) => {
        if (!droppable(item)) return false;
        onDrop(item);
        return true;
      });
      const downstream = fromChannel(channel).subscribe(subscriber);
      const upstream = source.subscribe({
        next: (item) => {
          void channel.push(item);
        },
        error: (err: unknown) => {
          channel.fail(err);
        },
        complete: () => {
          channel.close();
        },
      });
      return () => {
        upstream.unsubscribe();
        downstream.unsubscribe();
      };
    });
}
