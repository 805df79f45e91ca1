/**
 * @module Runs an async operation over many items, a bounded number at a time: the durable
 * agents' crash tests send and poll thousands of actors over HTTP this way.
 */

/** Runs `op` over `items`, `lanes` at a time; resolves when every one has. */
export async function pooled<T>(
  items: readonly T[],
  lanes: number,
  op: (t: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < items.length) await op(items[next++] as T);
    }),
  );
}
