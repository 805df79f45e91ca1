/**
 * @module Keyed rows of a list kept in the order of the last read: each item's element put in
 * its place in `parent`, the items no longer read dropped. The runs and threads lists, and
 * the workflows' cards, share it.
 */

/** Puts the elements of `keys`' items in `parent` in that order; drops the other items of `byKey`. */
export function placeRows<T>(
  parent: HTMLElement,
  byKey: Map<string, T>,
  keys: readonly string[],
  elementOf: (item: T) => HTMLElement,
): void {
  const keep = new Set(keys);
  keys.forEach((key, i) => {
    const item = byKey.get(key);
    if (item === undefined) return;
    const node = elementOf(item);
    if (parent.children[i] !== node) parent.insertBefore(node, parent.children[i] ?? null);
  });
  for (const [key, item] of byKey) {
    if (!keep.has(key)) {
      elementOf(item).remove();
      byKey.delete(key);
    }
  }
}
