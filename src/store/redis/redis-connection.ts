/**
 * @module Where axon's Redis is and how it connects to it: one server (a `redis://` URL) or
 * a Redis Cluster (its nodes, `host:port`). On a cluster a script may only touch keys of one
 * hash slot, so a store and a fleet on a cluster keep every key under one hash tag — the
 * `{…}` of their prefix, `{axon}:` by default there. Every run, step, log, index, queue and
 * stream then lives on the cluster's master for that slot: the cluster gives failover and
 * the managed services that only speak cluster mode, not more masters' throughput.
 */
import { Cluster, Redis, type RedisOptions } from 'ioredis';

/** A connection to one Redis server or to a Redis Cluster. */
export type RedisClient = Redis | Cluster;

/** One node of a cluster, where the client starts looking. */
export interface ClusterNode {
  readonly host: string;
  readonly port: number;
}

/** The key prefix on a cluster when none is given: its hash tag puts every key in one slot. */
export const CLUSTER_PREFIX = '{axon}:';

/** Whether `value` is an ioredis connection (to a server or a cluster). */
export function isRedisClient(value: unknown): value is RedisClient {
  return value instanceof Redis || value instanceof Cluster;
}

/** Whether `client` is a cluster's. */
export function isCluster(client: RedisClient): client is Cluster {
  return client instanceof Cluster;
}

/**
 * A cluster's nodes from a list of `host:port` (an array, or one comma-separated string as
 * `--redis-cluster` takes it; an IPv6 host in brackets).
 * @throws TypeError naming `what` for an empty list or an entry that is not `host:port`.
 */
export function parseClusterNodes(nodes: string | readonly string[], what: string): ClusterNode[] {
  const given = typeof nodes === 'string' ? nodes.split(',') : nodes;
  const entries = given.map((n) => (typeof n === 'string' ? n.trim() : n)).filter((n) => n !== '');
  if (entries.length === 0) {
    throw new TypeError(`${what} must name at least one node as host:port`);
  }
  return entries.map((entry) => {
    const m = typeof entry === 'string' ? /^(\[[^\]]+\]|[^:[\]\s]+):(\d{1,5})$/.exec(entry) : null;
    const port = m ? Number(m[2]) : NaN;
    if (!m || !(port >= 1 && port <= 65_535)) {
      throw new TypeError(`${what}: ${JSON.stringify(entry)} is not host:port`);
    }
    return { host: (m[1] as string).replace(/^\[(.*)\]$/, '$1'), port };
  });
}

/**
 * The hash tag of a key with this prefix, or null: as Redis reads it, what lies between the
 * prefix's first `{` and the first `}` after it, when not empty.
 */
export function hashTagOf(prefix: string): string | null {
  const open = prefix.indexOf('{');
  if (open < 0) return null;
  const close = prefix.indexOf('}', open + 1);
  return close > open + 1 ? prefix.slice(open + 1, close) : null;
}

/**
 * Checks a prefix meant for a cluster: it must hold a hash tag.
 * @throws TypeError naming `what` when it does not.
 */
export function checkClusterPrefix(prefix: string, what: string): string {
  if (hashTagOf(prefix) === null) {
    throw new TypeError(
      `${what} ${JSON.stringify(prefix)} has no hash tag: on a Redis Cluster the prefix must hold one, like ${JSON.stringify(CLUSTER_PREFIX)}, so that each script's keys share one slot`,
    );
  }
  return prefix;
}

/**
 * Where a store or a memory tier connects, from its options: the cluster's nodes (or `null`
 * for one server) and its key prefix — `prefixes.cluster` by default on a cluster (a given
 * connection to one counts), where the prefix must hold a hash tag.
 * @throws TypeError naming `what` for bad nodes, a cluster beside a URL or client, or a
 * cluster's prefix without a hash tag.
 */
export function redisTargetOf(
  options: {
    readonly cluster?: string | readonly string[] | undefined;
    readonly url?: string | undefined;
    readonly client?: RedisClient | undefined;
    readonly prefix?: string | undefined;
  },
  what: string,
  prefixes: { readonly single: string; readonly cluster: string },
): { readonly cluster: ClusterNode[] | null; readonly prefix: string } {
  const cluster =
    options.cluster === undefined ? null : parseClusterNodes(options.cluster, `${what}: cluster`);
  if (cluster && (options.url !== undefined || options.client !== undefined)) {
    throw new TypeError(`${what}: give cluster, url or client, not more than one`);
  }
  const onCluster = cluster !== null || (options.client !== undefined && isCluster(options.client));
  const prefix = options.prefix ?? (onCluster ? prefixes.cluster : prefixes.single);
  if (onCluster) checkClusterPrefix(prefix, `${what}: prefix`);
  return { cluster, prefix };
}

/**
 * A new connection: to the cluster when `cluster` names nodes, else to the server at `url`
 * (default `redis://127.0.0.1:6379`). `options` are the connection's, on a cluster each node's.
 */
export function connectRedis(
  where: { readonly url?: string; readonly cluster?: readonly ClusterNode[] },
  options: RedisOptions,
): RedisClient {
  if (where.cluster) {
    return new Cluster(
      where.cluster.map((n) => ({ host: n.host, port: n.port })),
      { redisOptions: options },
    );
  }
  return new Redis(where.url ?? 'redis://127.0.0.1:6379', options);
}

/** Another connection to where `client` connects, with `options` over its own. */
export function duplicateClient(client: RedisClient, options: RedisOptions): RedisClient {
  if (client instanceof Cluster) {
    return client.duplicate([], {
      redisOptions: { ...client.options.redisOptions, ...options },
    });
  }
  return client.duplicate(options);
}
