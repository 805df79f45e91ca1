/**
 * @module The SQLite RunStore (better-sqlite3): durable runs, steps and event logs in one file,
 * in WAL mode, with versioned migrations — the default store of `axon serve` (API.md).
 */
import { sqliteLeases, type Leases } from '../store-leases.js';
import type Database from 'better-sqlite3';
import { ConflictError } from '../../errors/conflict-error.js';
import { NotFoundError } from '../../errors/not-found-error.js';
import type { BudgetUsage, StepEvent } from '../../streams/events.js';
import { ForwardedRecords } from '../forwarded-records.js';
import {
  addUsage,
  type FactQuery,
  type FactRecord,
  type FlowRecord,
  type RunPatch,
  type RunRecord,
  type RunStatus,
  type StepPatch,
  type StepRecord,
} from '../records.js';
import type { RunPageQuery, RunStore, StepEnd } from '../run-store.js';
import { SqliteRunPages } from './sqlite-run-pages.js';
import { SqliteAppendOnly } from './sqlite-append-only.js';
import { SqliteActors } from './sqlite-actors.js';
import { SqliteApprovals } from './sqlite-approvals.js';
import type { WalCheckpointer } from './sqlite-checkpointer.js';
import { openSqlite } from './sqlite-open.js';
import { RunRefs } from './sqlite-run-refs.js';
import { LogEnds, seqConflict, type LogEnd } from './sqlite-log-ends.js';
import { PendingRows } from './sqlite-pending.js';
import { RowPatches } from './sqlite-patches.js';
import { settle, TurnCommit } from './sqlite-turn-commit.js';
import { prepareStatements, type Statements } from './sqlite-statements.js';
import {
  eventsFromChunk,
  json,
  runFromRow,
  RUN_LAYOUT,
  runRow,
  stepFromRow,
  STEP_LAYOUT,
  stepRow,
  storedEventJson,
  type ChunkRow,
  type RunRow,
  type StepRow,
} from './sqlite-rows.js';
import { flowFromRow, type FlowRow } from './sqlite-record-rows.js';

export { migrate } from './sqlite-migrations.js';
export type { SqliteDurability, SqliteStoreOptions } from './sqlite-statements.js';
import type { SqliteDurability, SqliteStoreOptions } from './sqlite-statements.js';

/** Statuses of a step whose log is still written to: any other ends the log's cached end. */
const OPEN: ReadonlySet<string> = new Set(['running', 'queued']);

/** How long a turn that goes on writing holds its commit back, by default (ms). */
export const DEFAULT_MAX_BATCH_MS = 50;

/** The default database file of an embedded SQLite store. */
export const DEFAULT_SQLITE_PATH = './.axon/axon.db';

/**
 * A {@link RunStore} in a SQLite file. Survives restarts; several processes may share the
 * file (WAL mode: readers do not block the writer; writers wait up to `busyTimeoutMs`).
 * Records and events are stored as JSON, so inputs, outputs and event data must be plain
 * JSON data (a `Date` comes back as its ISO string).
 *
 * @example
 * const runtime = createRuntime({ store: sqliteStore('./.axon/axon.db') });
 */
export class SqliteRunStore extends ForwardedRecords implements RunStore {
  readonly path: string;
  readonly db: Database.Database;
  /** The schema version after migrating. */
  readonly schemaVersion: number;
  /**
   * What a commit survives: `'process'` (`synchronous = NORMAL`) or `'power'` (`FULL`);
   * see {@link SqliteStoreOptions.durability}.
   */
  readonly durability: SqliteDurability;
  readonly #stmt: Statements;
  readonly #runPages: SqliteRunPages;
  #closed = false;
  /** The writes of this turn of the event loop, committed together. */
  readonly #turn: TurnCommit;
  protected readonly approvals: SqliteApprovals;
  readonly #appendOnly: SqliteAppendOnly;
  protected readonly checkpoints: SqliteAppendOnly;
  /** Checkpoints the WAL in a thread of its own (file stores, unless turned off). */
  readonly #checkpointer: WalCheckpointer | null;
  /** Leases in the file, which every process opening it sees (`store-leases.ts`). */
  readonly leases: Leases;
  /** Durable agents (issue 46), in the file: `sqlite-actors.ts`. */
  readonly actors: SqliteActors;

