/**
 * @module The Redis RunStore (ioredis), for a fleet: runs as hashes of JSON fields, a step as
 * one hash holding its record and its log (format 2: `redis-step-scripts.ts`, migrated in
 * place from format 1 at start: `redis-format.ts`), and every check-then-write as one
 * operation of one Lua script, so several processes can share the store safely. The writes
 * of one turn of the event loop go to Redis together, as one call of that script (see
 * `redis-scripts.ts`): a write still resolves only once Redis has made it, and rejects with
 * its own error. All keys start with the store's prefix.
 */
import type { RedisOptions } from 'ioredis';
import { ConflictError } from '../../errors/conflict-error.js';
import { NotFoundError } from '../../errors/not-found-error.js';
import type { BudgetUsage, StepEvent } from '../../streams/events.js';
import { checkFactQuery, selectFacts } from '../fact-query.js';
import { RedisBatch, type WriteGuard, type WriteTarget } from './redis-batch.js';
import {
  CLUSTER_PREFIX,
  connectRedis,
  redisTargetOf,
  type RedisClient,
} from './redis-connection.js';
import { ledgerKey, redisBudgets } from './redis-budgets.js';
import {
  asRun,
  asStep,
  fromFields,
  fromFlat,
  keyPart,
  throwIfRefused,
  toFields,
} from './redis-fields.js';
import { readEventTexts } from './redis-events-read.js';
import { openRedisFormat } from './redis-format.js';
import { RedisRunIndex, runScore } from './redis-run-index.js';
import { RedisRunRecords } from './redis-run-records.js';
import { RedisActors } from './redis-actors.js';
import { stepEndOp } from './redis-step-end.js';
import type { RedisStoreOptions } from './redis-store-options.js';
import type { BudgetReservations } from '../budget-reservations.js';
import { Op, type OpCode } from './redis-scripts.js';

export type { WriteGuard, WriteTarget } from './redis-batch.js';
export type { EndNotice, RedisStoreOptions } from './redis-store-options.js';
import type {
  FactQuery,
  FactRecord,
  FlowRecord,
  RunPatch,
  RunRecord,
  RunStatus,
  StepPatch,
  StepRecord,
} from '../records.js';
import { ForwardedRecords } from '../forwarded-records.js';
import type { RunPageQuery, RunStore, StepEnd } from '../run-store.js';

/**
 * A {@link RunStore} on Redis, for processes that share runs (a worker fleet). Records and
 * events are stored as JSON: plain data only. Needs Redis 6.2 or later.
 *
 * @example
 * const runtime = createRuntime({ store: redisStore({ url: 'redis://127.0.0.1:6379', prefix: 'axon:' }) });
 */
