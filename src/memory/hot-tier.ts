/**
 * @module The in-process hot tier: each scope key's conversation capped at `maxMessages`,
 * and conversations idle longer than `idleMs` evicted (seed 002: cleared when the session
 * ends). Fast and ephemeral; `redisHotTier` is the one many hosts share.
 */
import { systemClock, type Clock } from '../context/clock.js';
import type { ConversationMessage, HotMessage, HotTier } from './memory-types.js';

/** Options of {@link memoryHotTier}. */
export interface MemoryHotTierOptions {
  /** Messages kept per conversation; default 50 (seed 002). */
  readonly maxMessages?: number;
  /** A conversation untouched this long is dropped; default 30 minutes. */
  readonly idleMs?: number;
  readonly clock?: Clock;
}

interface Conversation {
  messages: HotMessage[];
  n: number;
  touched: number;
}

/** Checks a count option: a whole number ≥ 1. */
export function wholeAtLeastOne(name: string, value: number): number {
  if (!(Number.isInteger(value) && value >= 1)) {
    throw new RangeError(`${name} must be a whole number >= 1, got ${value}`);
  }
  return value;
}

/** Merges conversations (each oldest first) into the `limit` most recent, oldest first. */
export function mergeRecent(
  lists: readonly (readonly HotMessage[])[],
  limit: number,
): HotMessage[] {
  if (lists.length === 1) {
    const only = lists[0] ?? [];
    return only.slice(Math.max(0, only.length - limit));
  }
  const all = lists.flat();
  all.sort((a, b) => a.ts - b.ts || a.n - b.n);
  return all.slice(Math.max(0, all.length - limit));
}

class MemoryHotTier implements HotTier {
  readonly name = 'inmemory';
  readonly #max: number;
  readonly #idleMs: number;
  readonly #clock: Clock;
  readonly #conversations = new Map<string, Conversation>();

  constructor(options: MemoryHotTierOptions) {
    this.#max = wholeAtLeastOne('hot tier maxMessages', options.maxMessages ?? 50);
    this.#idleMs = options.idleMs ?? 30 * 60_000;
    if (!(this.#idleMs > 0))
      throw new RangeError(`hot tier idleMs must be > 0, got ${this.#idleMs}`);
    this.#clock = options.clock ?? systemClock;
  }

  append(key: string, message: ConversationMessage, ts: number): Promise<void> {
    const now = this.#clock.now();
    this.#evict(now);
    let c = this.#conversations.get(key);
    if (!c) {
      c = { messages: [], n: 0, touched: now };
      this.#conversations.set(key, c);
    }
    c.touched = now;
    // Frozen, so `conversation` hands out the stored messages without copying them.
    c.messages.push(Object.freeze({ role: message.role, content: message.content, ts, n: ++c.n }));
    if (c.messages.length > this.#max) c.messages.splice(0, c.messages.length - this.#max);
    // Map order is insertion order: keep it the order of last use, for eviction.
    this.#conversations.delete(key);
    this.#conversations.set(key, c);
    return Promise.resolve();
  }

  conversation(keys: readonly string[], limit: number): Promise<HotMessage[]> {
    const now = this.#clock.now();
    this.#evict(now);
    const lists: HotMessage[][] = [];
    for (const key of keys) {
      const c = this.#conversations.get(key);
      if (c) lists.push(c.messages);
    }
    return Promise.resolve(mergeRecent(lists, limit));
  }

  /** Drops conversations idle past `idleMs` (the least recently used come first). */
  #evict(now: number): void {
    for (const [key, c] of this.#conversations) {
      if (now - c.touched < this.#idleMs) break;
      this.#conversations.delete(key);
    }
  }

  close(): Promise<void> {
    this.#conversations.clear();
    return Promise.resolve();
  }
}

/** The in-process hot tier; see the module. */
export function memoryHotTier(options: MemoryHotTierOptions = {}): HotTier {
  return new MemoryHotTier(options);
}
