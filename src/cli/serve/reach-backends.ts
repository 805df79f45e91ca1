/**
 * @module The start-up wait of `axon serve` and `axon worker`: before anything else is made,
 * the fleet's Redis and the PostgreSQL store their configuration names must answer. A
 * connection that fails (refused, reset, timed out: a server still starting) is tried again
 * until the wait (`connect_timeout_ms`, default 5 s) is over; a refusal by the server itself
 * (no such database or role, a wrong password, a database index out of range, a node without
 * cluster support) fails at once. A failure is one line naming the service, its URL with the
 * password masked, where it was named and why; a stop signal ends the wait at once.
 */
import { Cluster, Redis, ReplyError, type RedisOptions } from 'ioredis';
import pg from 'pg';
import { postgresStore, type PostgresRunStore } from '../../store/postgres/postgres-store.js';
import { shownPostgres } from '../../store/postgres/postgres-url.js';
import { parseClusterNodes, type ClusterNode } from '../../store/redis/redis-connection.js';
import { CliError } from '../cli-error.js';
import { connectionCause } from '../connection-cause.js';
import { shownRedis, type RedisConfig } from './redis-config.js';
import type { PostgresConfig } from './serve-config-schema.js';

/** How long to wait between two tries of a connection that failed, ms. */
const RETRY_MS = 250;

/** What {@link reachBackends} waits for. */
export interface Backends {
  readonly redis: RedisConfig | null;
  readonly postgres: PostgresConfig | null;
}

/** Options of {@link reachBackends}. */
export interface ReachOptions {
  /** How long to wait for each to answer, ms (`connect_timeout_ms`). */
  readonly timeoutMs: number;
  /** Aborting it (SIGINT, SIGTERM) ends the wait at once. */
  readonly signal: AbortSignal;
}

/**
 * How the wait ended: stopped by the signal, or with everything answering — and then the
 * PostgreSQL store, its migrations applied (the caller's to use or close).
 */
export type Reached =
  { readonly stopped: true } | { readonly stopped: false; readonly store: PostgresRunStore | null };

/** Why one backend could not be used. */
interface Unreached {
  readonly what: string;
  readonly cause: string;
  /** True when it failed until the wait was over; false when it refused at once. */
  readonly waited: boolean;
}

/** How one backend's wait ended. */
type Outcome<T> =
  | { readonly kind: 'ok'; readonly value: T }
  | { readonly kind: 'stopped' }
  | { readonly kind: 'unreached'; readonly cause: string; readonly waited: boolean };

const STOPPED = Symbol('stopped');
const TIMED_OUT = Symbol('timed out');

/**
 * `promise`'s value, or {@link STOPPED} once `signal` aborts, or {@link TIMED_OUT} at
 * `deadline` (`null`: none).
 */
