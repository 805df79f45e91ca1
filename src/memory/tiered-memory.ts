/**
 * @module `TieredMemory` (seed 002): hot, warm and cold tiers behind one `Memory`.
 *
 * `recall(query, ctx)` asks every tier for what the context's scope keys hold
 * (`memory-scope.ts`) and assembles it within `tokenBudget`, in the order conversation →
 * facts → episodes → knowledge. Each category is trimmed from its tail: the conversation
 * keeps its most recent messages, the others their most relevant items; an item that does
 * not fit ends its category (a smaller one after it is not taken out of order).
 * `token_count` is the count, by the memory's counter, of exactly what is returned (a
 * message counts as `role: content`).
 *
 * `consolidate(ctx)` turns each visible conversation's messages since the last
 * consolidation into one warm episode — summarised by `summarize` when one is given,
 * extractively otherwise — and promotes every warm fact to cold knowledge. Ids are derived
 * from what they come from, and each conversation keeps a watermark (the time of the last
 * message it consolidated; one memory's messages have distinct times), so running it
 * again with nothing new writes nothing.
 */
import { canonicalHash } from '../context/canonical-json.js';
import type { ExecContext } from '../context/exec-context.js';
import type { Engine } from '../engines/chat-request.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { shareImmutable, shareImmutableItems } from '../store/deep-copy.js';
import { scopeKey, visibleKeys } from './memory-scope.js';
import type {
  ColdItem,
  ColdTier,
  ConsolidationReport,
  ConversationMessage,
  HotMessage,
  HotTier,
  Memory,
  MemoryContext,
  MemoryEvent,
  Ranked,
  RecallOptions,
  RecalledItem,
  WarmItem,
  WarmTier,
} from './memory-types.js';
import { heuristicTokens, type TokenCounter } from './token-counter.js';

/** Options of {@link TieredMemory}. */
export interface TieredMemoryOptions {
  readonly hot: HotTier;
  readonly warm?: WarmTier;
  readonly cold?: ColdTier;
  /** Tokens a recall may return; default 4 000. */
  readonly tokenBudget?: number;
  /** Default seed 002's four-characters heuristic. */
  readonly countTokens?: TokenCounter;
  /** Makes an episode of messages (an engine call, say); default extractive. */
  readonly summarize?: (messages: readonly ConversationMessage[]) => Promise<string>;
  /** Messages, facts, episodes and knowledge items asked of each tier per recall; default 50. */
  readonly fetch?: number;
  /** The clock of stored items' times; default `Date.now`. */
  readonly now?: () => number;
}

/** `tags` checked (an array of non-empty strings), or `undefined` when none are given. */
/** A conversation message as recall returns it, with its cost in tokens. */
interface RecalledMessage {
  readonly message: ConversationMessage;
  readonly cost: number;
}

function checkTags(
  where: string,
  tags: readonly string[] | undefined,
): readonly string[] | undefined {
  if (tags === undefined) return undefined;
  const given: unknown = tags;
  if (!Array.isArray(given) || !given.every((t) => typeof t === 'string' && t !== '')) {
    throw new InvalidParamsError(`${where}: tags must be an array of non-empty strings`, {
      param: 'tags',
    });
  }
  return tags;
}

/** An id derived from its parts. */
function derivedId(prefix: string, ...parts: (string | number)[]): string {
  const hash = canonicalHash(parts);
  return `${prefix}_${hash.slice(0, 32)}`;
}

/**
 * The extractive summary of a conversation: each message's first sentence, as `role:
 * sentence`, at most 1 000 characters.
 */
export function extractiveSummary(messages: readonly ConversationMessage[]): string {
  const lines = messages.map((m) => {
    const first = /^[^.!?\n]*[.!?]?/.exec(m.content.trim())?.[0] ?? m.content;
    return `${m.role}: ${first.trim()}`;
  });
  const text = lines.join('\n');
  return text.length <= 1_000 ? text : `${text.slice(0, 999)}…`;
}

/**
 * A summariser that asks `engine` for an episode of the messages (the whole answer,
 * streamed and joined), in at most `maxTokens` tokens (default 200).
 */
