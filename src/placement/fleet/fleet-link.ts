/**
 * @module A runtime's link to a worker fleet (`createRuntime({ fleet: { redis } })`, `axon
 * serve --redis`): the pools' table read from the registry, each pool's BullMQ queue to send
 * steps to, the relay of the steps' event streams, and cancels over pub/sub. The runtime that
 * holds it runs no submitted step itself: each goes to the pool its run's `pool_policy`
 * chooses (PLACE-5001), where an `axon worker` takes it (`src/fleet/`).
 */
import { Queue } from 'bullmq';
import { QueueFullError } from '../../errors/queue-full-error.js';
import { PoolUnavailableError } from '../../errors/pool-unavailable-error.js';
import { actorDispatchOn, type ActorDispatch } from './actor-jobs.js';
import type { Logger } from '../../observability/logger.js';
import type { StepRecord, StepStatus } from '../../store/records.js';
import { RedisRunStore } from '../../store/redis/redis-store.js';
import type { RunStore } from '../../store/run-store.js';
import {
  checkClusterPrefix,
  CLUSTER_PREFIX,
  connectRedis,
  duplicateClient,
  isCluster,
  isRedisClient,
  parseClusterNodes,
  type RedisClient,
} from '../../store/redis/redis-connection.js';
import { FleetKeys } from './fleet-keys.js';
import { stepJobId, type StepDispatch, type StepJob } from './fleet-jobs.js';
import { PoolTable, readBeats, type QueueFigures } from './fleet-registry.js';
import { announceEnded, StepStreamRelay } from './fleet-relay.js';
import type { PoolCandidate } from '../pool-choice.js';
import type { PoolInfo } from '../pool-info.js';

/** How long a recorded cancel is kept, ms (a day: longer than any step waits or runs). */
export const CANCEL_TTL_MS = 86_400_000;

/** Options of a runtime's fleet (`createRuntime({ fleet })`). */
export interface FleetOptions {
  /**
   * The fleet's Redis: a URL (default `redis://127.0.0.1:6379`) or a connection to share (to
   * a server or a cluster).
   */
  readonly redis?: string | RedisClient;
  /**
   * The fleet's Redis Cluster instead, by its nodes (`host:port`, at least one): every key
   * then goes under the prefix's hash tag.
   */
  readonly cluster?: string | readonly string[];
  /**
   * Prefix of every key; default `axon:` (the Redis store's), or `{axon}:` on a cluster, where
   * it must hold a hash tag.
   */
  readonly prefix?: string;
  /** How often the pools' table is read from Redis, in ms; default 500. */
  readonly refreshMs?: number;
  /** Steps a pool's queue may hold waiting before submissions get 429 `QUEUE_FULL`; default 10 000. */
  readonly maxQueued?: number;
  /**
   * How often the steps this process waits on or follows are checked for a job that is gone
   * (failed for stalling, removed): such a step ends `WORKER_LOST`; in ms, default 2 000.
   */
  readonly lostCheckMs?: number;
}

const KNOWN: ReadonlySet<string> = new Set([
  'redis',
  'cluster',
  'prefix',
  'refreshMs',
  'maxQueued',
  'lostCheckMs',
]);

/** Counters a pool's workers keep in Redis (`HINCRBY`), by field. */
export const COUNTER_FIELDS = ['completed', 'stalled'] as const;

/** The key of a pool's counters. */
export function countersKey(keys: FleetKeys, poolId: string): string {
  return `${keys.prefix}fleet:counts:${poolId}`;
}

/** Checks fleet options: unknown keys and bad values are refused with `TypeError`/`RangeError`. */
export function checkFleetOptions(options: FleetOptions): void {
  const given: unknown = options;
  if (given === null || typeof given !== 'object') {
    throw new TypeError('createRuntime: fleet must be an object ({ redis, prefix, ... })');
  }
  const unknown = Object.keys(options).filter((k) => !KNOWN.has(k));
  if (unknown.length > 0) {
    throw new TypeError(
      `createRuntime: fleet has no option ${unknown.join(', ')} (it has ${[...KNOWN].join(', ')})`,
    );
  }
  const { redis, cluster, prefix, refreshMs, maxQueued, lostCheckMs } = options;
  if (redis !== undefined && typeof redis !== 'string' && !isRedisClient(redis)) {
    throw new TypeError('createRuntime: fleet.redis must be a URL or an ioredis connection');
  }
  if (prefix !== undefined && (typeof prefix !== 'string' || prefix.length === 0)) {
    throw new TypeError('createRuntime: fleet.prefix must be a non-empty string');
  }
  if (cluster !== undefined) {
    if (redis !== undefined) {
      throw new TypeError('createRuntime: fleet takes redis or cluster, not both');
    }
    parseClusterNodes(cluster, 'createRuntime: fleet.cluster');
  }
  const onCluster = cluster !== undefined || (isRedisClient(redis) && isCluster(redis));
  if (onCluster && prefix !== undefined) checkClusterPrefix(prefix, 'createRuntime: fleet.prefix');
  for (const [name, value] of [
    ['refreshMs', refreshMs],
    ['maxQueued', maxQueued],
    ['lostCheckMs', lostCheckMs],
  ] as const) {
    if (value !== undefined && !(Number.isInteger(value) && value >= 1)) {
      throw new RangeError(`createRuntime: fleet.${name} must be an integer >= 1, got ${value}`);
    }
  }
}