  constructor(path: string, options: SqliteStoreOptions = {}) {
    super();
    this.path = path;
    const opened = openSqlite(path, options);
    this.db = opened.db;
    this.schemaVersion = opened.schemaVersion;
    this.durability = opened.durability;
    this.#checkpointer = opened.checkpointer;
    this.#turn = new TurnCommit(
      this.db,
      options.maxBatchMs ?? DEFAULT_MAX_BATCH_MS,
      options.onError,
      {
        begun: () => {
          this.#logEnds.began();
          this.#pending.began();
        },
        beforeCommit: () => {
          this.#pending.write();
        },
        rolledBack: () => {
          this.#pending.drop();
          this.#logEnds.clear();
          this.#runRefs.clear();
          this.actors.forget();
        },
      },
    );
    const db = this.db;
    this.#stmt = prepareStatements(db);
    this.#runPages = new SqliteRunPages(db);
    this.#pending = new PendingRows(db);
    this.#runPatches = new RowPatches(db, RUN_LAYOUT, this.#stmt.runExists);
    this.#stepPatches = new RowPatches(db, STEP_LAYOUT, this.#stmt.stepExists);
    this.#logEnds = new LogEnds(db);
    this.#runRefs = new RunRefs(this.#pending, this.#stmt.runRef);
    this.approvals = new SqliteApprovals(
      db,
      (fn) => this.#write(fn),
      (fn) => this.#read(fn),
      (runId) => this.#stmt.runExists.get(runId) !== undefined,
    );
    this.leases = sqliteLeases(
      db,
      (fn) => this.#write(fn),
      () => this.flush(),
    );
    this.actors = new SqliteActors(db, this.#pending, this.#stmt, {
      write: (fn) => this.#writeHeld(fn),
      createRun: (run) => {
        this.#holdRun(run);
      },
      createStep: (step) => {
        this.#insertStep(step);
      },
      patchStep: (stepId, patch) =>
        this.#pending.patchStep(stepId, patch) || this.#stepPatches.apply(stepId, patch),
      stepRef: (stepId) => this.#pending.stepRef(stepId) ?? this.#logEnds.get(stepId)?.ref,
    });
    this.checkpoints = this.#appendOnly = new SqliteAppendOnly(
      db,
      this.#stmt,
      (runId, fn) => this.#write(fn, runId),
      (fn) => this.#read(fn),
    );
    this.#claim = db.transaction((step: StepRecord) => {
      const token = step.client_token;
      const row =
        token === null
          ? null
          : (this.#pending.heldByToken(step.run_id, token) ??
            (this.#stmt.stepByToken.get(step.run_id, token) as StepRow | undefined));
      if (row) return { step: stepFromRow(row), created: false };
      this.#insertStep(step);
      return { step, created: true };
    });
    this.#putFlow = db.transaction((flow: FlowRecord) => {
      const row = this.#stmt.getFlowByHash.get(flow.hash) as FlowRow | undefined;
      if (row) return { flow: flowFromRow(row), created: false };
      if (this.#stmt.getFlow.get(flow.flow_id))
        throw new ConflictError(`flow ${flow.flow_id} exists`);
      this.#stmt.insertFlow.run({
        ...flow,
        ast: json(flow.ast),
        tools: json(flow.tools),
        config: json(flow.config),
        labels: json(flow.labels),
      });
      return { flow, created: true };
    });
  }

  /** New rows and events of the open transaction, written when it needs them. */
  readonly #pending: PendingRows;
  /**
   * Checks a batch of events against the logs' ends and holds them: all of it or none. A log
   * this store has not appended to lately is looked up (held rows written first).
   */
  #appendHeld(events: readonly StepEvent[]): void {
    const logs = this.#logEnds.continued(events, (stepId) => this.#lookUpLog(stepId), seqConflict);
    // All checked: now hold them (an event that cannot be JSON throws before any is held).
    const texts = events.map(storedEventJson);
    for (let i = 0; i < events.length; i++) {
      const ev = events[i] as StepEvent;
      this.#pending.addEvent(logs.get(ev.step_id)?.ref ?? 0, ev.seq, texts[i] as string);
    }
    this.#logEnds.settle(logs);
  }

  /** A step's log from the file: its rowid and last seq (held rows written first). */
  #lookUpLog(stepId: string): LogEnd {
    this.#writeHeldRows();
    const log = this.#stmt.stepLog.get(stepId) as LogEnd | undefined;
    if (!log) throw new NotFoundError('step', stepId);
    return log;
  }

  /** Where the logs this store appended to end (see `sqlite-log-ends.ts`). */
  readonly #logEnds: LogEnds;
  /** Runs' rowids (see `sqlite-run-refs.ts`). */
  readonly #runRefs: RunRefs;
  /** Find-or-create of a step by client token, under the write lock (IMMEDIATE). */
  readonly #claim: Database.Transaction<
    (step: StepRecord) => { step: StepRecord; created: boolean }
  >;
  readonly #putFlow: Database.Transaction<
    (flow: FlowRecord) => { flow: FlowRecord; created: boolean }
  >;
  /** Updates of written runs and steps. */
  readonly #runPatches: RowPatches;
  readonly #stepPatches: RowPatches;

  /** Holds a new step; refuses a taken id (Conflict) and an unknown run (NotFound). */
  #insertStep(step: StepRecord): void {
    if (
      this.#pending.stepRef(step.step_id) !== undefined ||
      this.#stmt.stepExists.get(step.step_id)
    ) {
      throw new ConflictError(`step ${step.step_id} exists`);
    }
    const runRef = this.#runRefs.of(step.run_id);
    if (runRef === undefined) throw new NotFoundError('run', step.run_id);
    const ref = this.#pending.newStepRef();
    this.#pending.addStep(stepRow(step, ref, runRef));
    // A new step's log is empty: its first append needs no look at the table.
    this.#logEnds.set(step.step_id, { ref, seq: 0 });
  }

  createRun(run: RunRecord): Promise<void> {
    return this.#writeHeld(() => {
      this.#holdRun(run);
    });
  }

  /** Holds a new run's row; refuses a taken id (Conflict). */
  #holdRun(run: RunRecord): void {
    if (this.#pending.runRef(run.run_id) !== undefined || this.#stmt.runExists.get(run.run_id)) {
      throw new ConflictError(`run ${run.run_id} exists`);
    }
    this.#pending.addRun(runRow(run, this.#pending.newRunRef()));
  }

  getRun(runId: string): Promise<RunRecord | null> {
    // A held run is read as held (writing it now would make its next patch an update); one
    // not held is in the table, whatever else is held.
    return settle(() => {
      const row =
        this.#pending.heldRun(runId) ?? (this.#stmt.getRun.get(runId) as RunRow | undefined);
      return row ? runFromRow(row) : null;
    });
  }

  updateRun(runId: string, patch: RunPatch): Promise<void> {
    return this.#writeHeld(() => {
      if (this.#pending.patchRun(runId, patch)) return;
      if (!this.#runPatches.apply(runId, patch)) throw new NotFoundError('run', runId);
    });
  }

  createStep(step: StepRecord): Promise<void> {
    return this.#writeHeld(() => {
      this.#insertStep(step);
    });
  }

  claimStep(step: StepRecord): Promise<{ step: StepRecord; created: boolean }> {
    // The token is looked for among the held steps and in the table: the held rows stay held
    // (written now, the step's end would be an insert and an update).
    return this.#writeHeld(() => this.#claim(step));
  }

  putFlow(flow: FlowRecord): Promise<{ flow: FlowRecord; created: boolean }> {
    return this.#write(() => this.#putFlow(flow));
  }

  getFlow(flowId: string): Promise<FlowRecord | null> {
    return this.#read(() => {
      const row = this.#stmt.getFlow.get(flowId) as FlowRow | undefined;
      return row ? flowFromRow(row) : null;
    });
  }

  listFlows(): Promise<FlowRecord[]> {
    return this.#read(() => (this.#stmt.listFlows.all() as FlowRow[]).map(flowFromRow));
  }

  getFlowByHash(hash: string): Promise<FlowRecord | null> {
    return this.#read(() => {
      const row = this.#stmt.getFlowByHash.get(hash) as FlowRow | undefined;
      return row ? flowFromRow(row) : null;
    });
  }

  appendFact(fact: FactRecord): Promise<void> {
    return this.#appendOnly.appendFact(fact);
  }

  listFacts(query: FactQuery): Promise<FactRecord[]> {
    return this.#appendOnly.listFacts(query);
  }

  addRunUsage(runId: string, usage: BudgetUsage): Promise<BudgetUsage> {
    // Read and written under the write lock, so concurrent adders (other processes
    // included) each add theirs.
    return this.#writeHeld(() => this.#runUsage(runId, usage));
  }

  /**
   * Adds `usage` to a run's: a held run's row as held (no write of the held rows), else the
   * table's. `NotFoundError` for an unknown run.
   */
  #runUsage(runId: string, usage: BudgetUsage): BudgetUsage {
    const held = this.#pending.heldRun(runId);
    if (held) {
      const total = addUsage(runFromRow(held).budget_usage, usage);
      this.#pending.patchRun(runId, { budget_usage: total });
      return total;
    }
    // Added in the statement (the usage is columns): the run is not read.
    const total = this.#stmt.addRunUsage.get(
      usage.tokens_in,
      usage.tokens_out,
      usage.cost_usd,
      usage.wall_ms,
      runId,
    ) as BudgetUsage | undefined;
    if (!total) throw new NotFoundError('run', runId);
    return total;
  }

  listRuns(query: { readonly status?: readonly RunStatus[] } = {}): Promise<RunRecord[]> {
    return this.#read(() => this.#runPages.list(query.status).map(runFromRow));
  }

  pageRuns(query: RunPageQuery): Promise<RunRecord[]> {
    return this.#read(() => this.#runPages.page(query).map(runFromRow));
  }

  releaseClientToken(stepId: string): Promise<StepRecord> {
    return this.#write(() => {
      if (this.#stmt.releaseToken.run(stepId).changes === 0)
        throw new NotFoundError('step', stepId);
      return stepFromRow(this.#stmt.getStep.get(stepId) as StepRow);
    });
  }

  getStep(stepId: string): Promise<StepRecord | null> {
    // As getRun: a held step as held, else from the table (its run's row, joined, is written
    // before its own: a step in the table has its run there).
    return settle(() => {
      const row =
        this.#pending.heldStep(stepId) ?? (this.#stmt.getStep.get(stepId) as StepRow | undefined);
      return row ? stepFromRow(row) : null;
    });
  }

  updateStep(stepId: string, patch: StepPatch): Promise<void> {
    return this.#writeHeld(() => {
      if (!this.#pending.patchStep(stepId, patch) && !this.#stepPatches.apply(stepId, patch)) {
        throw new NotFoundError('step', stepId);
      }
      // A finished step's log is complete: no more appends to remember its end for.
      if (patch.status !== undefined && !OPEN.has(patch.status)) {
        this.#logEnds.delete(stepId);
      }
    });
  }

  listSteps(runId: string): Promise<StepRecord[]> {
    return this.#read(() => (this.#stmt.listSteps.all(runId) as StepRow[]).map(stepFromRow));
  }

  appendEvents(events: readonly StepEvent[]): Promise<void> {
    return this.#writeHeld(() => {
      this.#appendHeld(events);
    });
  }

  endStep(end: StepEnd): Promise<void> {
    // In the turn's transaction (one commit for the turn); the append is checked before
    // anything of the end is held, so a refused one writes nothing.
    const usage = end.runUsage;
    return this.#writeHeld(() => {
      // Checked before anything is held: an unknown run writes nothing.
      if (usage !== undefined && this.#runRefs.of(end.runId) === undefined) {
        throw new NotFoundError('run', end.runId);
      }
      if (end.actor) this.actors.checkEnd(end.actor);
      this.#appendHeld(end.events);
      // A step made in this turn is still held: its row goes in ended, with no update.
      if (
        !this.#pending.patchStep(end.stepId, end.patch) &&
        !this.#stepPatches.apply(end.stepId, end.patch)
      ) {
        throw new NotFoundError('step', end.stepId);
      }
      if (usage !== undefined) this.#runUsage(end.runId, usage);
      // Before its log's end is forgotten: the message's mailbox row is found by its rowid.
      if (end.actor) this.actors.applyEnd(end.actor, end.stepId);
      if (end.patch.status !== undefined && !OPEN.has(end.patch.status)) {
        this.#logEnds.delete(end.stepId);
      }
    });
  }

  readEvents(stepId: string, afterSeq = 0, limit = Infinity): Promise<StepEvent[]> {
    return this.#read(() => {
      const events: StepEvent[] = [];
      if (limit <= 0) return events;
      // Chunk by chunk, only as many as the limit needs.
      const params = { step: stepId, after: afterSeq };
      for (const chunk of this.#stmt.readChunks.iterate(params) as Iterable<ChunkRow>) {
        eventsFromChunk(stepId, chunk, afterSeq, events);
        if (events.length >= limit) {
          events.length = limit;
          break;
        }
      }
      return events;
    });
  }

  /**
   * A write in the turn's transaction, after the held rows (it may need them). `beside`: the
   * row refers to that run only, so the held rows stay held unless that run is among them.
   */
  #write<T>(fn: () => T, beside?: string): Promise<T> {
    return this.#turn.write(() => {
      const held = beside === undefined || this.#pending.runRef(beside) !== undefined;
      if (held) this.#writeHeldRows();
      return fn();
    });
  }

  /** A write that holds its rows or patches held ones (see `sqlite-pending.ts`). */
  #writeHeld<T>(fn: () => T): Promise<T> {
    return this.#turn.write(fn);
  }

  /** A read, after the held rows: this process reads its own writes. */
  #read<T>(fn: () => T): Promise<T> {
    return settle(() => {
      this.#writeHeldRows();
      return fn();
    });
  }

  /** Writes the held rows now; if that fails, the transaction is lost (as a failed commit). */
  #writeHeldRows(): void {
    if (this.#pending.empty) return;
    try {
      this.#pending.write();
    } catch (err) {
      throw this.#turn.abort(err);
    }
  }

  /**
   * Resolves when the writes held back so far are committed, at the end of this turn of the
   * event loop: every caller of the turn shares one commit. `null` when none are held back.
   */
  flush(): Promise<void> | null {
    return this.#turn.flush();
  }

  close(): Promise<void> {
    if (this.#closed) return this.#turn.closed();
    this.#closed = true;
    const done = this.#turn.close();
    if (this.db.open) this.db.close();
    if (!this.#checkpointer) return done;
    // Both at once: a failed commit is not left unheard while the thread stops.
    return Promise.all([done, this.#checkpointer.close()]).then(() => undefined);
  }
}

/** A {@link SqliteRunStore} on the file at `path` (created, with its folder, if missing). */
export function sqliteStore(
  path: string = DEFAULT_SQLITE_PATH,
  options: SqliteStoreOptions = {},
): SqliteRunStore {
  return new SqliteRunStore(path, options);
}
