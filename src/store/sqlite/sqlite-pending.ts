/**
 * @module Rows the SQLite store holds back inside its open transaction: new runs, new steps
 * and appended events are kept as the values of their inserts, and written when the
 * transaction needs them — before any read or any other write, and before the commit.
 *
 * Why: a run's row and its steps' rows are inserted and then updated (status, output, usage)
 * within the same few microseconds, usually in the same turn of the event loop. Held back,
 * an insert and its updates become one insert of the final row, a turn's rows of each table
 * one multi-row insert, and a turn's events of one step one chunk of its log (see
 * `sqlite-rows.ts`). Nothing changes for a reader: this process reads its own writes (a
 * read of a run or a step by id reads its held row; every other read writes the held rows
 * first), and other processes see only commits, which always include them.
 *
 * The checks a statement would make (a taken id, an unknown run, a `seq` out of order) are
 * made by the store when the write is called, under the transaction's write lock, so a held
 * row never fails when it is written; if one does anyway (a full disk), the store treats it
 * as a failed commit.
 */
import type Database from 'better-sqlite3';
import {
  CHUNK_COLUMNS,
  fieldJson,
  heldRunRow,
  heldStepRow,
  recordText,
  RUN_LAYOUT,
  splitPatch,
  STEP_LAYOUT,
  type RowLayout,
  type RowParts,
  type RunRow,
  type StepRow,
} from './sqlite-rows.js';

/** One parameter of an insert. */
type Value = string | number | null;

/** Rows per multi-row insert (at most 64 × 4 parameters, far below SQLite's limit). */
const ROWS_PER_INSERT = 64;

/** `INSERT INTO table (columns) VALUES (?, …), …` for `rows` rows. */
function insertSql(table: string, columns: readonly string[], rows: number): string {
  const row = `(${columns.map(() => '?').join(', ')})`;
  return `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${Array(rows).fill(row).join(', ')}`;
}

/** Inserts of one table, by number of rows (1 … {@link ROWS_PER_INSERT}), prepared when first needed. */
class MultiInsert {
  readonly #db: Database.Database;
  readonly #table: string;
  readonly #columns: readonly string[];
  readonly #byRows = new Map<number, Database.Statement>();

  constructor(db: Database.Database, table: string, columns: readonly string[]) {
    this.#db = db;
    this.#table = table;
    this.#columns = columns;
  }

  /** Inserts the rows whose parameters are `flat` (row after row), {@link ROWS_PER_INSERT} at a time. */
  run(flat: readonly unknown[]): void {
    const step = ROWS_PER_INSERT * this.#columns.length;
    for (let at = 0; at < flat.length; at += step) {
      const rows = flat.length <= step ? flat : flat.slice(at, at + step);
      this.#statement(rows.length / this.#columns.length).run(rows);
    }
  }

  #statement(rows: number): Database.Statement {
    let statement = this.#byRows.get(rows);
    if (!statement) {
      statement = this.#db.prepare(insertSql(this.#table, this.#columns, rows));
      this.#byRows.set(rows, statement);
    }
    return statement;
  }
}

/** The held rows of the runs or the steps table, by id, in the order they were added. */
class HeldRecords {
  readonly #layout: RowLayout;
  #rows = new Map<string, RowParts>();

  constructor(layout: RowLayout) {
    this.#layout = layout;
  }

  get size(): number {
    return this.#rows.size;
  }

  /** The rowid given to a held row (its first column); undefined when it is not held. */
  ref(id: string): number | undefined {
    return this.#rows.get(id)?.columns[0] as number | undefined;
  }

  add(row: RowParts): void {
    this.#rows.set(row.id, row);
  }

  /** A held row; undefined when it is not held. */
  get(id: string): RowParts | undefined {
    return this.#rows.get(id);
  }

