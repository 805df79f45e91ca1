/**
 * @module The PostgreSQL RunStore (issue 32): runs, steps, logs, flows, facts, checkpoints,
 * recordings and approvals in tables of one schema, each record as JSON beside the columns
 * queried (status, user, entry, client token), through a `pg` pool. Every multi-row write is
 * one transaction; a step's log grows only by the next `seq` (the step's row holds its last
 * seq, moved by the same statement that checks it), so concurrent writers of one log cannot
 * interleave.
 * Migrations (`postgres-migrations.ts`) are versioned and applied at start; a schema newer
 * than this code is refused.
 *
 * The runs and steps writes of a turn — every run's — are one call of the schema's `apply`
 * function: one round trip, one commit (`postgres-batch.ts`, `postgres-functions.ts`); the
 * rest, and the reads of lists, are statements of their own once the batches asked before
 * them have committed. A step is one row (schema version 5, issue 47): its record, and its log
 * — the events of its first commit in the row, each later commit's one chunk beside it. The
 * runs and steps this store creates are held back until the batch (`postgres-held-rows.ts`): a
 * run's or a step's writes before it are one insert of its final row; those writes resolve at
 * once and are durable when `flush()` resolves, as the SQLite store's.
 *
 * A fleet worker's store fences its writes with its turn at the step they are of
 * (`PostgresStoreOptions.fence`, {@link PostgresRunStore.takeTurn}): the check runs in the
 * same transaction, just before the write, and holds the turn's row until it commits. Budget
 * reservations that every process sharing the schema sees are {@link PostgresRunStore.budgets}.
 *
 * Durable agents (issue 46) are {@link PostgresRunStore.actors} (`postgres-actors.ts`); a
 * message's end (`StepEnd.actor`) is its step end's operation, so one transaction.
 */
import pg from 'pg';
import { ConflictError } from '../../errors/conflict-error.js';
import { NotFoundError } from '../../errors/not-found-error.js';
import type { BudgetUsage, StepEvent } from '../../streams/events.js';
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
import type { BudgetReservations } from '../budget-reservations.js';
import { PostgresActors } from './postgres-actors.js';
import { PostgresBatcher, turnLost, type BatchOp } from './postgres-batch.js';
import { chunkEvents, PostgresHeldRows } from './postgres-held-rows.js';
import {
  actorEnd,
  holderArgs,
  holderTarget,
  runPatch,
  seqRun,
  stepPatch,
} from './postgres-op-args.js';
import { PostgresRunRecords } from './postgres-run-records.js';
import { postgresLeases } from './postgres-leases.js';
import type { Leases } from '../store-leases.js';
import { migrate, SCHEMA_NAME, type Query } from './postgres-migrations.js';
import type { TurnFence, WriteTarget } from '../write-target.js';

export { POSTGRES_SCHEMA_VERSION } from './postgres-migrations.js';

/** Options of {@link postgresStore}. */
export interface PostgresStoreOptions {
  /** A `postgres://` URL, or a pool of your own (not closed by the store). */
  readonly connection: string | pg.Pool;
  /** The schema holding the store's tables, made if missing; default `axon`. */
  readonly schema?: string;
  /**
   * A fleet worker's: the turn a write must still hold, asked for with what the write is
   * about (`null` for none). A write whose turn is over — another replica took the step
   * ({@link PostgresRunStore.takeTurn}) — is refused with `WorkerLostError` (`details.reason:
   * "fenced"`) and changes nothing.
   */
  readonly fence?: (target: WriteTarget) => TurnFence | null;
}

/** How long a connection of the store's own pool may take to open, ms. */
const CONNECT_TIMEOUT_MS = 10_000;

const STORE_OPTIONS: ReadonlySet<string> = new Set(['connection', 'schema', 'fence']);

