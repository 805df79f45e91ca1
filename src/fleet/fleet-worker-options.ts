/** @module The options of a fleet replica (`FleetWorker.start`) and what its stop reports. */
import type { Logger } from '../observability/logger.js';
import type { RuntimeOptions } from '../runtime/runtime-options.js';

/** Options of `FleetWorker.start` (`fleet-worker.ts`). */
export interface FleetWorkerOptions {
  /** The pool this replica serves (its queue is the pool's). */
  readonly pool: string;
  /** The pool's tags, which `affinity` placement looks for; default none. */
  readonly tags?: readonly string[];
  /** What it offers (`vram_mb`, `arch`, `features`, ...), over what the host reports. */
  readonly capabilities?: Readonly<Record<string, unknown>>;
  /** Steps it runs at once; default 4. */
  readonly concurrency?: number;
  /** The fleet's Redis: a URL (default `redis://127.0.0.1:6379`). */
  readonly redis?: string;
  /**
   * The fleet's Redis Cluster instead, by its nodes (`host:port`, at least one): every key
   * then goes under the prefix's hash tag.
   */
  readonly cluster?: string | readonly string[];
  /** Prefix of every key; default `axon:`, or `{axon}:` on a cluster (where it must hold a hash tag). */
  readonly prefix?: string;
  /**
   * The fleet's records (runs, steps, logs, budgets) in PostgreSQL instead of Redis: the URL
   * (`postgres://`) and schema (default `axon`) its API processes use. Queues, streams,
   * cancels and the registry stay in Redis.
   */
  readonly postgres?: { readonly url: string; readonly schema?: string };
  /** This replica's id; default `<host>-<pid>-<random>`. */
  readonly replicaId?: string;
  /** The runtime's own options: its agents, tools, engines, policy, memory, logger. */
  readonly runtime?: Omit<RuntimeOptions, 'store' | 'poolId' | 'poolTags' | 'replicaId' | 'fleet'>;
  /** How often its heartbeat is written, in ms; default 1000. */
  readonly heartbeatMs?: number;
  /** How long a heartbeat lives, in ms (a dead replica leaves the registry after it); default 5000. */
  readonly ttlMs?: number;
  /**
   * How long a job's lock lives without renewal, in ms: a replica killed mid-step leaves its
   * step to another replica after it and the next stall check; default 30 000.
   */
  readonly lockMs?: number;
  /** How often this replica checks its pool for stalled jobs, in ms; default 30 000. */
  readonly stalledCheckMs?: number;
  /** Entries a step's stream keeps (approximately); default 1000. */
  readonly streamMaxLen?: number;
  readonly logger?: Logger;
}

export const KNOWN: ReadonlySet<string> = new Set([
  'pool',
  'tags',
  'capabilities',
  'concurrency',
  'redis',
  'cluster',
  'prefix',
  'postgres',
  'replicaId',
  'runtime',
  'heartbeatMs',
  'ttlMs',
  'lockMs',
  'stalledCheckMs',
  'streamMaxLen',
  'logger',
]);

/**
 * How long past its grace period a stopping replica waits for Redis before it drops its
 * connections and stops without it, ms.
 */
export const STOP_REDIS_MS = 5_000;

/** What stopping did. */
export interface StopReport {
  /** Steps that ended here within the grace period. */
  readonly finished: number;
  /** Steps handed back to the queue, for another replica to go on with. */
  readonly handedBack: number;
}

/** `value`, or `fallback` when not given. @throws RangeError naming `name` unless an integer >= 1. */
export function positiveInt(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!(Number.isInteger(value) && value >= 1)) {
    throw new RangeError(`fleet worker: ${name} must be an integer >= 1, got ${value}`);
  }
  return value;
}
