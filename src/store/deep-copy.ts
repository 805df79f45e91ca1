/** @module A fast deep copy for the plain data stores hold. */

/**
 * A deep copy of `value`. Plain objects, arrays and primitives (the shapes of records and
 * events) are copied directly, which is many times faster than `structuredClone`; anything
 * else (a Date, a Map, a typed array) goes through `structuredClone`, which also throws for
 * what cannot be stored at all, such as a function. A value made immutable by
 * {@link shareImmutable} (a recalled conversation, say) is shared, not copied: nobody can
 * change it, so a copy would only cost time and memory.
 */
export function deepCopy<T>(value: T): T {
  if (value === null || typeof value !== 'object') {
    return typeof value === 'function' || typeof value === 'symbol'
      ? structuredClone(value)
      : value;
  }
  return copyObject(value);
}

/** What {@link shareImmutable} froze all the way down. */
const immutable = new WeakSet<object>();

function markImmutable<T extends object>(value: T): T {
  immutable.add(value);
  return Object.freeze(value);
}

/**
 * Freezes `value` (plain objects and arrays of primitives, all the way down) and returns it;
 * {@link deepCopy} then shares it instead of copying it. For data handed to many holders
 * that none may change: recalled memory, say. Throws a `TypeError` for anything else (a
 * Date, a Map, a function), which freezing would not make immutable.
 */
export function shareImmutable<T>(value: T): T {
  if (value === null || typeof value !== 'object' || isImmutable(value)) {
    if (typeof value === 'function' || typeof value === 'symbol') {
      throw new TypeError(`shareImmutable: a ${typeof value} cannot be shared as data`);
    }
    return value;
  }
  if (Array.isArray(value)) {
    for (const v of value as unknown[]) shareImmutable(v);
  } else {
    const proto: unknown = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      throw new TypeError('shareImmutable: only plain objects and arrays can be shared');
    }
    for (const key in value) shareImmutable((value as Record<string, unknown>)[key]);
  }
  return markImmutable(value);
}

/**
 * Freezes `items` and shares it as {@link shareImmutable} does, trusting that each item
 * already went through `shareImmutable` (not checked again: this is for hot paths that
 * assemble arrays of items they made immutable themselves).
 */
export function shareImmutableItems<T>(items: T[]): readonly T[] {
  return markImmutable(items);
}

/** Whether `value` was made immutable by {@link shareImmutable}. */
export function isImmutable(value: unknown): boolean {
  return typeof value === 'object' && value !== null && immutable.has(value);
}

function copyObject<T extends object>(value: T): T {
  if (Array.isArray(value)) {
    // Only an immutable array is looked for: what is shared in bulk is lists (a recalled
    // conversation); a check on every object would cost every copy more than it saves.
    if (immutable.has(value)) return value;
    const out: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      out[i] = v === null || typeof v !== 'object' ? primitive(v) : copyObject(v);
    }
    return out as T;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return structuredClone(value);
  const out: Record<string, unknown> = {};
  for (const key in value) {
    const v: unknown = value[key];
    out[key] = v === null || typeof v !== 'object' ? primitive(v) : copyObject(v);
  }
  return out as T;
}

function primitive(v: unknown): unknown {
  return typeof v === 'function' || typeof v === 'symbol' ? structuredClone(v) : v;
}
