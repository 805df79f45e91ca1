/**
 * @module Rows the SQLite store holds back inside its open transaction: new runs, new steps
 * and appended events are kept as the values of their inserts, and written when the
 * transaction needs them — before any read or any other write, and before the commit.
 *
 * Why: a run's row and its steps' rows are inserted and then updated (status, output, usage)
 * within the same few microseconds, usually in the same turn of the event loop. Held back,
 * an insert and its updates become one insert of the final row, a turn's rows of each table
 * one multi-row insert, and a turn's events of one step one chunk of its log (see
 * `sqlite-rows.ts`). Nothing changes for a reader: this process reads its own writes (every
 * read writes the held rows first), and other processes see only commits, which always
 * include them.
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
  recordText,
  RUN_COLUMNS,
  RUN_FIELDS,
  RUN_FIXED,
  STEP_COLUMNS,
  STEP_FIELDS,
  STEP_FIXED,
  type RowParts,
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
  /** Columns a patch may set (all but the id and the record), by name: their index. */
  readonly #columnAt: ReadonlyMap<string, number>;
  /** Fields a patch may set (those after the fixed ones), by name: their index in `changing`. */
  readonly #changingAt: ReadonlyMap<string, number>;
  #rows = new Map<string, RowParts>();

  constructor(columns: readonly string[], fields: readonly string[], fixed: number) {
    this.#columnAt = new Map(columns.slice(1, -1).map((c, i) => [c, i + 1]));
    this.#changingAt = new Map(fields.slice(fixed).map((f, i) => [f, i]));
  }

  get size(): number {
    return this.#rows.size;
  }

  has(id: string): boolean {
    return this.#rows.has(id);
  }

  /** Holds a row (its id the first column). */
  add(row: RowParts): void {
    this.#rows.set(row.columns[0] as string, row);
  }

  /**
   * Sets the patched fields of a held row as an update would (all of them or, for a field
   * an update cannot set, none); false when the row is not held.
   */
  patch(id: string, patch: object): boolean {
    const row = this.#rows.get(id);
    if (!row) return false;
    const entries = Object.entries(patch).filter(([, value]) => value !== undefined);
    for (const [key] of entries) {
      if (!this.#columnAt.has(key) && !this.#changingAt.has(key)) {
        throw new TypeError(`no field ${key} to patch`);
      }
    }
    for (const [key, value] of entries) {
      const column = this.#columnAt.get(key);
      if (column !== undefined) row.columns[column] = value as Value;
      else row.changing[this.#changingAt.get(key) ?? 0] = fieldJson(key, value);
    }
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
}

/** Events per chunk of a log at most, and JSON characters (past it, a chunk is not grown). */
const CHUNK_EVENTS = 64;
const CHUNK_CHARS = 3_500;

/** A chunk being made: consecutive events of one step. */
interface OpenChunk {
  readonly stepId: string;
  readonly firstSeq: number;
  lastSeq: number;
  readonly events: string[];
  chars: number;
}

/** The held events, as chunks of their steps' logs. */
class HeldChunks {
  readonly #open = new Map<string, OpenChunk>();
  /** Parameters of the chunks that are full, chunk after chunk. */
  #full: Value[] = [];

  get empty(): boolean {
    return this.#open.size === 0 && this.#full.length === 0;
  }

  /**
   * Holds one event (`json` as `storedEventJson` made it). The store holds only events that
   * continue their step's log, so an event goes on the step's open chunk while it has room.
   */
  add(stepId: string, seq: number, json: string): void {
    const chunk = this.#open.get(stepId);
    if (chunk && chunk.events.length < CHUNK_EVENTS && chunk.chars + json.length <= CHUNK_CHARS) {
      chunk.events.push(json);
      chunk.lastSeq = seq;
      chunk.chars += json.length;
      return;
    }
    if (chunk) this.#close(chunk);
    this.#open.set(stepId, {
      stepId,
      firstSeq: seq,
      lastSeq: seq,
      events: [json],
      chars: json.length,
    });
  }

  #close(chunk: OpenChunk): void {
    this.#full.push(chunk.stepId, chunk.lastSeq, chunk.firstSeq, `[${chunk.events.join(',')}]`);
  }

  /** Hands over every held chunk as its insert's parameters and forgets them. */
  take(): Value[] {
    for (const chunk of this.#open.values()) this.#close(chunk);
    this.#open.clear();
    const flat = this.#full;
    this.#full = [];
    return flat;
  }
}

/** New rows of the open transaction, not yet written. */
export class PendingRows {
  readonly #insertRuns: MultiInsert;
  readonly #insertSteps: MultiInsert;
  readonly #insertChunks: MultiInsert;
  readonly #runs = new HeldRecords(RUN_COLUMNS, RUN_FIELDS, RUN_FIXED);
  readonly #steps = new HeldRecords(STEP_COLUMNS, STEP_FIELDS, STEP_FIXED);
  readonly #chunks = new HeldChunks();

  constructor(db: Database.Database) {
    this.#insertRuns = new MultiInsert(db, 'runs', RUN_COLUMNS);
    this.#insertSteps = new MultiInsert(db, 'steps', STEP_COLUMNS);
    this.#insertChunks = new MultiInsert(db, 'event_chunks', CHUNK_COLUMNS);
  }

  /** Whether nothing is held. */
  get empty(): boolean {
    return this.#runs.size === 0 && this.#steps.size === 0 && this.#chunks.empty;
  }

  hasRun(runId: string): boolean {
    return this.#runs.has(runId);
  }

  hasStep(stepId: string): boolean {
    return this.#steps.has(stepId);
  }

  /** Holds a new run's row (`runRow` in `sqlite-rows.ts`). */
  addRun(row: RowParts): void {
    this.#runs.add(row);
  }

  /** Holds a new step's row (`stepRow` in `sqlite-rows.ts`). */
  addStep(row: RowParts): void {
    this.#steps.add(row);
  }

  /** Holds one event of a step's log, as `storedEventJson` made it. */
  addEvent(stepId: string, seq: number, json: string): void {
    this.#chunks.add(stepId, seq, json);
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
   * within a table, the order they were added in, which is the tables' rowid order).
   */
  write(): void {
    if (this.empty) return;
    const runs = this.#runs.take();
    const steps = this.#steps.take();
    const chunks = this.#chunks.take();
    this.#insertRuns.run(runs);
    this.#insertSteps.run(steps);
    this.#insertChunks.run(chunks);
  }

  /** Forgets what is held (the transaction it belonged to is gone). */
  drop(): void {
    this.#runs.take();
    this.#steps.take();
    this.#chunks.take();
  }
}