/** The prefix of a fleet's keys: as given, else `axon:`, or `{axon}:` on a cluster. */
export function fleetPrefix(options: FleetOptions): string {
  const { redis, cluster } = options;
  const onCluster = cluster !== undefined || (isRedisClient(redis) && isCluster(redis));
  return options.prefix ?? (onCluster ? CLUSTER_PREFIX : 'axon:');
}

/**
 * What a fleet link needs of its runtime's store, checked against the fleet's options. The
 * Redis store opens each queued step it claims (`<prefix>fleet:open`) under its own prefix,
 * and the fleet's workers read runs under the fleet's: the two must be one (`TypeError`).
 */
export function storeForFleet(
  options: FleetOptions,
  store: RunStore | undefined,
): Pick<FleetLinkHost, 'storeOpensSteps' | 'records' | 'watchStep'> {
  checkFleetOptions(options);
  const prefix = fleetPrefix(options);
  if (store instanceof RedisRunStore && store.prefix !== prefix) {
    throw new TypeError(
      `createRuntime: the Redis store's prefix (${JSON.stringify(store.prefix)}) and the fleet's (${JSON.stringify(prefix)}) must be the same: the fleet's workers read runs under the fleet's prefix`,
    );
  }
  return {
    storeOpensSteps: store instanceof RedisRunStore,
    records: store?.identity?.bind(store),
    watchStep:
      store instanceof RedisRunStore
        ? (stepId, watcher, on) => store.watchStep(stepId, watcher, on)
        : undefined,
  };
}

/** What the link needs from its runtime. */
export interface FleetLinkHost {
  readonly logger: Logger;
  /** A step's stream had an entry: its followers here read the log again. */
  appended(stepId: string): void;
  /**
   * Whether the runtime's store opens each queued step it claims in the fleet's open steps
   * itself (the Redis store under the fleet's prefix does); if not, the link does it, before
   * the step's job is queued.
   */
  readonly storeOpensSteps: boolean;
  /** The identity of the runtime's store (`RunStore.identity`), carried by each job. */
  readonly records?: (() => Promise<string>) | undefined;
  /**
   * With the records in Redis, a step followed here is watched in its record
   * (`RedisRunStore.watchStep`): the replicas' appends to it wake this process's relay.
   */
  readonly watchStep?:
    ((stepId: string, watcher: string, on: boolean) => Promise<void>) | undefined;
}

/** A runtime's link to its fleet; see the module. */
export class FleetLink implements StepDispatch {
  readonly keys: FleetKeys;
  readonly table = new PoolTable();
  readonly #client: RedisClient;
  readonly #owned: boolean;
  readonly #reader: RedisClient;
  readonly #relay: StepStreamRelay;
  readonly #queues = new Map<string, Queue>();
  /** Jobs this process queued on each pool since the table was last read. */
  readonly #queuedSinceRead = new Map<string, number>();
  readonly #refreshMs: number;
  readonly #maxQueued: number;
  readonly lostCheckMs: number;
  readonly #logger: Logger;
  readonly #opensSteps: boolean;
  readonly #records: (() => Promise<string>) | null;
  readonly #watchStep: FleetLinkHost['watchStep'] | null;
  readonly #logged: (err: unknown) => void;
  readonly #timer: NodeJS.Timeout;
  #reading: Promise<void> | null = null;
  #closed = false;

