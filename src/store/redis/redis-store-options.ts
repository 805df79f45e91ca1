/** @module The options of the Redis store (`redis-store.ts`). */
import type { RedisOptions } from 'ioredis';
import type { RedisClient } from './redis-connection.js';
import type { WriteGuard, WriteTarget } from './redis-batch.js';
import type { StepStatus } from '../records.js';

/** Options of the Redis store (`redisStore`). */
export interface RedisStoreOptions {
  /**
   * An existing connection to use, to a server or a cluster (the store does not close it);
   * else one is made.
   */
  readonly client?: RedisClient;
  /** Where to connect when no client is given; default `redis://127.0.0.1:6379`. */
  readonly url?: string;
  /**
   * A Redis Cluster to connect to instead, by its nodes (`host:port`, at least one; the
   * client learns the rest): every key then goes under the prefix's hash tag.
   */
  readonly cluster?: string | readonly string[];
  /** More ioredis options for the connection the store makes (on a cluster, each node's). */
  readonly redis?: RedisOptions;
  /**
   * Prefix of every key; default `axon:`, or `{axon}:` on a cluster, where it must hold a hash
   * tag (`TypeError` if not). Stores with different prefixes do not meet.
   */
  readonly prefix?: string;
  /**
   * Told of connection errors of the connection the store makes (a lost connection, a
   * refused one). Calls fail on their own as well; without this, errors are only theirs.
   */
  readonly onError?: (err: Error) => void;
  /**
   * The fences of a writer that may lose its turn (a fleet replica whose step another
   * replica took over): asked for each write with what the write is about, it names the
   * keys that must still hold the writer's tokens. The check and the write run in one call
   * of the store's script; a write whose fence does not hold is refused with
   * `WorkerLostError` (`details.reason: "fenced"`) and changes nothing. Default none.
   */
  readonly fence?: (target: WriteTarget) => readonly WriteGuard[];
  /**
   * A fleet worker's: each call of the script that appends to a step wakes the processes
   * watching it (`RedisRunStore.watchStep`: a fleet's API processes following it), an entry
   * `<step id> <last seq>` on the stream `<prefix><watcher>` of each — only on a stream that
   * exists (its process keeps it), and none for a step nobody watches. The entry only wakes:
   * followers read the events from the step's record.
   */
  readonly wakes?: {
    /** The wake streams' key prefix (`FleetKeys.wake('')`). */
    readonly prefix: string;
  };
  /**
   * A fleet worker's: the notice of a step's end, written in the same call as its end
   * (`endStep`) and only if that was written — an operation of the store's script
   * (`Op.ended`), asked for with the step and its status; `null` for a step whose end needs
   * none. Told whether it was said through `said`.
   */
  readonly endNotice?: (stepId: string, status: StepStatus) => EndNotice | null;
}

/** See {@link RedisStoreOptions.endNotice}. */
export interface EndNotice {
  readonly keys: readonly string[];
  readonly args: readonly string[];
  /** Told once the call is made: whether the notice was said. */
  said(yes: boolean): void;
  /**
   * Told once the call that carries the end and its notice (and the end's stream entry) is
   * on its way: what is sent on the store's connection from then on runs after them (a
   * fleet worker's job finish) — told after the call's reply instead while the store cannot
   * be sure Redis has its script (see `RedisBatch.onSent`).
   */
  sent?(): void;
}