export class RedisRunStore extends ForwardedRecords implements RunStore {
  readonly prefix: string;
  readonly client: RedisClient;
  readonly #owned: boolean;
  readonly #batch: RedisBatch;
  /** The indexes runs are listed from. */
  readonly #runs: RedisRunIndex;
  /** Reservations against runs' budgets, which every process on this Redis sees. */
  readonly budgets: BudgetReservations;
  /** A run's checkpoints, recordings and approvals. */
  protected readonly checkpoints: RedisRunRecords;
  protected readonly approvals: RedisRunRecords;
  /** Durable agents (issue 46): `redis-actors.ts`. */
  readonly actors: RedisActors;
  readonly #endNotice: RedisStoreOptions['endNotice'] | null;
  /** The format's opening (`redis-format.ts`), until it has opened. */
  #opening: Promise<void> | null = null;
  #opened = false;
  constructor(options: RedisStoreOptions = {}) {
    super();
    const { cluster, prefix } = redisTargetOf(options, 'redisStore', {
      single: 'axon:',
      cluster: CLUSTER_PREFIX,
    });
    this.prefix = prefix;
    this.#endNotice = options.endNotice ?? null;
    if (options.client) {
      this.client = options.client;
      this.#owned = false;
    } else {
      // A store call fails with the connection error instead of waiting for it forever.
      const redisOptions: RedisOptions = {
        maxRetriesPerRequest: 2,
        connectTimeout: 5_000,
        lazyConnect: false,
        ...options.redis,
      };
      this.client = connectRedis(
        cluster ? { cluster } : { url: options.url ?? 'redis://127.0.0.1:6379' },
        redisOptions,
      );
      // Without a listener ioredis prints every connection error to the console.
      const onError = options.onError ?? (() => undefined);
      this.client.on('error', onError);
      this.#owned = true;
    }
    this.#batch = new RedisBatch(this.client, options.fence ?? null, {
      ready: () => this.#ready(),
      wakePrefix: options.wakes?.prefix ?? '',
    });
    this.#runs = new RedisRunIndex(
      this.prefix,
      () => this.#read(),
      (code, keys, args) => this.#write(code, keys, args),
    );
    this.checkpoints = this.approvals = new RedisRunRecords(
      this.prefix,
      () => this.#read(),
      (code, keys, args, target) => this.#write(code, keys, args, target),
    );
    this.actors = new RedisActors(
      { prefix, read: () => this.#read(), write: (...op) => this.#write(...op) },
      {
        run: (id) => this.#run(id),
        step: (id) => this.#step(id),
        runSteps: (id) => this.#runSteps(id),
        token: (runId, token) => `${this.#run(runId)}:token:${token}`,
        runIndexes: (run) => this.#runs.keysOf(run),
      },
    );
    this.budgets = redisBudgets(
      (code, keys, args, target) => this.#write(code, keys, args, target),
      (id) => this.#run(id),
    );
  }

  /** `null` once the store's format is open, else its opening (the batch's calls wait for it). */
  #ready(): Promise<void> | null {
    if (this.#opened) return null;
    this.#opening ??= openRedisFormat(this.client, this.prefix).then(
      () => {
        this.#opened = true;
      },
      (err: unknown) => {
        // The next call tries again (Redis may be back).
        this.#opening = null;
        throw err;
      },
    );
    return this.#opening;
  }

  /** Queues one operation of the store's script (see `redis-batch.ts`). */
  #write(
    code: OpCode,
    keys: readonly string[],
    args: readonly string[],
    target?: WriteTarget,
  ): Promise<unknown> {
    return this.#batch.write(code, keys, args, target);
  }

  /** The connection, for a read: this turn's writes are sent first, so a read sees them. */
  #read(): RedisClient {
    this.#batch.send();
    return this.client;
  }

  #run(id: string): string {
    return `${this.prefix}run:${id}`;
  }

  #runSteps(id: string): string {
    return `${this.prefix}run:${id}:steps`;
  }

  #step(id: string): string {
    return `${this.prefix}step:${id}`;
  }

  #flow(id: string): string {
    return `${this.prefix}flow:${id}`;
  }

  async createRun(run: RunRecord): Promise<void> {
    const created = await this.#write(
      Op.createRun,
      [this.#run(run.run_id), ...this.#runs.keysOf(run)],
      [String(runScore(run)), run.run_id, ...toFields(run)],
    );
    if (created === 0) throw new ConflictError(`run ${run.run_id} exists`);
  }

  async getRun(runId: string): Promise<RunRecord | null> {
    if (!keyPart(runId)) return null;
    return asRun(fromFields(await this.#hash(this.#run(runId))));
  }

  /**
   * A hash, read in this turn's call of the script with its writes (after those queued
   * before it): reads and writes of a turn share one round trip.
   */
  async #hash(key: string): Promise<Record<string, string>> {
    const flat = (await this.#batch.write(Op.read, [key], [])) as string[];
    const out: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i] as string] = flat[i + 1] as string;
    return out;
  }

  async updateRun(runId: string, patch: RunPatch): Promise<void> {
    const run = this.#run(runId);
    // Only a new status moves a run between the indexes; any other patch is a plain one.
    const found =
      patch.status === undefined
        ? await this.#write(Op.patch, [run], toFields(patch), { runId })
        : await this.#write(
            Op.patchRun,
            [run, this.#runs.base],
            [this.#runs.base, runId, ...toFields(patch)],
            { runId },
          );
    if (found !== 1) throw new NotFoundError('run', runId);
  }

  async createStep(step: StepRecord): Promise<void> {
    const r = await this.#write(
      Op.createStep,
      [this.#run(step.run_id), this.#step(step.step_id), this.#runSteps(step.run_id)],
      [step.step_id, ...toFields(step)],
      { stepId: step.step_id, parentStepId: step.parent_step_id, runId: step.run_id },
    );
    if (r === -1) throw new NotFoundError('run', step.run_id);
    if (r === 0) throw new ConflictError(`step ${step.step_id} exists`);
  }

  async getStep(stepId: string): Promise<StepRecord | null> {
    if (!keyPart(stepId)) return null;
    return asStep(fromFlat(await this.#batch.write(Op.readStep, [this.#step(stepId)], [])));
  }

  async updateStep(stepId: string, patch: StepPatch): Promise<void> {
    const found = await this.#write(Op.stepPatch, [this.#step(stepId)], toFields(patch), {
      stepId,
    });
    if (found !== 1) throw new NotFoundError('step', stepId);
  }

  async listSteps(runId: string): Promise<StepRecord[]> {
    if (!keyPart(runId)) return [];
    const flats = (await this.#batch.write(
      Op.steps,
      [this.#runSteps(runId)],
      [this.#step('')],
    )) as unknown[];
    return flats.map((flat) => asStep(fromFlat(flat))).filter((s) => s !== null);
  }

  async appendEvents(events: readonly StepEvent[]): Promise<void> {
    if (events.length === 0) return;
    const index = new Map<string, number>();
    const keys: string[] = [];
    const args: string[] = [];
    for (const ev of events) {
      let i = index.get(ev.step_id);
      if (i === undefined) {
        i = index.size + 1;
        index.set(ev.step_id, i);
        keys.push(this.#step(ev.step_id));
      }
      args.push(String(i), String(ev.seq), JSON.stringify(ev));
    }
    const target = { stepId: (events[0] as StepEvent).step_id };
    const written = this.#write(Op.append, keys, args, target);
    throwIfRefused((await written) as (string | number)[], [...index.keys()]);
  }

  /**
   * Adds `watcher` to the processes a step's appends wake (`on`), or takes it off: each call
   * of the script that appends to the step adds an entry `<step id> <last seq>` to the wake
   * stream of each (`RedisStoreOptions.wakes`) — a fleet's API process follows a step this
   * way. A step that does not exist (or an id that cannot be a key's part) is passed over.
   */
  async watchStep(stepId: string, watcher: string, on: boolean): Promise<void> {
    if (!keyPart(stepId) || !/^\S+$/.test(watcher)) return;
    await this.#write(Op.watch, [this.#step(stepId)], [watcher, on ? '1' : '0']);
  }

  async endStep(end: StepEnd): Promise<void> {
    const { stepId, runId } = end;
    const run = this.#run(runId);
    const keys = [this.#step(stepId), run, ledgerKey(run)] as const;
    const { op, stepIds } = stepEndOp(end, keys, this.actors);
    const target = { stepId, runId };
    const status = end.patch.status;
    const notice = status === undefined ? null : (this.#endNotice?.(stepId, status) ?? null);
    let written: Promise<unknown>;
    if (notice) {
      const [ended, said] = this.#batch.chain(
        op,
        { code: Op.ended, keys: notice.keys, args: notice.args },
        target,
      );
      written = ended;
      said.then(
        (r) => {
          notice.said(r === 1);
        },
        () => {
          notice.said(false);
        },
      );
    } else {
      written = this.#batch.write(op.code, op.keys, op.args, target);
    }
    if (notice?.sent)
      this.#batch.onSent(() => {
        notice.sent?.();
      });
    const r = (await written) as (string | number)[];
    if (r[0] === 'no-run') throw new NotFoundError('run', runId);
    if (r[0] === 'no-actor') throw new NotFoundError('actor', end.actor?.actor_id ?? '');
    throwIfRefused(r, stepIds);
  }

  async claimStep(step: StepRecord): Promise<{ step: StepRecord; created: boolean }> {
    if (step.client_token === null && step.status !== 'queued') {
      await this.createStep(step);
      return { step, created: true };
    }
    const run = this.#run(step.run_id);
    // A step without a token names no token key: the run's hash stands in (Op.claimStep).
    const keys = [
      run,
      this.#step(step.step_id),
      this.#runSteps(step.run_id),
      step.client_token === null ? run : `${run}:token:${step.client_token}`,
    ];
    // A queued step is a fleet's: it is open for the fleet's sweep from its claim on.
    if (step.status === 'queued') keys.push(`${this.prefix}fleet:open`);
    const r = (await this.#write(Op.claimStep, keys, [
      step.step_id,
      String(Date.now()),
      ...toFields(step),
    ])) as string[];
    if (r[0] === 'no-run') throw new NotFoundError('run', step.run_id);
    if (r[0] === 'exists') throw new ConflictError(`step ${step.step_id} exists`);
    if (r[0] === 'created') return { step, created: true };
    const found = await this.getStep(r[1] ?? '');
    if (!found) throw new NotFoundError('step', r[1] ?? '');
    return { step: found, created: false };
  }

  async putFlow(flow: FlowRecord): Promise<{ flow: FlowRecord; created: boolean }> {
    const r = (await this.#write(
      Op.putFlow,
      [`${this.prefix}flowhash:${flow.hash}`, this.#flow(flow.flow_id)],
      [flow.flow_id, ...toFields(flow)],
    )) as string[];
    if (r[0] === 'exists') throw new ConflictError(`flow ${flow.flow_id} exists`);
    if (r[0] === 'created') return { flow, created: true };
    const found = await this.getFlow(r[1] ?? '');
    if (!found) throw new NotFoundError('flow', r[1] ?? '');
    return { flow: found, created: false };
  }

  async getFlow(flowId: string): Promise<FlowRecord | null> {
    if (!keyPart(flowId)) return null;
    return fromFields(await this.#read().hgetall(this.#flow(flowId))) as FlowRecord | null;
  }

  async getFlowByHash(hash: string): Promise<FlowRecord | null> {
    if (!keyPart(hash)) return null;
    const id = await this.#read().get(`${this.prefix}flowhash:${hash}`);
    return id === null ? null : this.getFlow(id);
  }

  async appendFact(fact: FactRecord): Promise<void> {
    const run = await this.getRun(fact.run_id);
    if (!run) throw new NotFoundError('run', fact.run_id);
    const runFacts = `${this.#run(fact.run_id)}:facts`;
    const r = await this.#write(
      Op.appendFact,
      [
        this.#run(fact.run_id),
        runFacts,
        `${this.prefix}fact-ids`,
        run.flow_id === null ? runFacts : `${this.#flow(run.flow_id)}:facts`,
      ],
      [fact.fact_id, JSON.stringify(fact), run.flow_id === null ? '0' : '1'],
      { stepId: fact.emitted_by_step ?? undefined, runId: fact.run_id },
    );
    if (r === -1) throw new NotFoundError('run', fact.run_id);
    if (r === 0) throw new ConflictError(`fact ${fact.fact_id} exists`);
  }

  /** Reads the whole list of the run or flow, then selects: fine for the facts of a run. */
  async listFacts(query: FactQuery): Promise<FactRecord[]> {
    checkFactQuery(query);
    const key =
      query.runId !== undefined
        ? `${this.#run(query.runId)}:facts`
        : `${this.#flow(query.flowId ?? '')}:facts`;
    const items = (await this.#batch.write(Op.list, [key], [])) as string[];
    let facts = items.map((s) => JSON.parse(s) as FactRecord);
    if (query.runId !== undefined && query.flowId !== undefined) {
      const run = await this.getRun(query.runId);
      if (run?.flow_id !== query.flowId) facts = [];
    }
    return selectFacts(facts, query);
  }

  async addRunUsage(runId: string, usage: BudgetUsage, stepId?: string): Promise<BudgetUsage> {
    const out = (await this.#write(
      Op.addUsage,
      [this.#run(runId), ledgerKey(this.#run(runId))],
      [
        String(usage.tokens_in),
        String(usage.tokens_out),
        String(usage.cost_usd),
        String(usage.wall_ms),
        ...(stepId === undefined ? [] : [stepId]),
      ],
      { runId, stepId },
    )) as string | number;
    if (typeof out !== 'string') throw new NotFoundError('run', runId);
    return JSON.parse(out) as BudgetUsage;
  }

  /**
   * A fleet replica's turn at a step, taken: resolves whether `mark` (the step's recorded
   * cancel) exists, in this turn's call of the script — only while `fence` (the step's job
   * lock and this turn's token) holds; rejects with `WorkerLostError` (`reason: "fenced"`)
   * when another holds it.
   */
  async takeTurn(fence: WriteGuard, mark: string): Promise<boolean> {
    return (await this.#batch.write(Op.take, [mark], [], undefined, [fence])) === 1;
  }

  listRuns(query: { readonly status?: readonly RunStatus[] } = {}): Promise<RunRecord[]> {
    return this.#runs.list(query.status);
  }

  async pageRuns(query: RunPageQuery): Promise<RunRecord[]> {
    let before = null;
    if (query.before !== undefined) {
      before = keyPart(query.before) ? await this.#runs.entryOf(query.before) : null;
      if (!before) throw new NotFoundError('run', query.before);
    }
    return this.#runs.page(query, before);
  }

  async releaseClientToken(stepId: string): Promise<StepRecord> {
    const r = await this.#write(Op.releaseToken, [this.#step(stepId)], [`${this.prefix}run:`]);
    if (r === -1) throw new NotFoundError('step', stepId);
    const step = await this.getStep(stepId);
    if (!step) throw new NotFoundError('step', stepId);
    return step;
  }

  async readEvents(stepId: string, afterSeq = 0, limit = Infinity): Promise<StepEvent[]> {
    if (!keyPart(stepId)) return [];
    const after = Math.max(0, Math.floor(afterSeq));
    const count = limit === Infinity ? -1 : Math.max(0, Math.floor(limit));
    // No seq is past the safe integers (and counting up to one would never end).
    if (count === 0 || !(after < Number.MAX_SAFE_INTEGER)) return [];
    const key = this.#step(stepId);
    // The client's own reads once the store's format is open (the held writes sent first);
    // the script's for a step still in format 1, which it moves in.
    const direct = this.#opened ? await readEventTexts(this.#read(), key, after, count) : null;
    const items =
      direct ??
      ((await this.#batch.write(Op.events, [key], [String(after), String(count)])) as string[]);
    return items.map((s) => JSON.parse(s) as StepEvent);
  }

  /** Every write is on the server when its call resolves: nothing is held back. */
  flush(): null {
    return null;
  }

  /** `redis:` and the prefix: stores of one fleet share its Redis. */
  identity(): Promise<string> {
    return Promise.resolve(`redis:${this.prefix}`);
  }

  async close(): Promise<void> {
    this.#batch.close();
    if (this.#owned && this.client.status !== 'end')
      await this.client.quit().catch(() => undefined);
  }
}

/** A {@link RedisRunStore}. */
export function redisStore(options: RedisStoreOptions = {}): RedisRunStore {
  return new RedisRunStore(options);
}