  constructor(options: FleetOptions, host: FleetLinkHost) {
    checkFleetOptions(options);
    const given = options.redis;
    const cluster =
      options.cluster === undefined
        ? null
        : parseClusterNodes(options.cluster, 'createRuntime: fleet.cluster');
    this.keys = new FleetKeys(fleetPrefix(options));
    this.#refreshMs = options.refreshMs ?? 500;
    this.#maxQueued = options.maxQueued ?? 10_000;
    this.lostCheckMs = options.lostCheckMs ?? 2_000;
    this.#logger = host.logger;
    this.#opensSteps = !host.storeOpensSteps;
    this.#records = host.records ?? null;
    this.#watchStep = host.watchStep ?? null;
    this.#owned = !isRedisClient(given);
    this.#client = isRedisClient(given)
      ? given
      : connectRedis(cluster ? { cluster } : { url: given ?? 'redis://127.0.0.1:6379' }, {
          maxRetriesPerRequest: 2,
        });
    // Calls fail on their own; a lost connection is logged once per error, not thrown.
    const logged = (err: unknown): void => {
      if (!this.#closed) this.#logger.warn({ err }, 'fleet: a Redis call failed');
    };
    this.#logged = logged;
    if (this.#owned) this.#client.on('error', logged);
    this.#reader = duplicateClient(this.#client, { maxRetriesPerRequest: null });
    this.#reader.on('error', () => undefined);
    this.#relay = new StepStreamRelay(
      this.#reader,
      this.#client,
      this.keys,
      (stepId) => {
        host.appended(stepId);
      },
      logged,
    );
    this.#timer = setInterval(() => {
      void this.refresh().catch(logged);
    }, this.#refreshMs);
    this.#timer.unref();
    void this.refresh().catch(logged);
  }

  /** The connection the link's calls go through. */
  get client(): RedisClient {
    return this.#client;
  }

  /** The prefix of the fleet's leases (`redisLeases`): a lease `k` is key `<leasePrefix>k`. */
  get leasePrefix(): string {
    return `${this.keys.prefix}lease:`;
  }

  /**
   * Durable agents' work goes to the fleet's pools (issue 46): an actor's messages, and every
   * due time, as jobs on the queue of the first live pool by id (the replicas of a fleet that
   * runs durable agents register the same ones); `POOL_UNAVAILABLE` while no pool is live —
   * the registry read again first, so a worker that started since the last read is found.
   */
  actorDispatch(): ActorDispatch {
    return actorDispatchOn(async () => {
      if (this.table.poolIds().length === 0) await this.refresh();
      const [poolId] = this.table.poolIds().sort();
      if (poolId === undefined) {
        throw new PoolUnavailableError(
          'no pool of the fleet is live to run durable agents: start an axon worker',
          { details: { pools: [] }, retriable: true },
        );
      }
      return this.#queue(poolId);
    }, Date.now);
  }

