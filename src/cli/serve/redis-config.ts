/**
 * @module The fleet's Redis in `axon serve`'s and `axon worker`'s configuration: one server
 * (`redis.url`, `--redis`, `AXON_REDIS_URL`) or a Redis Cluster (`redis.cluster`,
 * `--redis-cluster`, `AXON_REDIS_CLUSTER`), and the options of the store and the fleet made
 * from it.
 */
import type { FleetOptions } from '../../placement/fleet/fleet-link.js';
import { checkClusterPrefix, CLUSTER_PREFIX } from '../../store/redis/redis-connection.js';
import type { ServeConfigProblem } from './config-problems.js';

/** A cluster's nodes as the environment and `--redis-cluster` give them: `host:port,...`. */
export const CLUSTER_NODES =
  /^(\[[^\]\s]+\]|[^:[\]\s,]+):\d{1,5}(,(\[[^\]\s]+\]|[^:[\]\s,]+):\d{1,5})*$/;

/**
 * Where the fleet's Redis is: one server (`url`) or a cluster's nodes (`cluster`, `host:port`),
 * the prefix of its keys (default `axon:`, `{axon}:` on a cluster), and where it was named
 * (`source`: `--redis`, `AXON_REDIS_CLUSTER`, `axon.yaml redis.url`, ...), for messages.
 */
export type RedisConfig =
  | {
      readonly url: string;
      readonly cluster: null;
      readonly prefix: string;
      readonly source: string;
    }
  | {
      readonly url: null;
      readonly cluster: readonly string[];
      readonly prefix: string;
      readonly source: string;
    };

/** One place a Redis may be named: the flags, the environment or the file. */
export interface RedisSource {
  /** All of it, for a problem (`--redis / --redis-cluster`). */
  readonly source: string;
  /** Its URL's and its cluster's names (`--redis`, `--redis-cluster`). */
  readonly names: { readonly url: string; readonly cluster: string };
  readonly url: string | undefined;
  /** `host:port,...`. */
  readonly cluster: string | undefined;
}

/**
 * The fleet's Redis: the first of `sources` (most important first) that names one, a URL or
 * a cluster, decides; a source naming both, or a cluster under `prefix` without a hash tag,
 * is a problem (`null` then). `prefixLine`: the file's line of `redis.prefix`.
 */
export function pickRedis(
  sources: readonly RedisSource[],
  prefix: string | undefined,
  prefixLine: number | null,
  problems: ServeConfigProblem[],
): RedisConfig | null {
  const named = sources.find((s) => s.url !== undefined || s.cluster !== undefined);
  if (!named) return null;
  if (named.url !== undefined && named.cluster !== undefined) {
    problems.push({
      source: named.source,
      line: null,
      key: 'redis',
      message: 'names both a Redis URL and a Redis Cluster: give one',
    });
    return null;
  }
  if (named.url !== undefined) {
    return { url: named.url, cluster: null, prefix: prefix ?? 'axon:', source: named.names.url };
  }
  const onCluster = prefix ?? CLUSTER_PREFIX;
  try {
    checkClusterPrefix(onCluster, 'redis.prefix');
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
    problems.push({
      source: sources.at(-1)?.source ?? named.source,
      line: prefixLine,
      key: 'redis.prefix',
      message: err.message.replace(/^redis\.prefix /, ''),
    });
    return null;
  }
  return {
    url: null,
    cluster: (named.cluster ?? '').split(','),
    prefix: onCluster,
    source: named.names.cluster,
  };
}

/** Where to connect, as the Redis store's options take it. */
export function storeTarget(
  redis: RedisConfig,
): { readonly url: string } | { readonly cluster: readonly string[] } {
  return redis.url !== null ? { url: redis.url } : { cluster: redis.cluster };
}

/** The fleet's options (`createRuntime({ fleet })`) of a Redis config. */
export function fleetTarget(redis: RedisConfig): FleetOptions {
  return redis.url !== null
    ? { redis: redis.url, prefix: redis.prefix }
    : { cluster: redis.cluster, prefix: redis.prefix };
}

/** How a Redis config is shown in messages: its URL (password masked) or its cluster's nodes. */
export function shownRedis(redis: RedisConfig): string {
  return redis.url !== null
    ? shownRedisUrl(redis.url)
    : `the Redis Cluster at ${redis.cluster.join(',')}`;
}

/** A Redis URL as a message or a banner may show it: its password `***`. */
export function shownRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.toString();
  } catch {
    return 'the URL given';
  }
}
