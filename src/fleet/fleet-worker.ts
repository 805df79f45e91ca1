/**
 * @module A member of a worker fleet (`axon worker`): one replica of a pool. It takes the step
 * jobs of its pool's BullMQ queue, runs each with its own runtime over the shared Redis store
 * (inline or worker-thread placement on this host, as the step asks), announces every append
 * on the step's Redis Stream, keeps its heartbeat in the registry, obeys cancels — sent over
 * pub/sub, and recorded in Redis before they are sent, which it reads when it takes a step
 * and with each heartbeat while it runs, so none is lost — and when stopped finishes its steps within a grace period and hands the rest back
 * to the queue, where another replica goes on with them.
 */
import { BASE_PLACEMENTS } from '../placement/pool-choice.js';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { UnrecoverableError, Worker, type Job, type Queue } from 'bullmq';
import { ACTOR_JOB, TICK_JOB } from '../placement/fleet/actor-jobs.js';
import { joinDurable, takeActorWork } from './actor-work.js';
import { createLogger, type Logger } from '../observability/logger.js';
import { checkPoolId, FleetKeys } from '../placement/fleet/fleet-keys.js';
import { checkStepJob, type StepJob } from '../placement/fleet/fleet-jobs.js';
import { countersKey } from '../placement/fleet/fleet-link.js';
import { removeBeat, writeBeat, type ReplicaBeat } from '../placement/fleet/fleet-registry.js';
import { createRuntime, type Runtime } from '../runtime/runtime.js';
import {
  checkClusterPrefix,
  CLUSTER_PREFIX,
  connectRedis,
  duplicateClient,
  parseClusterNodes,
  type RedisClient,
} from '../store/redis/redis-connection.js';
import { CancelledError } from '../errors/cancelled-error.js';
import {
  KNOWN,
  positiveInt,
  STOP_REDIS_MS,
  type FleetWorkerOptions,
  type StopReport,
} from './fleet-worker-options.js';
import type { StepTurns } from './step-turns.js';
import type { StreamingStore } from './streaming-store.js';
import { workerRecords } from './worker-records.js';
import { abandonStep, endCancelledStep } from './unrun-steps.js';
import type { StepStatus } from '../store/records.js';

export { STOP_REDIS_MS, type FleetWorkerOptions, type StopReport } from './fleet-worker-options.js';

/** A job running here. */
interface Running {
  readonly job: Job<StepJob>;
  readonly token: string | undefined;
  /** Aborted by the step's cancel: a message, or the cancel found recorded. */
  readonly cancel: AbortController;
  /** Its work, to the end of its last write. */
  done: Promise<unknown>;
  /** Set once its end is sent: its job's finish follows it, it is not handed back. */
  finishing: boolean;
}

/** One replica of a pool; see the module. */
export class FleetWorker {
  readonly runtime: Runtime;
  readonly poolId: string;
  readonly replicaId: string;
  readonly keys: FleetKeys;
  readonly #client: RedisClient;
  readonly #sub: RedisClient;
  /** Where its Redis is, for messages. */
  readonly #where: string;
  readonly #store: StreamingStore;
  /** Resolves once its records can be written (`WorkerRecords.ready`). */
  readonly #recordsReady: () => Promise<void>;
  /** Where its records are: `Redis`, or PostgreSQL's URL and schema. */
  readonly records: string;
  /** Its store's identity (`RunStore.identity`), which each job's must match. */
  #identity: string | null = null;
  readonly #worker: Worker<StepJob>;
  /** Its pool's queue for the durable agents' due times (`tick` jobs), if it runs any. */
  readonly #queue: Queue | null;
  readonly #logger: Logger;
  readonly #running = new Map<string, Running>();
  /** This replica's turns at the steps it takes, and their fences. */
  readonly #turns: StepTurns;
  readonly #beat: () => ReplicaBeat;
  /** The placements it advertises (see `#checkContainers`). */
  #placements: readonly string[] = BASE_PLACEMENTS;
  readonly #ttlMs: number;
  readonly #timer: NodeJS.Timeout;
  #draining = false;
  #stopped: Promise<StopReport> | null = null;