async function within<T>(
  promise: Promise<T>,
  deadline: number | null,
  signal: AbortSignal,
): Promise<T | typeof STOPPED | typeof TIMED_OUT> {
  if (signal.aborted) return STOPPED;
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<typeof TIMED_OUT>((resolve) => {
        if (deadline === null) return;
        timer = setTimeout(
          () => {
            resolve(TIMED_OUT);
          },
          Math.max(0, deadline - Date.now()),
        );
      }),
      new Promise<typeof STOPPED>((resolve) => {
        onAbort = () => {
          resolve(STOPPED);
        };
        signal.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}

/**
 * Waits until the Redis and the PostgreSQL of `backends` answer (both at once), at most
 * `timeoutMs` each. Resolves `{ stopped: true }` when `signal` aborts first. Rejects with a
 * `CliError` `NOT_REACHED` whose message is one line:
 * `cannot reach Redis at redis://:***@10.0.0.5:6379 (--redis): connection refused; gave up after 5000 ms (--connect-timeout-ms)`.
 *
 * @example
 * const reached = await reachBackends(config, { timeoutMs: config.connectTimeoutMs, signal });
 * if (reached.stopped) return EXIT.INTERRUPTED;
 */
export async function reachBackends(backends: Backends, options: ReachOptions): Promise<Reached> {
  const deadline = Date.now() + options.timeoutMs;
  const { signal } = options;
  const { redis, postgres } = backends;
  const [r, p] = await Promise.all([
    redis === null ? ok(null) : reachRedis(redis, deadline, signal),
    postgres === null ? ok(null) : reachPostgres(postgres, deadline, signal),
  ]);
  const failed: Unreached[] = [];
  if (r.kind === 'unreached' && redis !== null) {
    const shown = redis.url !== null ? `Redis at ${shownRedis(redis)}` : shownRedis(redis);
    failed.push({ what: `${shown} (${redis.source})`, ...r });
  }
  if (p.kind === 'unreached' && postgres !== null) {
    failed.push({
      what: `PostgreSQL at ${shownPostgres(postgres.url)} (${postgres.source})`,
      ...p,
    });
  }
  const store = p.kind === 'ok' ? p.value : null;
  if (failed.length > 0 || r.kind === 'stopped' || p.kind === 'stopped') await store?.close();
  if (failed.length > 0) {
    const message = failed
      .map(
        (f) =>
          `cannot reach ${f.what}: ${f.cause}${f.waited ? `; gave up after ${options.timeoutMs} ms (--connect-timeout-ms)` : ''}`,
      )
      .join('; ');
    throw new CliError('NOT_REACHED', message);
  }
  if (r.kind === 'stopped' || p.kind === 'stopped') return { stopped: true };
  return { stopped: false, store };
}

const ok = <T>(value: T): Promise<Outcome<T>> => Promise.resolve({ kind: 'ok', value });

/** The connection options of a probe: it connects when asked, and tries again on its own. */
const PROBE: RedisOptions = {
  lazyConnect: true,
  maxRetriesPerRequest: null,
  retryStrategy: () => RETRY_MS,
  // A probe has nothing to flush: its socket goes at once, not 2 s later if the server is
  // silent (a stop must be prompt).
  disconnectTimeout: 0,
};

/** Resolves after `ms`, or {@link STOPPED} at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<typeof STOPPED | typeof TIMED_OUT> {
  return within(new Promise<never>(() => undefined), Date.now() + ms, signal);
}

/** Waits until the Redis of `redis` answers a PING: one server, or a cluster's nodes. */
async function reachRedis(
  redis: RedisConfig,
  deadline: number,
  signal: AbortSignal,
): Promise<Outcome<null>> {
  if (redis.url !== null) {
    let client: Redis;
    try {
      client = new Redis(redis.url, PROBE);
    } catch (err) {
      // ioredis parses the URL as it is made: `redis://[zz:1` passes the schema's check.
      return { kind: 'unreached', cause: connectionCause(err), waited: false };
    }
    return pinged(client, 'error', deadline, signal);
  }
  // A node that refuses the connection says so as a plain server; the cluster itself only
  // says that its slots could not be read. So: one of its nodes first, then the cluster.
  const nodes = parseClusterNodes(redis.cluster, redis.source);
  const first = await firstNode(nodes, deadline, signal);
  if (first.kind !== 'ok') return first;
  const cluster = new Cluster(
    nodes.map((n) => ({ host: n.host, port: n.port })),
    { redisOptions: PROBE, clusterRetryStrategy: () => RETRY_MS },
  );
  cluster.on('error', () => undefined);
  return pinged(cluster, 'node error', deadline, signal);
}

/** Waits until one of `nodes` answers a PING as a plain server. */
async function firstNode(
  nodes: readonly ClusterNode[],
  deadline: number,
  signal: AbortSignal,
): Promise<Outcome<null>> {
  const stop = new AbortController();
  const both = AbortSignal.any([signal, stop.signal]);
  const outcomes = nodes.map((n) =>
    pinged(new Redis({ host: n.host, port: n.port, ...PROBE }), 'error', deadline, both),
  );
  // The first node that answers ends the others' waits.
  const answered = await Promise.any(
    outcomes.map((o) => o.then((x) => (x.kind === 'ok' ? x : Promise.reject(new Error())))),
  ).catch(() => null);
  stop.abort();
  if (answered) return answered;
  const all = await Promise.all(outcomes);
  if (signal.aborted) return { kind: 'stopped' };
  return all.find((o) => o.kind === 'unreached' && !o.waited) ?? (all[0] as Outcome<null>);
}

/**
 * PINGs `client` until it answers, `deadline` passes or `signal` aborts, then disconnects it.
 * A reply error (`errorEvent`: a server's `error`, a cluster's `node error`) fails at once.
 */
async function pinged(
  client: Redis | Cluster,
  errorEvent: 'error' | 'node error',
  deadline: number,
  signal: AbortSignal,
): Promise<Outcome<null>> {
  let last: unknown = null;
  let refusal: unknown = null;
  const refused = new Promise<typeof refusal>((resolve) => {
    client.on(errorEvent, (err: unknown) => {
      last = err;
      if (err instanceof ReplyError) {
        refusal = err;
        resolve(err);
      }
    });
  });
  if (errorEvent !== 'error') client.on('error', () => undefined);
  try {
    // A refusal may come as the PING's own rejection (WRONGPASS) rather than an event.
    const answer = client.ping().then(
      () => null,
      (err: unknown) => {
        refusal ??= err;
        return err;
      },
    );
    const result = await within(Promise.race([answer, refused]), deadline, signal);
    if (result === STOPPED) return { kind: 'stopped' };
    // A server that answers after refusing what the URL asks (a database index it does not
    // have) would be used on another database: refused too.
    if (refusal !== null)
      return { kind: 'unreached', cause: connectionCause(refusal), waited: false };
    if (result === TIMED_OUT) {
      return {
        kind: 'unreached',
        cause: last === null ? 'no answer' : connectionCause(last),
        waited: true,
      };
    }
    return { kind: 'ok', value: null };
  } finally {
    client.disconnect();
  }
}

/**
 * Waits until PostgreSQL at `config.url` takes a connection, then opens the store (its
 * migrations applied). A server's refusal (`DatabaseError`: no such database or role, a wrong
 * password) and a store that cannot be opened (a schema newer than this code) fail at once.
 */
async function reachPostgres(
  config: PostgresConfig,
  deadline: number,
  signal: AbortSignal,
): Promise<Outcome<PostgresRunStore>> {
  for (;;) {
    let client: pg.Client;
    try {
      client = new pg.Client({
        connectionString: config.url,
        // 0 would be no timeout at all.
        connectionTimeoutMillis: Math.max(1, deadline - Date.now()),
      });
    } catch (err) {
      // pg parses the URL as the client is made (`Invalid URL`).
      return { kind: 'unreached', cause: connectionCause(err), waited: false };
    }
    client.on('error', () => undefined);
    const connected = client.connect().then(
      () => null,
      (err: unknown) => ({ err }),
    );
    const result = await within(connected, deadline, signal);
    // Still connecting (stopped, or past the wait): `end` would wait for a server that does
    // not answer, so the socket goes at once.
    if (result === STOPPED || result === TIMED_OUT) client.connection.stream.destroy();
    void client.end().catch(() => undefined);
    if (result === STOPPED) return { kind: 'stopped' };
    if (result === null) break;
    if (result === TIMED_OUT) return { kind: 'unreached', cause: 'no answer', waited: true };
    if (!transientPostgres(result.err)) {
      return { kind: 'unreached', cause: connectionCause(result.err), waited: false };
    }
    if (Date.now() + RETRY_MS >= deadline) {
      return { kind: 'unreached', cause: connectionCause(result.err), waited: true };
    }
    if ((await pause(RETRY_MS, signal)) === STOPPED) return { kind: 'stopped' };
  }
  const store = postgresStore({ connection: config.url, schema: config.schema });
  // Its migrations may take their time: they are not bounded by the wait, only stopped.
  const ready = store.ready().then(
    () => null,
    (err: unknown) => ({ err }),
  );
  const result = await within(ready, null, signal);
  if (result === null) return { kind: 'ok', value: store };
  await store.close().catch(() => undefined);
  if (result === STOPPED) return { kind: 'stopped' };
  if (result === TIMED_OUT) return { kind: 'unreached', cause: 'no answer', waited: true };
  return { kind: 'unreached', cause: connectionCause(result.err), waited: false };
}

/**
 * Whether trying again may help: not for a server's refusal (a `DatabaseError`: no such
 * database or role, a wrong password) unless it is still starting (SQLSTATE 57P03), nor for
 * a value pg refuses (`TypeError`); for the rest — a connection refused, reset or timed out,
 * a host not found yet — yes.
 */
function transientPostgres(err: unknown): boolean {
  if (err instanceof pg.DatabaseError) return err.code === '57P03';
  return !(err instanceof TypeError || err instanceof RangeError);
}