export function engineSummarizer(
  engine: Engine,
  options: { readonly model?: string; readonly maxTokens?: number } = {},
): (messages: readonly ConversationMessage[]) => Promise<string> {
  return async (messages) => {
    const transcript = messages.map((m) => `${m.role}: ${m.content}`).join('\n');
    const stream = engine.stream({
      messages: [
        {
          role: 'system',
          content:
            'Summarise this conversation as one short episode for later recall: who wanted what, and what was decided.',
        },
        { role: 'user', content: transcript },
      ],
      ...(options.model === undefined ? {} : { model: options.model }),
      params: { max_tokens: options.maxTokens ?? 200, temperature: 0 },
    });
    let text = '';
    for (;;) {
      const r = await stream.next();
      if (r.done) break;
      text += r.value;
    }
    return text.trim();
  };
}

export class TieredMemory implements Memory {
  readonly tokenBudget: number;
  readonly #hot: HotTier;
  readonly #warm: WarmTier | null;
  readonly #cold: ColdTier | null;
  readonly #count: TokenCounter;
  readonly #summarize: (messages: readonly ConversationMessage[]) => Promise<string>;
  readonly #fetch: number;
  readonly #now: () => number;
  #lastTs = 0;
  readonly #recalledCache = new WeakMap<HotMessage, RecalledMessage>();

  constructor(options: TieredMemoryOptions) {
    const budget = options.tokenBudget ?? 4_000;
    if (!(Number.isInteger(budget) && budget >= 0)) {
      throw new RangeError(`TieredMemory: tokenBudget must be a whole number >= 0, got ${budget}`);
    }
    this.tokenBudget = budget;
    this.#hot = options.hot;
    this.#warm = options.warm ?? null;
    this.#cold = options.cold ?? null;
    this.#count = options.countTokens ?? heuristicTokens;
    this.#summarize = options.summarize ?? ((m) => Promise.resolve(extractiveSummary(m)));
    this.#fetch = options.fetch ?? 50;
    this.#now = options.now ?? Date.now;
  }

  async recall(
    query: string,
    ctx: ExecContext,
    options: RecallOptions = {},
  ): Promise<MemoryContext> {
    const tags = checkTags('memory.recall', options.tags);
    const keys = visibleKeys(ctx);
    const n = this.#fetch;
    const [messages, facts, episodes, knowledge] = await Promise.all([
      this.#hot.conversation(keys, n),
      this.#warm?.search(query, keys, 'fact', n, tags) ?? [],
      this.#warm?.search(query, keys, 'episode', n, tags) ?? [],
      this.#cold?.search(query, keys, n, tags) ?? [],
    ]);
    let left = this.tokenBudget;
    const take = (text: string): boolean => {
      const cost = this.#count(text);
      if (cost > left) return false;
      left -= cost;
      return true;
    };
    // The most recent messages that fit, oldest first. Immutable: the conversation is
    // shared, not copied, by whatever passes it on (an agent's input history, the store).
    const recalled: ConversationMessage[] = [];
    for (let i = messages.length - 1; i >= 0; i--) {
      const m = this.#recalled(messages[i] as HotMessage);
      if (m.cost > left) break;
      left -= m.cost;
      recalled.push(m.message);
    }
    // Each message went through shareImmutable once, when first recalled.
    const conversation = shareImmutableItems(recalled.reverse());
    const items: RecalledItem[] = [];
    const fit = (
      category: RecalledItem['category'],
      ranked: readonly Ranked<WarmItem | ColdItem>[],
    ): string[] => {
      const out: string[] = [];
      for (const { item, score } of ranked) {
        if (!take(item.content)) break;
        out.push(item.content);
        items.push({
          category,
          content: item.content,
          source: item.source,
          tags: item.tags,
          score,
        });
      }
      return out;
    };
    return {
      conversation,
      facts: fit('fact', facts),
      episodes: fit('episode', episodes),
      knowledge: fit('knowledge', knowledge),
      token_count: this.tokenBudget - left,
      items,
    };
  }