  /** Reads the registry and the queues' figures into the table (one read at a time). */
  refresh(): Promise<void> {
    this.#reading ??= this.#read().finally(() => {
      this.#reading = null;
    });
    return this.#reading;
  }

  /** The table, read again if it is older than the refresh interval. */
  async fresh(): Promise<void> {
    if (Date.now() - this.table.readAt >= this.#refreshMs) await this.refresh();
  }

  candidates(): readonly PoolCandidate[] {
    return this.table.candidates();
  }

  pools(): readonly PoolInfo[] {
    return this.table.pools();
  }

  /** Each live pool's queue figures, as last read. */
  figures(): { readonly pool_id: string; readonly figures: QueueFigures }[] {
    return this.table
      .poolIds()
      .map((poolId) => ({ pool_id: poolId, figures: this.table.figures(poolId) }));
  }

  admit(poolId: string): Promise<void> {
    // As last read (at most `refreshMs` ago), plus what this process queued since.
    const waiting = this.table.figures(poolId).waiting + (this.#queuedSinceRead.get(poolId) ?? 0);
    if (waiting >= this.#maxQueued) {
      return Promise.reject(
        new QueueFullError(
          `pool ${poolId} has ${waiting} steps waiting (at most ${this.#maxQueued}): try again later`,
          { details: { pool_id: poolId, waiting, max_queued: this.#maxQueued } },
        ),
      );
    }
    return Promise.resolve();
  }

  async enqueue(job: StepJob, record: StepRecord): Promise<void> {
    this.#queuedSinceRead.set(job.pool_id, (this.#queuedSinceRead.get(job.pool_id) ?? 0) + 1);
    // Open before it is queued (the Redis store's claim of a queued step opens it, in
    // `keys.open`; with the records elsewhere, here): a step whose job goes missing is always
    // found by a sweep.
    if (this.#opensSteps) {
      await this.#client.zadd(this.keys.open, 'NX', job.queued_at, record.step_id);
    }
    const records = this.#records ? await this.#records() : undefined;
    const data = records === undefined ? job : { ...job, records };
    await this.#queue(job.pool_id).add('step', data, {
      jobId: stepJobId(job.run_id, record.client_token, job.step_id),
      // A try that failed on the worker (its Redis, its process) goes on from the step's log.
      attempts: 3,
      backoff: { type: 'exponential', delay: 500 },
      // A job that failed is the step's failure, already in the store: keep a few to look at.
      removeOnComplete: true,
      removeOnFail: { count: 1000 },
    });
  }

  async cancel(step: StepRecord): Promise<boolean> {
    // Recorded first: whichever replica takes the step from now on, or holds it and misses
    // the message below, finds it (the key outlives any step's run).
    await this.#client.set(this.keys.cancelled(step.step_id), '1', 'PX', CANCEL_TTL_MS);
    const poolId = step.placement_decision?.pool_id;
    if (step.status === 'queued' && poolId !== undefined) {
      const jobId = stepJobId(step.run_id, step.client_token, step.step_id);
      // 1 when the job was waiting (now gone), 0 when a worker holds it (it is told below).
      const removed = await this.#queue(poolId)
        .remove(jobId)
        .catch(() => 0);
      if (removed === 1) return true;
    }
    await this.#client.publish(this.keys.cancel, step.step_id);
    return false;
  }

  async endedHere(stepId: string, status: StepStatus): Promise<void> {
    await announceEnded(this.#client, this.keys, stepId, status);
  }

  async jobStates(steps: readonly StepRecord[]): Promise<Map<string, string>> {
    const states = new Map<string, string>();
    await Promise.all(
      steps.map(async (step) => {
        const poolId = step.placement_decision?.pool_id;
        if (poolId === undefined) return;
        const jobId = stepJobId(step.run_id, step.client_token, step.step_id);
        states.set(step.step_id, await this.#queue(poolId).getJobState(jobId));
      }),
    );
    return states;
  }

  watched(): readonly string[] {
    return this.#relay.watched();
  }

  async openSteps(after: number, before: number, limit: number) {
    const flat = await this.#client.zrangebyscore(
      this.keys.open,
      `(${after}`,
      `(${before}`,
      'WITHSCORES',
      'LIMIT',
      0,
      limit,
    );
    const out: { stepId: string; queuedAt: number }[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      out.push({ stepId: flat[i] as string, queuedAt: Number(flat[i + 1]) });
    }
    return out;
  }

  async closeSteps(stepIds: readonly string[]): Promise<void> {
    if (stepIds.length > 0) await this.#client.zrem(this.keys.open, ...stepIds);
  }

  ended(stepId: string): Promise<StepStatus | null> {
    return this.#relay.ended(stepId);
  }

  /**
   * Followers of a step opened here: its appends wake them (its record watched by this
   * process, with the records in Redis; else its stream).
   */
  follow(stepId: string): void {
    if (this.#relay.follow(stepId)) this.#watch(stepId, true);
  }

  unfollow(stepId: string): void {
    if (this.#relay.unfollow(stepId)) this.#watch(stepId, false);
  }

  /** Watches the step's record, or stops; a failure is logged (followers poll meanwhile). */
  #watch(stepId: string, on: boolean): void {
    this.#watchStep?.(stepId, this.#relay.watcher, on).catch(this.#logged);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    await this.#relay.close();
    await Promise.allSettled([...this.#queues.values()].map((q) => q.close()));
    this.#reader.disconnect();
    if (this.#owned) await this.#client.quit().catch(() => undefined);
  }

  #queue(poolId: string): Queue {
    let queue = this.#queues.get(poolId);
    if (!queue) {
      queue = new Queue(this.keys.queue(poolId), {
        connection: this.#client,
        prefix: this.keys.bullPrefix,
      });
      queue.on('error', () => undefined);
      this.#queues.set(poolId, queue);
    }
    return queue;
  }

  async #read(): Promise<void> {
    const beats = await readBeats(this.#client, this.keys);
    const queuedBefore = new Map(this.#queuedSinceRead);
    const queues: Record<string, QueueFigures> = {};
    for (const poolId of new Set(beats.map((b) => b.pool_id))) {
      const [counts, counters] = await Promise.all([
        this.#queue(poolId).getJobCounts('waiting', 'active'),
        this.#client.hmget(countersKey(this.keys, poolId), ...COUNTER_FIELDS),
      ]);
      queues[poolId] = {
        waiting: counts['waiting'] ?? 0,
        active: counts['active'] ?? 0,
        completed: Number(counters[0] ?? 0),
        stalled: Number(counters[1] ?? 0),
      };
    }
    this.table.update(beats, queues, Date.now());
    // What was queued while reading may not be in the figures yet: it stays counted.
    for (const [poolId, n] of queuedBefore) {
      const left = (this.#queuedSinceRead.get(poolId) ?? 0) - n;
      if (left > 0) this.#queuedSinceRead.set(poolId, left);
      else this.#queuedSinceRead.delete(poolId);
    }
  }
}
