/** @module The Redis connection of a memory tier: the caller's, or one of its own. */
import { Redis } from 'ioredis';

/** How a Redis tier is told where to connect. */
export interface RedisLinkOptions {
  /** A connection to use (not closed by the tier); else one to `url` is made. */
  readonly client?: Redis;
  /** Default `redis://127.0.0.1:6379`. */
  readonly url?: string;
  /** Prefix of every key; default `axon:mem:`. */
  readonly prefix?: string;
}

/** A tier's connection and key prefix; `close` quits the connection only if the tier made it. */
export class RedisLink {
  readonly client: Redis;
  readonly prefix: string;
  readonly #owned: boolean;

  constructor(options: RedisLinkOptions) {
    this.prefix = options.prefix ?? 'axon:mem:';
    this.#owned = options.client === undefined;
    this.client =
      options.client ??
      new Redis(options.url ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 2 });
    // Calls fail on their own; without a listener ioredis prints every connection error.
    if (this.#owned) this.client.on('error', () => undefined);
  }

  async close(): Promise<void> {
    if (this.#owned && this.client.status !== 'end')
      await this.client.quit().catch(() => undefined);
  }
}
