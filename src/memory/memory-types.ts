/**
 * @module The memory primitive of seed 002: the value types, the `Memory` interface agents
 * use, and the interfaces of the three tiers it is made of. Every item a tier holds sits
 * under a scope key (see `memory-scope.ts`); tiers only ever answer for the keys they are
 * asked about.
 */
import type { ExecContext, MemoryScope } from '../context/exec-context.js';

/** Seed 002's tiers: session state, episodes and facts, long-term knowledge. */
export type MemoryTier = 'hot' | 'warm' | 'cold';

/** What a warm item is. */
export type WarmKind = 'fact' | 'episode';

/** Something to remember (seed 002's `MemoryEvent`). */
export interface MemoryEvent {
  readonly content: string;
  /** Default `hot`. */
  readonly tier?: MemoryTier;
  /** Who may recall it; default the context's `memoryScope`. */
  readonly scope?: MemoryScope | null;
  /**
   * Labels a recall can filter by (`recall(query, ctx, { tags })`). Warm and cold items
   * only: a conversation message (the hot tier) carries none, and is refused with them.
   */
  readonly tags?: readonly string[];
  /**
   * What produced it (an extractor, an agent); recalled items carry it. Warm and cold items
   * only, as `tags`.
   */
  readonly source?: string;
  /** For the hot tier: the speaker; default `user`. */
  readonly role?: string;
  /** For the warm tier: a fact (default) or an episode. */
  readonly kind?: WarmKind;
}

/** One message of a conversation. */
export interface ConversationMessage {
  readonly role: string;
  readonly content: string;
}

/** What a recall assembles (seed 002's `MemoryContext`). */
export interface MemoryContext {
  /** Recent messages, oldest first (`TieredMemory` returns them frozen: share, do not change). */
  readonly conversation: readonly ConversationMessage[];
  /** Warm episodes, most relevant first. */
  readonly episodes: string[];
  /** Warm facts, most relevant first. */
  readonly facts: string[];
  /** Cold knowledge, most relevant first. */
  readonly knowledge: string[];
  /** The tokens of everything above, by the memory's token counter. */
  readonly token_count: number;
  /**
   * The facts, episodes and knowledge above as items, in that order: each with the tier and
   * category it came from, its `source`, its `tags` and its relevance score.
   */
  readonly items: readonly RecalledItem[];
}

/** A recalled warm or cold item, with where it came from. */
export interface RecalledItem {
  readonly category: 'fact' | 'episode' | 'knowledge';
  readonly content: string;
  /** What produced it, as stored (`''` when nothing was said). */
  readonly source: string;
  readonly tags: readonly string[];
  /** Its tier's relevance score (higher is better; BM25 for warm, cosine for cold). */
  readonly score: number;
}

/** Options of a recall. */
export interface RecallOptions {
  /**
   * Only warm and cold items that carry every one of these tags (the conversation is
   * recalled as always); default none, no filter.
   */
  readonly tags?: readonly string[];
}

/** Memory as agents use it (seed 002's protocol). */
export interface Memory {
  /** What the context may see that bears on `query`, within the token budget. */
  recall(query: string, ctx: ExecContext, options?: RecallOptions): Promise<MemoryContext>;
  /** Remembers `event` under its scope (default the context's). */
  store(event: MemoryEvent, ctx: ExecContext): Promise<void>;
  /**
   * Hot conversation into warm episodes, warm facts into cold knowledge, for the scopes the
   * context sees. Running it again with nothing new changes nothing.
   */
  consolidate(ctx: ExecContext): Promise<ConsolidationReport>;
  /** Releases connections and files. */
  close(): Promise<void>;
}

/** Memory as an agent's `runtime.memory` offers it: the context decides the scopes. */
export type AgentMemory = Pick<Memory, 'recall' | 'store' | 'consolidate'>;

/** What a consolidation did. */
export interface ConsolidationReport {
  /** Episodes written from conversations. */
  readonly episodes: number;
  /** Facts promoted to knowledge. */
  readonly promoted: number;
}

/** A stored message of the hot tier. */
export interface HotMessage extends ConversationMessage {
  /** Milliseconds since the epoch; orders messages across scopes. */
  readonly ts: number;
  /** Position within its scope key, from 1: orders messages of one millisecond. */
  readonly n: number;
}

/** The hot tier: conversations per scope key, capped. */
export interface HotTier {
  readonly name: string;
  /** Appends a message to `key`'s conversation, dropping the oldest past the cap. */
  append(key: string, message: ConversationMessage, ts: number): Promise<void>;
  /** The messages of `keys`, merged oldest first; at most the `limit` most recent. */
  conversation(keys: readonly string[], limit: number): Promise<HotMessage[]>;
  close(): Promise<void>;
}

/** An item of the warm tier. */
export interface WarmItem {
  /** Unique; writing an id again changes nothing. */
  readonly id: string;
  readonly key: string;
  readonly kind: WarmKind;
  readonly content: string;
  readonly tags: readonly string[];
  readonly source: string;
  readonly ts: number;
}

/** A ranked answer of a tier: the item and its score (higher is better). */
export interface Ranked<T> {
  readonly item: T;
  readonly score: number;
}

/** The warm tier: episodes and facts, ranked by text relevance. */
export interface WarmTier {
  readonly name: string;
  /** Stores `item`; false when its id was there already (nothing changed). */
  put(item: WarmItem): Promise<boolean>;
  /**
   * Items of `kind` under `keys` that match `query`, most relevant first; with `tags`, only
   * items carrying every one of them.
   */
  search(
    query: string,
    keys: readonly string[],
    kind: WarmKind,
    limit: number,
    tags?: readonly string[],
  ): Promise<Ranked<WarmItem>[]>;
  /** Every item of `kind` under `key`, oldest first (for consolidation). */
  list(key: string, kind: WarmKind): Promise<WarmItem[]>;
  /** A number kept per name (consolidation's watermarks); 0 when unset. */
  getMark(name: string): Promise<number>;
  setMark(name: string, value: number): Promise<void>;
  close(): Promise<void>;
}

/** An item of the cold tier. */
export interface ColdItem {
  readonly id: string;
  readonly key: string;
  readonly content: string;
  readonly tags: readonly string[];
  readonly source: string;
  readonly ts: number;
}

/** The cold tier: knowledge, by semantic similarity. */
export interface ColdTier {
  readonly name: string;
  /** Stores `item`; false when its id was there already. */
  put(item: ColdItem): Promise<boolean>;
  /**
   * Items under `keys` nearest to `query`, most similar first; with `tags`, only items
   * carrying every one of them.
   */
  search(
    query: string,
    keys: readonly string[],
    limit: number,
    tags?: readonly string[],
  ): Promise<Ranked<ColdItem>[]>;
  close(): Promise<void>;
}