/** A {@link RunStore} in PostgreSQL; see the module. Use {@link postgresStore}. */
export class PostgresRunStore extends ForwardedRecords implements RunStore {
  readonly #pool: pg.Pool;
  readonly #owned: boolean;
  readonly #s: string;
  readonly #ready: Promise<void>;
  /** The runs and steps operations, gathered into one call per turn (`postgres-batch.ts`). */
  readonly #batch: PostgresBatcher;
  /** The rows held for the next batch; `null` for a fenced store (every write waits). */
  readonly #held: PostgresHeldRows | null;
  /** Whether the migrations are applied: until then nothing is held (a failure shows at once). */
  #migrated = false;
  /** Leases in the schema, which every process opening it sees (`postgres-leases.ts`). */
  readonly leases: Leases;
  /** Reservations against runs' budgets that every process on the schema sees. */
  readonly budgets: BudgetReservations;
  /** Durable agents' records (issue 46), in the schema: `postgres-actors.ts`. */
  readonly actors: PostgresActors;
  readonly #fence: ((target: WriteTarget) => TurnFence | null) | null;
  #identity: Promise<string> | undefined;
  /** Facts, checkpoints, recordings and approvals (`postgres-run-records.ts`). */
  readonly #runRecords: PostgresRunRecords;
  protected readonly checkpoints: PostgresRunRecords;
  protected readonly approvals: PostgresRunRecords;

  constructor(options: PostgresStoreOptions) {
    super();
    const unknown = Object.keys(options).filter((k) => !STORE_OPTIONS.has(k));
    if (unknown.length > 0) {
      throw new TypeError(`postgresStore: no option ${unknown.join(', ')}`);
    }
    this.#fence = options.fence ?? null;
    const schema = options.schema ?? 'axon';
    if (!SCHEMA_NAME.test(schema)) {
      throw new RangeError(
        `postgresStore: schema must match ${SCHEMA_NAME.source}, got ${JSON.stringify(schema)}`,
      );
    }
    this.#s = `"${schema}"`;
    this.#owned = typeof options.connection === 'string';
    this.#pool =
      typeof options.connection === 'string'
        ? new pg.Pool({
            connectionString: options.connection,
            max: 8,
            // A server that does not answer is an error, not a wait for ever.
            connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
          })
        : options.connection;
    if (this.#owned) this.#pool.on('error', () => undefined);
    this.#ready = this.#migrate(schema);
    this.#ready.then(
      () => (this.#migrated = true),
      () => undefined,
    );
    this.#held = this.#fence ? null : new PostgresHeldRows();
    this.#batch = new PostgresBatcher(this.#pool, this.#s, this.#ready, this.#held);
    this.leases = postgresLeases((text, values) => this.#q(text, values), this.#s);
    this.checkpoints =
      this.approvals =
      this.#runRecords =
        new PostgresRunRecords({
          s: this.#s,
          tx: (body) => this.#tx(body),
          q: (text, values) => this.#q(text, values),
          guard: (q, target) => this.#guard(q, target),
        });
    this.actors = new PostgresActors({
      s: this.#s,
      run: (op) => this.#batch.run(op),
      q: (text, values) => this.#q(text, values),
    });
    this.budgets = {
      reserve: (holder, draw, limits) =>
        this.#write({ op: 'reserve', ...holderArgs(holder), draw, limits }, holderTarget(holder)),
      settle: (holder, delta) =>
        this.#write({ op: 'settle', ...holderArgs(holder), draw: delta }, holderTarget(holder)),
    };
  }

  /**
   * Resolves once the schema is ready (its migrations applied); rejects when PostgreSQL
   * cannot be reached or the schema is newer than this code.
   */
  ready(): Promise<void> {
    return this.#ready;
  }

  /** `postgres:` and the id the schema was given when it was made (its `meta`). */
  async identity(): Promise<string> {
    this.#identity ??= this.#q(`SELECT value FROM ${this.#s}.meta WHERE key = 'store_id'`).then(
      ({ rows }) => `postgres:${(rows[0] as { value: string }).value}`,
    );
    return this.#identity;
  }

  /**
   * The held rows, when this write may be held; `null` when it must ask the server. Throws the
   * failure of held rows that did not commit: the store takes no more writes then.
   */
  #holder(): PostgresHeldRows | null {
    const failure = this.#batch.failure;
    if (failure) throw failure;
    return this.#migrated ? this.#held : null;
  }

