/**
 * @module The hot tier on Redis, for many hosts: each scope key's conversation is a capped
 * list (`LTRIM`) that expires when idle (`PEXPIRE`), appended by one Lua script so that
 * concurrent writers keep the cap and the order.
 */
import { mergeRecent, wholeAtLeastOne } from './hot-tier.js';
import { RedisLink, type RedisLinkOptions } from './redis-link.js';
import type { ConversationMessage, HotMessage, HotTier } from './memory-types.js';

/** Options of {@link redisHotTier}. */
export interface RedisHotTierOptions extends RedisLinkOptions {
  /** Messages kept per conversation; default 50. */
  readonly maxMessages?: number;
  /** A conversation untouched this long expires; default 30 minutes. */
  readonly idleMs?: number;
}

// KEYS[1] the list, KEYS[2] its counter. ARGV[1] the message as JSON (an object), ARGV[2] the
// cap, ARGV[3] the idle time in ms. The message gets its position `n` from the counter.
const APPEND = `
local n = redis.call('INCR', KEYS[2])
local entry = string.sub(ARGV[1], 1, -2) .. ',"n":' .. n .. '}'
redis.call('RPUSH', KEYS[1], entry)
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[2]), -1)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return n`;

class RedisHotTier implements HotTier {
  readonly name = 'redis';
  readonly #link: RedisLink;
  readonly #max: number;
  readonly #idleMs: number;

  constructor(options: RedisHotTierOptions) {
    this.#max = wholeAtLeastOne('hot tier maxMessages', options.maxMessages ?? 50);
    this.#idleMs = wholeAtLeastOne('hot tier idleMs', options.idleMs ?? 30 * 60_000);
    this.#link = new RedisLink(options);
  }

  #key(key: string): string {
    return `${this.#link.prefix}hot:${key}`;
  }

  async append(key: string, message: ConversationMessage, ts: number): Promise<void> {
    const list = this.#key(key);
    const json = JSON.stringify({ role: message.role, content: message.content, ts });
    await this.#link.client.eval(APPEND, 2, list, `${list}:n`, json, this.#max, this.#idleMs);
  }

  async conversation(keys: readonly string[], limit: number): Promise<HotMessage[]> {
    if (keys.length === 0) return [];
    const pipeline = this.#link.client.pipeline();
    for (const key of keys) pipeline.lrange(this.#key(key), -limit, -1);
    const results = (await pipeline.exec()) ?? [];
    const lists = results.map(([err, items]) => {
      if (err) throw err;
      return (items as string[]).map((s) => JSON.parse(s) as HotMessage);
    });
    return mergeRecent(lists, limit);
  }

  close(): Promise<void> {
    return this.#link.close();
  }
}

/** The hot tier on Redis; see the module. */
export function redisHotTier(options: RedisHotTierOptions = {}): HotTier {
  return new RedisHotTier(options);
}