  /**
   * A hot message as recall returns it (immutable) and what it costs of the token budget. A
   * tier that hands out the same frozen message each time (the in-process one) has both
   * worked out once per message, not once per recall.
   */
  #recalled(m: HotMessage): RecalledMessage {
    const known = this.#recalledCache.get(m);
    if (known) return known;
    const r: RecalledMessage = {
      message: shareImmutable({ role: m.role, content: m.content }),
      cost: this.#count(`${m.role}: ${m.content}`),
    };
    if (Object.isFrozen(m)) this.#recalledCache.set(m, r);
    return r;
  }

  async store(event: MemoryEvent, ctx: ExecContext): Promise<void> {
    if (typeof event.content !== 'string' || event.content === '') {
      throw new InvalidParamsError('memory.store: content must be a non-empty string', {
        param: 'content',
      });
    }
    const key = scopeKey(event.scope ?? ctx.memoryScope, ctx);
    const tier = event.tier ?? 'hot';
    const tags = checkTags('memory.store', event.tags);
    if (event.source !== undefined && typeof event.source !== 'string') {
      throw new InvalidParamsError('memory.store: source must be a string', { param: 'source' });
    }
    if (tier === 'hot' && (tags !== undefined || event.source !== undefined)) {
      // A conversation message has a role, not tags or a source: taking them would drop them.
      throw new InvalidParamsError(
        'memory.store: a conversation message (the hot tier) carries no tags or source; store tagged memories in the warm or cold tier',
        { param: tags !== undefined ? 'tags' : 'source' },
      );
    }
    // Strictly increasing here, so a consolidation's watermark (a time) splits no millisecond.
    const ts = Math.max(this.#now(), this.#lastTs + 1);
    this.#lastTs = ts;
    switch (tier) {
      case 'hot':
        await this.#hot.append(key, { role: event.role ?? 'user', content: event.content }, ts);
        return;
      case 'warm': {
        const warm = this.#tier(this.#warm, 'warm');
        const kind = event.kind ?? 'fact';
        await warm.put({
          id: derivedId('warm', key, kind, event.content),
          key,
          kind,
          content: event.content,
          tags: [...(tags ?? [])],
          source: event.source ?? '',
          ts,
        });
        return;
      }
      case 'cold':
        await this.#tier(this.#cold, 'cold').put({
          id: derivedId('cold', key, event.content),
          key,
          content: event.content,
          tags: [...(tags ?? [])],
          source: event.source ?? '',
          ts,
        });
        return;
      default:
        throw new InvalidParamsError(`memory.store: unknown tier "${String(tier)}"`, {
          param: 'tier',
        });
    }
  }

  #tier<T>(tier: T | null, name: string): T {
    if (tier === null) {
      throw new InvalidParamsError(`this memory has no ${name} tier`, { param: 'tier' });
    }
    return tier;
  }

  async consolidate(ctx: ExecContext): Promise<ConsolidationReport> {
    const warm = this.#warm;
    if (!warm) return { episodes: 0, promoted: 0 };
    let episodes = 0;
    let promoted = 0;
    for (const key of visibleKeys(ctx)) {
      const mark = `consolidated:${key}`;
      const since = await warm.getMark(mark);
      const messages = (await this.#hot.conversation([key], Number.MAX_SAFE_INTEGER)).filter(
        (m) => m.ts > since,
      );
      if (messages.length > 0) {
        const first = messages[0];
        const last = messages.at(-1);
        const content = await this.#summarize(messages);
        if (content !== '' && first && last) {
          const stored = await warm.put({
            id: derivedId('episode', key, first.ts, first.n, last.ts, last.n),
            key,
            kind: 'episode',
            content,
            tags: ['consolidated'],
            source: 'consolidate',
            ts: last.ts,
          });
          if (stored) episodes++;
          await warm.setMark(mark, last.ts);
        }
      }
      if (this.#cold) {
        for (const fact of await warm.list(key, 'fact')) {
          // Promoted knowledge keeps what the fact was labelled with and who produced it.
          const stored = await this.#cold.put({
            id: derivedId('knowledge', fact.id),
            key,
            content: fact.content,
            tags: fact.tags,
            source: fact.source,
            ts: fact.ts,
          });
          if (stored) promoted++;
        }
      }
    }
    return { episodes, promoted };
  }

  async close(): Promise<void> {
    await this.#hot.close();
    await this.#warm?.close();
    await this.#cold?.close();
  }
}