  /** A write was held: resolves at once, or once it commits when a turn holds too many. */
  async #wasHeld(): Promise<void> {
    const wait = this.#batch.held();
    if (wait) await wait;
  }

  /** `op` in the next batch, under the fence of `target`'s turn (if the store has fences). */
  async #write<T = unknown>(op: BatchOp, target?: WriteTarget): Promise<T> {
    const turn = target && this.#fence ? this.#fence(target) : null;
    return this.#batch.run<T>(turn ? { ...op, fence: { id: turn.stepId, token: turn.token } } : op);
  }

  /**
   * A fleet replica's turn at a step, taken: `turn` is the count of the step's job's starts
   * (BullMQ's, which grows with each take of the job), `token` the lock's token it came with.
   * From its commit on, every write fenced with an earlier turn of the step is refused.
   * Rejects with `WorkerLostError` (`reason: "fenced"`) when a later turn was taken already.
   */
  async takeTurn(stepId: string, turn: number, token: string): Promise<void> {
    await this.#batch.run({ op: 'take_turn', id: stepId, turn, token });
  }

  /**
   * In a transaction of a statement outside the batches: refuses it (`WorkerLostError`) when
   * the turn `target`'s write must hold is over; the turn's row stays locked to the commit.
   */
  async #guard(q: Query, target: WriteTarget): Promise<void> {
    const turn = this.#fence?.(target);
    if (!turn) return;
    const { rowCount } = await q(
      `SELECT 1 FROM ${this.#s}.turns WHERE step_id = $1 AND token = $2 FOR SHARE`,
      [turn.stepId, turn.token],
    );
    if (rowCount === 0) throw turnLost(turn.stepId);
  }

  /** Applies the migrations this schema lacks (see `postgres-migrations.ts`). */
  async #migrate(schema: string): Promise<void> {
    await this.#tx((q) => migrate(q, schema, this.#s), false);
  }

  /** `body` in one transaction (after the migrations, unless `ready` is false). */
  async #tx<T>(body: (q: Query) => Promise<T>, ready = true): Promise<T> {
    if (ready) await this.#settled();
    const client = await this.#pool.connect();
    try {
      await client.query('BEGIN');
      const result = await body((text, values) => client.query(text, values as unknown[]));
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /**
   * Once the migrations are applied and every batched operation asked before has committed:
   * a statement outside the batches sees what the caller wrote before it.
   */
  async #settled(): Promise<void> {
    await this.#ready;
    if (this.#batch.busy) await this.#batch.run({ op: 'barrier' });
  }

  async #q(text: string, values?: readonly unknown[]): Promise<pg.QueryResult> {
    await this.#settled();
    return this.#pool.query(text, values as unknown[]);
  }

  async createRun(run: RunRecord): Promise<void> {
    const held = this.#holder();
    if (held?.createRun(run)) return this.#wasHeld();
    await this.#batch.run({ op: 'create_run', run });
    this.#held?.knowRun(run.run_id);
  }

  async getRun(runId: string): Promise<RunRecord | null> {
    return this.#batch.run({ op: 'get_run', id: runId });
  }

  async updateRun(runId: string, patch: RunPatch): Promise<void> {
    if (this.#holder()?.updateRun(runId, patch)) return this.#wasHeld();
    await this.#write({ op: 'update_run', id: runId, patch: runPatch(patch) }, { runId });
  }

  async createStep(step: StepRecord): Promise<void> {
    if (this.#holder()?.createStep(step)) return this.#wasHeld();
    const made = await this.#write<{ created: boolean }>(
      { op: 'create_step', step, claim: false },
      { stepId: step.step_id, parentStepId: step.parent_step_id, runId: step.run_id },
    );
    if (made.created) this.#held?.knowStep(step);
  }

  async claimStep(step: StepRecord): Promise<{ step: StepRecord; created: boolean }> {
    // A step without a client token is always created: as `createStep`.
    if (step.client_token === null && this.#holder()?.createStep(step)) {
      await this.#wasHeld();
      return { step, created: true };
    }
    const found = await this.#batch.run<{ step?: StepRecord }>({
      op: 'create_step',
      step,
      claim: true,
    });
    if (found.step) return { step: found.step, created: false };
    this.#held?.knowStep(step);
    return { step, created: true };
  }

  async getStep(stepId: string): Promise<StepRecord | null> {
    return this.#batch.run({ op: 'get_step', id: stepId });
  }

  async updateStep(stepId: string, patch: StepPatch): Promise<void> {
    if (this.#holder()?.updateStep(stepId, patch)) return this.#wasHeld();
    await this.#write({ op: 'update_step', id: stepId, ...stepPatch(patch) }, { stepId });
  }

  async releaseClientToken(stepId: string): Promise<StepRecord> {
    this.#holder()?.forgetStep(stepId);
    return this.#batch.run({ op: 'release_token', id: stepId });
  }

  async listSteps(runId: string): Promise<StepRecord[]> {
    const { rows } = await this.#q(
      `SELECT record FROM ${this.#s}.steps WHERE run_id = $1 ORDER BY seq`,
      [runId],
    );
    return rows.map((r) => (r as { record: StepRecord }).record);
  }

  async listRuns(query: { readonly status?: readonly RunStatus[] } = {}): Promise<RunRecord[]> {
    const { rows } = await this.#q(
      `SELECT record FROM ${this.#s}.runs WHERE $1::text[] IS NULL OR status = ANY($1) ORDER BY seq`,
      [query.status ?? null],
    );
    return rows.map((r) => (r as { record: RunRecord }).record);
  }

  async pageRuns(query: RunPageQuery): Promise<RunRecord[]> {
    let before: string | null = null;
    if (query.before !== undefined) {
      const { rows } = await this.#q(`SELECT seq FROM ${this.#s}.runs WHERE run_id = $1`, [
        query.before,
      ]);
      before = (rows[0] as { seq?: string } | undefined)?.seq ?? null;
      if (before === null) throw new NotFoundError('run', query.before);
    }
    const { rows } = await this.#q(
      `SELECT record FROM ${this.#s}.runs
       WHERE ($1::text[] IS NULL OR status = ANY($1))
         AND (NOT $2::boolean OR user_id IS NOT DISTINCT FROM $3)
         AND ($4::text IS NULL OR entry = $4)
         AND ($5::bigint IS NULL OR seq < $5)
       ORDER BY seq DESC LIMIT $6`,
      [
        query.status ?? null,
        query.userId !== undefined,
        query.userId ?? null,
        query.entry ?? null,
        before,
        query.limit,
      ],
    );
    return rows.map((r) => (r as { record: RunRecord }).record);
  }

  async appendEvents(events: readonly StepEvent[]): Promise<void> {
    if (events.length === 0) return;
    const held = this.#holder();
    if (held?.appendEvents(events)) return this.#wasHeld();
    // Written by the server: the store no longer knows where these logs end.
    for (const e of events) held?.forgetStep(e.step_id);
    const run = seqRun(events);
    await this.#write(
      run
        ? { op: 'append_run', id: run.stepId, first: run.first, last: run.last, events }
        : { op: 'append', events },
      { stepId: (events[0] as StepEvent).step_id },
    );
  }

  async endStep(end: StepEnd): Promise<void> {
    const held = this.#holder();
    if (held?.endStep(end)) return this.#wasHeld();
    held?.forgetStep(end.stepId);
    const run = end.events.length === 0 ? null : seqRun(end.events);
    const own = end.events.length === 0 || run?.stepId === end.stepId;
    const via = own ? 'end_run' : 'end_step';
    await this.#write(
      {
        // A message's end: the step's, by `via`, with its actor's, in the same function.
        ...(end.actor ? { op: 'end_message', via, actor: actorEnd(end.actor) } : { op: via }),
        ...(own && run ? { first: run.first, last: run.last } : {}),
        id: end.stepId,
        run_id: end.runId,
        events: end.events,
        ...stepPatch(end.patch),
        usage: end.runUsage,
      },
      { stepId: end.stepId, runId: end.runId },
    );
  }

  async readEvents(stepId: string, afterSeq = 0, limit = Infinity): Promise<StepEvent[]> {
    const after = Math.max(0, afterSeq);
    const upTo = limit === Infinity ? null : after + Math.max(0, limit);
    if (upTo === after) return [];
    // The events of the step's first commit in its row (from seq 1), then its chunks.
    const { rows } = await this.#q(
      `SELECT 1 AS first_seq, log AS events FROM ${this.#s}.steps
         WHERE step_id = $1 AND log IS NOT NULL
       UNION ALL
       SELECT first_seq, events FROM ${this.#s}.chunks
         WHERE step_id = $1 AND last_seq > $2 AND ($3::int IS NULL OR first_seq <= $3)
       ORDER BY first_seq`,
      [stepId, after, upTo],
    );
    const events: StepEvent[] = [];
    for (const row of rows as { first_seq: number; events: Record<string, unknown>[] }[]) {
      chunkEvents(stepId, row.first_seq, row.events, after, events);
    }
    return upTo === null ? events : events.slice(0, upTo - after);
  }

  async putFlow(flow: FlowRecord): Promise<{ flow: FlowRecord; created: boolean }> {
    for (;;) {
      const found = await this.getFlowByHash(flow.hash);
      if (found) return { flow: found, created: false };
      const { rowCount } = await this.#q(
        `INSERT INTO ${this.#s}.flows (flow_id, hash, record) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
        [flow.flow_id, flow.hash, JSON.stringify(flow)],
      );
      if (rowCount !== 0) return { flow, created: true };
      if (await this.getFlow(flow.flow_id)) throw new ConflictError(`flow ${flow.flow_id} exists`);
    }
  }

  async getFlow(flowId: string): Promise<FlowRecord | null> {
    const { rows } = await this.#q(`SELECT record FROM ${this.#s}.flows WHERE flow_id = $1`, [
      flowId,
    ]);
    return (rows[0] as { record: FlowRecord } | undefined)?.record ?? null;
  }

  async listFlows(): Promise<FlowRecord[]> {
    // The flows table has no sequence: by creation time, then id.
    const { rows } = await this.#q(`SELECT record FROM ${this.#s}.flows`);
    const flows = rows.map((r) => (r as { record: FlowRecord }).record);
    return flows.sort(
      (a, b) => a.created_at.localeCompare(b.created_at) || a.flow_id.localeCompare(b.flow_id),
    );
  }

  async getFlowByHash(hash: string): Promise<FlowRecord | null> {
    const { rows } = await this.#q(`SELECT record FROM ${this.#s}.flows WHERE hash = $1`, [hash]);
    return (rows[0] as { record: FlowRecord } | undefined)?.record ?? null;
  }

  appendFact(fact: FactRecord): Promise<void> {
    return this.#runRecords.appendFact(fact);
  }

  listFacts(query: FactQuery): Promise<FactRecord[]> {
    return this.#runRecords.listFacts(query);
  }

  async addRunUsage(runId: string, usage: BudgetUsage, stepId?: string): Promise<BudgetUsage> {
    return this.#write(
      { op: 'add_run_usage', id: runId, usage, ...(stepId === undefined ? {} : { step: stepId }) },
      { runId, stepId },
    );
  }

  /**
   * Resolves once every write so far has committed (held ones included); rejects when held
   * writes could not commit. `null` when none waits.
   */
  flush(): Promise<void> | null {
    return this.#batch.flush();
  }

  async close(): Promise<void> {
    // What was asked before the close is written (or refused) before the pool ends.
    await this.#settled().catch(() => undefined);
    if (this.#owned) await this.#pool.end();
  }
}

/**
 * The PostgreSQL store.
 *
 * @example
 * const runtime = createRuntime({ store: postgresStore({ connection: 'postgres://localhost/axon' }) });
 */
export function postgresStore(options: PostgresStoreOptions): PostgresRunStore {
  return new PostgresRunStore(options);
}
