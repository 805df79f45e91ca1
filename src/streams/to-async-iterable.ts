/** @module An RxJS Observable consumed as an async iterable. */
import type { Observable, Subscription } from 'rxjs';

/**
 * Iterates `source`, subscribing on the first `next()` and unsubscribing when the loop
 * ends early (`break`, `return`, a throw). Values that arrive between pulls are queued.
 * An error of the source is thrown from `next()`.
 */
export function toAsyncIterable<T>(source: Observable<T>): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<T> {
      const queue: T[] = [];
      let head = 0;
      let finished = false;
      let failure: { readonly error: unknown } | null = null;
      let wake: (() => void) | null = null;
      let sub: Subscription | null = null;
      const notify = (): void => {
        const w = wake;
        wake = null;
        w?.();
      };
      const ensure = (): void => {
        sub ??= source.subscribe({
          next: (v) => {
            queue.push(v);
            notify();
          },
          error: (e: unknown) => {
            failure = { error: e };
            notify();
          },
          complete: () => {
            finished = true;
            notify();
          },
        });
      };
      return {
        async next(): Promise<IteratorResult<T>> {
          ensure();
          for (;;) {
            if (head < queue.length) {
              const value = queue[head++] as T;
              if (head > 1024 && head * 2 > queue.length) {
                queue.splice(0, head);
                head = 0;
              }
              return { done: false, value };
            }
            if (failure) throw failure.error;
            if (finished) return { done: true, value: undefined };
            await new Promise<void>((resolve) => (wake = resolve));
          }
        },
        return(): Promise<IteratorResult<T>> {
          sub?.unsubscribe();
          finished = true;
          return Promise.resolve({ done: true, value: undefined });
        },
      };
    },
  };
}