  /** The first held row `test` holds for (a scan: a turn holds tens of rows). */
  find(test: (row: RowParts) => boolean): RowParts | undefined {
    for (const row of this.#rows.values()) if (test(row)) return row;
    return undefined;
  }

  /**
   * Sets the patched fields of a held row as an update would (all of them or, for a field
   * an update cannot set, none); false when the row is not held.
   */
  patch(id: string, patch: object): boolean {
    const row = this.#rows.get(id);
    if (!row) return false;
    const { columns, fields } = splitPatch(this.#layout, patch);
    for (const [name, value] of columns) {
      row.columns[this.#layout.columns.indexOf(name)] = value as Value;
    }
    for (const [at, name, value] of fields) row.changing[at] = fieldJson(name, value);
    return true;
  }

  /** Hands over the held rows as their inserts' parameters, row after row, and forgets them. */
  take(): Value[] {
    const flat: Value[] = [];
    for (const row of this.#rows.values()) {
      for (const v of row.columns) flat.push(v);
      flat.push(recordText(row));
    }
    this.#rows = new Map();
    return flat;
  }

  /**
   * As {@link take}, each row followed by `after(row)`'s values (a step's first log chunk,
   * which goes in its row).
   */
  takeWith(after: (row: RowParts) => readonly [Value, Value]): Value[] {
    const flat: Value[] = [];
    for (const row of this.#rows.values()) {
      for (const v of row.columns) flat.push(v);
      flat.push(recordText(row));
      const [a, b] = after(row);
      flat.push(a, b);
    }
    this.#rows = new Map();
    return flat;
  }
}

/** Events per chunk of a log at most, and JSON characters (past it, a chunk is not grown). */
const CHUNK_EVENTS = 64;
const CHUNK_CHARS = 3_500;

/** A chunk being made: consecutive events of one step (by its rowid). */
interface OpenChunk {
  readonly stepRef: number;
  readonly firstSeq: number;
  lastSeq: number;
  readonly events: string[];
  chars: number;
  /** Written in its step's row (its first chunk, held with the row), not in `event_chunks`. */
  inline: boolean;
}

/** The held events, as chunks of their steps' logs. */
class HeldChunks {
  readonly #open = new Map<number, OpenChunk>();
  /** Chunks that are full. */
  #closed: OpenChunk[] = [];
  /** Each step's first chunk (`seq` 1 on), by step rowid. */
  readonly #firsts = new Map<number, OpenChunk>();

  get empty(): boolean {
    return this.#open.size === 0 && this.#closed.length === 0;
  }

  /**
   * Holds one event (`json` as `storedEventJson` made it). The store holds only events that
   * continue their step's log, so an event goes on the step's open chunk while it has room.
   */
  add(stepRef: number, seq: number, json: string): void {
    const chunk = this.#open.get(stepRef);
    if (chunk && chunk.events.length < CHUNK_EVENTS && chunk.chars + json.length <= CHUNK_CHARS) {
      chunk.events.push(json);
      chunk.lastSeq = seq;
      chunk.chars += json.length;
      return;
    }
    if (chunk) this.#closed.push(chunk);
    const made: OpenChunk = {
      stepRef,
      firstSeq: seq,
      lastSeq: seq,
      events: [json],
      chars: json.length,
      inline: false,
    };
    this.#open.set(stepRef, made);
    if (seq === 1) this.#firsts.set(stepRef, made);
  }

  /**
   * The first chunk of step `stepRef`'s log, as its row's `log` and `log_last` (null and 0
   * when none is held); it is then not written to `event_chunks`.
   */
  inlineFirst(stepRef: number): readonly [Value, Value] {
    const first = this.#firsts.get(stepRef);
    if (!first) return [null, 0];
    first.inline = true;
    return [`[${first.events.join(',')}]`, first.lastSeq];
  }

  /** Hands over every held chunk as its insert's parameters and forgets them. */
  take(): Value[] {
    const chunks = this.#closed;
    for (const chunk of this.#open.values()) chunks.push(chunk);
    this.#open.clear();
    this.#closed = [];
    this.#firsts.clear();
    const flat: Value[] = [];
    for (const c of chunks) {
      if (!c.inline) flat.push(c.stepRef, c.lastSeq, c.firstSeq, `[${c.events.join(',')}]`);
    }
    return flat;
  }
}

/** The largest rowid of a table (0 for an empty one). */
function maxRowid(db: Database.Database, table: string): Database.Statement {
  return db.prepare(`SELECT COALESCE(MAX(rowid), 0) FROM ${table}`).pluck();
}

/**
 * New rows of the open transaction, not yet written, and the rowids they get. A step refers
 * to its run, and a chunk to its step, by rowid (`sqlite-rows.ts`), so a held row's rowid is
 * chosen when it is held: the next after the table's largest, read once per transaction
 * (under its write lock, nobody else inserts).
 */
export class PendingRows {
  readonly #insertRuns: MultiInsert;
  readonly #insertSteps: MultiInsert;
  readonly #insertChunks: MultiInsert;
  readonly #runs = new HeldRecords(RUN_LAYOUT);
  readonly #steps = new HeldRecords(STEP_LAYOUT);
  readonly #chunks = new HeldChunks();
  readonly #maxRunRef: Database.Statement;
  readonly #maxStepRef: Database.Statement;
  /** The rowid the next new run or step gets; `null` until one is needed in a transaction. */
  #nextRunRef: number | null = null;
  #nextStepRef: number | null = null;

  constructor(db: Database.Database) {
    this.#insertRuns = new MultiInsert(db, 'runs', RUN_LAYOUT.columns);
    this.#insertSteps = new MultiInsert(db, 'steps', STEP_LAYOUT.columns);
    this.#insertChunks = new MultiInsert(db, 'event_chunks', CHUNK_COLUMNS);
    this.#maxRunRef = maxRowid(db, 'runs');
    this.#maxStepRef = maxRowid(db, 'steps');
  }

  /** A transaction began: rowids are read afresh (another process may have added rows). */
  began(): void {
    this.#nextRunRef = null;
    this.#nextStepRef = null;
  }

  /** The rowid of a new run, in the open transaction. */
  newRunRef(): number {
    this.#nextRunRef ??= (this.#maxRunRef.get() as number) + 1;
    return this.#nextRunRef++;
  }

  /** The rowid of a new step, in the open transaction. */
  newStepRef(): number {
    this.#nextStepRef ??= (this.#maxStepRef.get() as number) + 1;
    return this.#nextStepRef++;
  }

  /** Whether nothing is held. */
  get empty(): boolean {
    return this.#runs.size === 0 && this.#steps.size === 0 && this.#chunks.empty;
  }

  /** The rowid of a held run; undefined when the run is not held. */
  runRef(runId: string): number | undefined {
    return this.#runs.ref(runId);
  }

  /** The rowid of a held step; undefined when the step is not held. */
  stepRef(stepId: string): number | undefined {
    return this.#steps.ref(stepId);
  }

  /** A held run's row as the table would give it; null when the run is not held. */
  heldRun(runId: string): RunRow | null {
    const row = this.#runs.get(runId);
    return row ? heldRunRow(row) : null;
  }

  /** A held step's row as the table would give it; null when the step is not held. */
  heldStep(stepId: string): StepRow | null {
    const row = this.#steps.get(stepId);
    return row ? heldStepRow(row) : null;
  }

  /** The held step of run `runId` with client token `token`, as the table would give it; null when none is held. */
  heldByToken(runId: string, token: string): StepRow | null {
    const row = this.#steps.find((r) => r.runId === runId && r.columns[3] === token);
    return row ? heldStepRow(row) : null;
  }

  /** Holds a new run's row (`runRow` in `sqlite-rows.ts`). */
  addRun(row: RowParts): void {
    this.#runs.add(row);
  }

  /** Holds a new step's row (`stepRow` in `sqlite-rows.ts`). */
  addStep(row: RowParts): void {
    this.#steps.add(row);
  }

  /** Holds one event of a step's log (the step by its rowid), as `storedEventJson` made it. */
  addEvent(stepRef: number, seq: number, json: string): void {
    this.#chunks.add(stepRef, seq, json);
  }

  /** Applies `patch` to a held run's row; false when the run is not held. */
  patchRun(runId: string, patch: object): boolean {
    return this.#runs.patch(runId, patch);
  }

  /** Applies `patch` to a held step's row; false when the step is not held. */
  patchStep(stepId: string, patch: object): boolean {
    return this.#steps.patch(stepId, patch);
  }

  /**
   * Writes every held row: runs, then steps, then log chunks (the order the keys need;
   * within a table, the order they were added in, which is their rowids' order).
   */
  write(): void {
    if (this.empty) return;
    const runs = this.#runs.take();
    // A new step's first chunk goes in its row: one insert for a short step and its log.
    const steps = this.#steps.takeWith((row) => this.#chunks.inlineFirst(row.columns[0] as number));
    const chunks = this.#chunks.take();
    this.#insertRuns.run(runs);
    this.#insertSteps.run(steps);
    this.#insertChunks.run(chunks);
  }

  /** Forgets what is held (the transaction it belonged to is gone), and the rowids given. */
  drop(): void {
    this.#runs.take();
    this.#steps.take();
    this.#chunks.take();
    this.began();
  }
}
