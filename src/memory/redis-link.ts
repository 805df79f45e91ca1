/** @module The Redis connection of a memory tier: the caller's, or one of its own (to a server or a Redis Cluster). */
import { connectRedis, redisTargetOf, type RedisClient } from '../store/redis/redis-connection.js';

/** How a Redis tier is told where to connect. */
export interface RedisLinkOptions {
  /** A connection to use, to a server or a cluster (not closed by the tier); else one is made. */
  readonly client?: RedisClient;
  /** Default `redis://127.0.0.1:6379`. */
  readonly url?: string;
  /**
   * A Redis Cluster instead, by its nodes (`host:port`): the tier's keys then go under its
   * prefix's hash tag, since its scripts and reads touch several keys at once.
   */
  readonly cluster?: string | readonly string[];
  /** Prefix of every key; default `axon:mem:`, or `{axon}:mem:` on a cluster (a hash tag needed there). */
  readonly prefix?: string;
}

/** A tier's connection and key prefix; `close` quits the connection only if the tier made it. */
export class RedisLink {
  readonly client: RedisClient;
  readonly prefix: string;
  readonly #owned: boolean;

  constructor(options: RedisLinkOptions) {
    const { cluster, prefix } = redisTargetOf(options, 'memory tier', {
      single: 'axon:mem:',
      cluster: '{axon}:mem:',
    });
    this.prefix = prefix;
    this.#owned = options.client === undefined;
    this.client =
      options.client ??
      connectRedis(cluster ? { cluster } : { url: options.url ?? 'redis://127.0.0.1:6379' }, {
        maxRetriesPerRequest: 2,
      });
    // Calls fail on their own; without a listener ioredis prints every connection error.
    if (this.#owned) this.client.on('error', () => undefined);
  }

  async close(): Promise<void> {
    if (this.#owned && this.client.status !== 'end')
      await this.client.quit().catch(() => undefined);
  }
}