  private constructor(options: FleetWorkerOptions) {
    const unknown = Object.keys(options).filter((k) => !KNOWN.has(k));
    if (unknown.length > 0) {
      throw new TypeError(`fleet worker: no option ${unknown.join(', ')}`);
    }
    this.poolId = checkPoolId(options.pool, 'fleet worker: pool');
    const tags = options.tags ?? [];
    if (!tags.every((t) => typeof t === 'string' && t.length > 0)) {
      throw new TypeError('fleet worker: tags must be non-empty strings');
    }
    const concurrency = positiveInt('concurrency', options.concurrency, 4);
    const heartbeatMs = positiveInt('heartbeatMs', options.heartbeatMs, 1000);
    this.#ttlMs = positiveInt('ttlMs', options.ttlMs, 5000);
    if (this.#ttlMs <= heartbeatMs) {
      throw new RangeError(
        `fleet worker: ttlMs (${this.#ttlMs}) must be longer than heartbeatMs (${heartbeatMs})`,
      );
    }
    const lockMs = positiveInt('lockMs', options.lockMs, 30_000);
    const stalledCheckMs = positiveInt('stalledCheckMs', options.stalledCheckMs, 30_000);
    const streamMaxLen = positiveInt('streamMaxLen', options.streamMaxLen, 1000);
    this.replicaId =
      options.replicaId ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
    const cluster =
      options.cluster === undefined
        ? null
        : parseClusterNodes(options.cluster, 'fleet worker: cluster');
    if (cluster && options.redis !== undefined) {
      throw new TypeError('fleet worker: give redis or cluster, not both');
    }
    const prefix = options.prefix ?? (cluster ? CLUSTER_PREFIX : 'axon:');
    if (cluster) checkClusterPrefix(prefix, 'fleet worker: prefix');
    this.keys = new FleetKeys(prefix);
    this.#logger = options.logger ?? options.runtime?.logger ?? createLogger();
    const url = options.redis ?? 'redis://127.0.0.1:6379';
    this.#where = cluster
      ? `the Redis Cluster at ${cluster.map((n) => `${n.host}:${n.port}`).join(',')}`
      : `Redis at ${url}`;
    this.#client = connectRedis(cluster ? { cluster } : { url }, { maxRetriesPerRequest: null });
    this.#client.on('error', (err) => {
      this.#logger.warn({ err }, 'fleet worker: a Redis connection failed');
    });
    const records = workerRecords({
      client: this.#client,
      keys: this.keys,
      poolId: this.poolId,
      streamMaxLen,
      postgres: options.postgres ?? null,
      logger: this.#logger,
    });
    this.#turns = records.turns;
    this.#store = records.store;
    this.#recordsReady = records.ready;
    this.records = records.where;
    this.runtime = createRuntime({
      ...options.runtime,
      logger: this.#logger,
      store: this.#store.store,
      poolId: this.poolId,
      poolTags: tags,
      replicaId: this.replicaId,
    });
    this.#queue = joinDurable(this.runtime.durable, this.#client, this.keys, this.poolId, records);
    this.#beat = () => ({
      pool_id: this.poolId,
      replica_id: this.replicaId,
      tags: [...tags],
      capabilities: { arch: process.arch, placements: this.#placements, ...options.capabilities },
      engines: this.runtime.listPools()[0]?.engines.slice() ?? [],
      concurrency,
      active: this.#running.size,
      health: this.#draining
        ? 'draining'
        : this.runtime.listPools()[0]?.replicas[0]?.health === 'degraded'
          ? 'degraded'
          : 'healthy',
      host: hostname(),
      pid: process.pid,
      ts: Date.now(),
    });
    this.#worker = new Worker<StepJob>(
      this.keys.queue(this.poolId),
      (job, token) => this.#take(job, token),
      {
        // The store's connection: a job's finish goes after its step's end, which it follows
        // without waiting for its reply (BullMQ opens its own blocking connection).
        connection: this.#client,
        prefix: this.keys.bullPrefix,
        // Kept in the job (`pb`): which replica took it last.
        name: this.replicaId,
        concurrency,
        lockDuration: lockMs,
        stalledInterval: stalledCheckMs,
        // A step taken again after a stall goes on where its log ends (`takeStep`).
        maxStalledCount: 3,
        autorun: false,
      },
    );
    this.#worker.on('error', (err) => {
      this.#logger.warn({ err }, 'fleet worker: the queue failed');
    });
    this.#worker.on('failed', (job, err) => {
      // A job BullMQ gave up on (its tries spent, stalled too often): its step must not be
      // left open in the store.
      if (job && job.attemptsMade >= (job.opts.attempts ?? 1))
        void abandonStep(this.#store, this.#logger, job, err);
    });
    this.#worker.on('stalled', (jobId) => {
      this.#logger.warn(
        { job_id: jobId, pool_id: this.poolId },
        'fleet worker: a stalled step goes back to the queue',
      );
      void this.#client.hincrby(countersKey(this.keys, this.poolId), 'stalled', 1).catch(() => 0);
    });
    this.#sub = duplicateClient(this.#client, { maxRetriesPerRequest: null });
    this.#sub.on('error', () => undefined);
    this.#sub.on('message', (_channel: string, stepId: string) => {
      for (const r of this.#running.values()) {
        if (r.job.data.step_id === stepId) this.#cancel(r);
      }
    });
    this.#timer = setInterval(() => {
      void this.#heartbeat();
      void this.#recordedCancels();
    }, heartbeatMs);
    this.#timer.unref();
  }

  /**
   * Starts a replica: it joins the registry and takes jobs. Rejects with `TypeError` /
   * `RangeError` for a bad option, and when Redis cannot be reached.
   */
  static async start(options: FleetWorkerOptions): Promise<FleetWorker> {
    const worker = new FleetWorker(options);
    try {
      await worker.#reachable();
      await worker.#recordsReady();
      worker.#identity = (await worker.#store.store.identity?.()) ?? null;
      await worker.#checkContainers();
      await worker.#sub.subscribe(worker.keys.cancel);
      await worker.#heartbeat(true);
      void worker.#worker.run().catch((err: unknown) => {
        worker.#logger.error({ err }, 'fleet worker: the queue stopped');
      });
      await worker.#worker.waitUntilReady();
    } catch (err) {
      await worker.#abort();
      throw err;
    }
    worker.#logger.info(
      { pool_id: worker.poolId, replica_id: worker.replicaId },
      'fleet worker: taking steps',
    );
    return worker;
  }

  /**
   * The placements this replica advertises: its runtime's, with `container` only when a
   * container engine works on this host (a step needing it then goes to a replica where one
   * does, or is refused `POOL_UNAVAILABLE`).
   */
  async #checkContainers(): Promise<void> {
    const offered = this.runtime.listPools()[0]?.capabilities.placements ?? BASE_PLACEMENTS;
    this.#placements = offered.filter((p) => p !== 'container');
    if (!offered.includes('container')) return;
    try {
      await this.runtime.checkContainers();
      this.#placements = offered;
    } catch (err) {
      this.#logger.warn({ err }, 'fleet worker: container placement is not offered here');
    }
  }

  /** Steps running here now. */
  get active(): number {
    return this.#running.size;
  }

  /**
   * Stops taking steps, lets the running ones end for up to `graceMs`, hands back those still
   * running (their jobs go back to the queue; this replica writes nothing more of them), and
   * leaves the registry. Resolves once everything is closed — or, when Redis does not answer
   * (down, a cluster's slot without a master), {@link STOP_REDIS_MS} past the grace period,
   * with every connection dropped: the steps still held then go to another replica once their
   * jobs' locks lapse, as a killed replica's do.
   */
  stop(graceMs = 30_000): Promise<StopReport> {
    this.#stopped ??= this.#stopBounded(graceMs);
    return this.#stopped;
  }

  async #stopBounded(graceMs: number): Promise<StopReport> {
    const before = this.#running.size;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => {
      timer = setTimeout(() => {
        resolve(null);
      }, graceMs + STOP_REDIS_MS);
    });
    const report = await Promise.race([this.#stop(graceMs), late]);
    clearTimeout(timer);
    if (report) return report;
    this.#logger.warn(
      { pool_id: this.poolId, replica_id: this.replicaId, running: this.#running.size },
      'fleet worker: Redis does not answer; stopping without it',
    );
    this.#store.fence();
    await this.#abort();
    return { finished: before - this.#running.size, handedBack: 0 };
  }

  async #stop(graceMs: number): Promise<StopReport> {
    this.#draining = true;
    clearInterval(this.#timer);
    await this.#heartbeat().catch(() => undefined);
    const closing = this.#worker.close();
    const before = this.#running.size;
    const allDone = Promise.allSettled([...this.#running.values()].map((r) => r.done));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([allDone, new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
    // A step whose end is sent is not handed back: its job's finish is on its way.
    const left = [...this.#running.values()].filter((r) => !r.finishing);
    if (left.length > 0) {
      // Nothing more of these is written here: the replica that takes them goes on from the log.
      this.#store.fence();
      for (const r of left) {
        await r.job.moveToWait(r.token).catch((err: unknown) => {
          this.#logger.warn({ err, job_id: r.job.id }, 'fleet worker: could not hand a step back');
        });
        this.#logger.info({ step_id: r.job.data.step_id }, 'fleet worker: handed a step back');
      }
      await this.#worker.close(true).catch(() => undefined);
    }
    await closing.catch(() => undefined);
    await removeBeat(this.#client, this.keys, this.poolId, this.replicaId).catch(() => undefined);
    await this.runtime.close().catch(() => undefined);
    await this.#queue?.close().catch(() => undefined);
    this.#sub.disconnect();
    await this.#client.quit().catch(() => undefined);
    return { finished: before - left.length, handedBack: left.length };
  }

  /**
   * Closes a replica that never started, or one whose Redis does not answer, without waiting
   * on it (its runtime's close is not waited for past {@link STOP_REDIS_MS} either).
   */
  async #abort(): Promise<void> {
    clearInterval(this.#timer);
    this.#client.disconnect();
    this.#sub.disconnect();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([this.#worker.close(true), this.runtime.close(), this.#queue?.close()]),
      new Promise((resolve) => (timer = setTimeout(resolve, STOP_REDIS_MS))),
    ]);
    clearTimeout(timer);
  }

  /** Resolves once Redis answers; rejects naming where it is when it does not within 5 s. */
  async #reachable(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.#client.ping(),
        new Promise((_, reject) => {
          timer = setTimeout(() => {
            reject(new Error(`${this.#where} does not answer`));
          }, 5000);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Cancels a step running here (its context's signal aborts, before it has an actor too). */
  #cancel(r: Running): void {
    if (r.cancel.signal.aborted) return;
    const stepId = r.job.data.step_id;
    this.#logger.info({ step_id: stepId }, 'fleet worker: cancel');
    r.cancel.abort(new CancelledError(`step ${stepId} was cancelled`));
  }

  /**
   * Cancels the steps running here whose cancel is recorded: a message missed (sent while the
   * connection was down, or before the step was here) is not a cancel lost.
   */
  async #recordedCancels(): Promise<void> {
    const running = [...this.#running.values()].filter((r) => !r.cancel.signal.aborted);
    if (running.length === 0) return;
    try {
      const marks = await this.#client.mget(
        ...running.map((r) => this.keys.cancelled(r.job.data.step_id)),
      );
      running.forEach((r, i) => {
        if (marks[i] !== null) this.#cancel(r);
      });
    } catch (err) {
      this.#logger.warn({ err }, 'fleet worker: could not read recorded cancels');
    }
  }

  async #heartbeat(throwing = false): Promise<void> {
    try {
      await writeBeat(this.#client, this.keys, this.#beat(), this.#ttlMs);
    } catch (err) {
      if (throwing) throw err;
      this.#logger.warn({ err }, 'fleet worker: could not write its heartbeat');
    }
  }

  async #take(job: Job<StepJob>, token: string | undefined): Promise<unknown> {
    if (job.name === ACTOR_JOB || job.name === TICK_JOB) {
      return takeActorWork(this.runtime.durable, this.replicaId, job, token);
    }
    // Checked here, where it enters; `runtime.takeStep` does not check it again.
    const parsed = checkStepJob(job.data);
    if (!parsed.success) {
      this.#logger.error(
        { job_id: job.id, issues: parsed.error.issues },
        'fleet worker: a job that is not a step',
      );
      throw new UnrecoverableError(
        `job ${job.id ?? ''} is not a step job: ${parsed.error.message}`,
      );
    }
    const data = parsed.data;
    // BullMQ hands every job it fetches with its id and its lock's token.
    const id = job.id ?? data.step_id;
    if (data.records !== undefined && this.#identity !== null && data.records !== this.#identity) {
      const message = `step ${data.step_id} was queued by an API process whose records are ${data.records}, this replica's are ${this.#identity}: give every process of the fleet the same --postgres (or none)`;
      this.#logger.error({ step_id: data.step_id, job_id: id }, `fleet worker: ${message}`);
      throw new UnrecoverableError(message);
    }
    if (token === undefined) throw new Error(`job ${id} came without its lock's token`);
    this.#logger.info(
      {
        step_id: data.step_id,
        run_id: data.run_id,
        pool_id: data.pool_id,
        attempt: job.attemptsStarted,
        waited_ms: Date.now() - data.queued_at,
      },
      'fleet worker: took a step',
    );
    const running: Running = {
      job,
      token,
      cancel: new AbortController(),
      done: Promise.resolve(),
      finishing: false,
    };
    // Here before the recorded cancel is read: a cancel sent from now on finds the step.
    this.#running.set(id, running);
    // The turn, and the step's and its run's records, in one call.
    const { turn, cancelled } = this.#turns.take(data, id, token, job.attemptsStarted);
    const store = this.#store.store;
    const reading = Promise.all([store.getStep(data.step_id), store.getRun(data.run_id)]);
    running.done = (async () => {
      let status: StepStatus | null;
      try {
        const [marked, [step, run]] = await Promise.all([cancelled, reading]);
        // Cancelled before it came here: it never starts (nor goes on, after a stall).
        status = marked
          ? await endCancelledStep(this.#store, this.#logger, data.step_id)
          : await this.runtime.takeStep(data, running.cancel.signal, { step, run });
      } finally {
        this.#turns.end(data.step_id);
      }
      // Handed back: another replica goes on with it, and says when it ends.
      if (this.#store.fenced) return { status: null };
      // Said already, with its end's write.
      if (turn.said) return { status };
      // Said only while the turn is still this replica's: one taken over meanwhile (frozen
      // past its lock) was refused every write, and the replica that took it says the end.
      const said = await this.#store.ended(
        data.step_id,
        status,
        { key: countersKey(this.keys, this.poolId), field: 'completed' },
        turn.fence,
      );
      return { status: said ? status : null };
    })().finally(() => {
      this.#running.delete(id);
    });
    // The job finishes as soon as the step's end is sent, without waiting for its reply: the
    // finish (with the fetch of the next job) goes after it on the same connection, and both
    // hold only while the job's lock is this turn's — an end refused (the lock lost) is a
    // finish refused, and the job goes back to the queue at the stall check. Otherwise, when
    // all of the work is done.
    const sent = turn.ending.then((status) => {
      running.finishing = true;
      return { status };
    });
    const done = running.done;
    void done.catch((err: unknown) => {
      if (running.finishing)
        this.#logger.warn(
          { err, step_id: data.step_id },
          'fleet worker: a step failed after its end was sent',
        );
    });
    return Promise.race([done, sent]);
  }
}
