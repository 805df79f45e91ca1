/**
 * @module Rows the SQLite store holds back inside its open transaction: new runs, new steps
 * and appended events are kept as the parameters of their inserts, and written when the
 * transaction needs them — before any read or any other write, and before the commit.
 *
 * Why: a run's row and its steps' rows are inserted and then updated (status, output, usage)
 * within the same few microseconds, usually in the same turn of the event loop. Held back,
 * an insert and its updates become one insert of the final row, and a turn's rows of each
 * table one multi-row insert: a two-step run made 10 statements; its rows now go into the
 * turn's three inserts (plus a point lookup per new id, below). Nothing changes for a
 * reader: this process reads its own writes (every read writes the held rows first), and
 * other processes see only commits, which always include them.
 *
 * The checks a statement would make (a taken id, an unknown run, a `seq` out of order) are
 * made by the store when the write is called, under the transaction's write lock, so a held
 * row never fails when it is written; if one does anyway (a full disk), the store treats it
 * as a failed commit.
 */
import type Database from 'better-sqlite3';
import { EVENT_COLUMNS, patchValue, RUN_COLUMNS, STEP_COLUMNS } from './sqlite-rows.js';

/** One column per parameter, in the order of the table's insert. */
type Values = (string | number | null)[];

/** Rows per multi-row insert (at most 64 × 18 parameters, far below SQLite's limit). */
const CHUNK = 64;

/** `INSERT INTO table (columns) VALUES (?, …), …` for `rows` rows. */
function insertSql(table: string, columns: readonly string[], rows: number): string {
  const row = `(${columns.map(() => '?').join(', ')})`;
  return `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${Array(rows).fill(row).join(', ')}`;
}

/** Inserts of one table, by number of rows (1 … {@link CHUNK}), prepared when first needed. */
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

  /** Inserts the rows whose parameters are `flat` (row after row), {@link CHUNK} at a time. */
  run(flat: readonly unknown[]): void {
    const width = this.#columns.length;
    for (let at = 0; at < flat.length; at += CHUNK * width) {
      const chunk = flat.length <= CHUNK * width ? flat : flat.slice(at, at + CHUNK * width);
      this.#statement(chunk.length / width).run(chunk);
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

/** The position of each column in a row's values. */
function positions(columns: readonly string[]): ReadonlyMap<string, number> {
  return new Map(columns.map((c, i) => [c, i]));
}

/** The held rows of one table: their parameters, flat, and where each row starts. */
class HeldRows {
  readonly #width: number;
  readonly #at: ReadonlyMap<string, number>;
  /** Row after row, each {@link #width} parameters, in the order they were added. */
  #values: Values = [];
  /** Each held row's first parameter's index in {@link #values}, by the row's id. */
  readonly #starts = new Map<string, number>();

  constructor(columns: readonly string[]) {
    this.#width = columns.length;
    this.#at = positions(columns);
  }

  get size(): number {
    return this.#starts.size;
  }

  has(id: string): boolean {
    return this.#starts.has(id);
  }

  /** Holds a row (`row` in column order; its id first). */
  add(row: Values): void {
    if (row.length !== this.#width)
      throw new TypeError(`a row of ${this.#width} values, got ${row.length}`);
    this.#starts.set(row[0] as string, this.#values.length);
    for (const v of row) this.#values.push(v);
  }

  /**
   * Sets the patched columns of a held row as an UPDATE would (all of them or, for a column
   * the table does not have, none); false when the row is not held.
   */
  patch(id: string, patch: object): boolean {
    const start = this.#starts.get(id);
    if (start === undefined) return false;
    const entries = Object.entries(patch).filter(([, value]) => value !== undefined);
    for (const [column] of entries) {
      if (!this.#at.has(column)) throw new TypeError(`no column ${column} to patch`);
    }
    for (const [column, value] of entries) {
      this.#values[start + (this.#at.get(column) ?? 0)] = patchValue(column, value);
    }
    return true;
  }

  /** Hands over the held parameters and forgets them. */
  take(): Values {
    const values = this.#values;
    this.#values = [];
    this.#starts.clear();
    return values;
  }
}

/** New rows of the open transaction, not yet written. */
export class PendingRows {
  readonly #insertRuns: MultiInsert;
  readonly #insertSteps: MultiInsert;
  readonly #insertEvents: MultiInsert;
  readonly #runs = new HeldRows(RUN_COLUMNS);
  readonly #steps = new HeldRows(STEP_COLUMNS);
  /** Step id, seq, body, … of the held events, flat, in append order. */
  #events: (string | number)[] = [];

  constructor(db: Database.Database) {
    this.#insertRuns = new MultiInsert(db, 'runs', RUN_COLUMNS);
    this.#insertSteps = new MultiInsert(db, 'steps', STEP_COLUMNS);
    this.#insertEvents = new MultiInsert(db, 'events', EVENT_COLUMNS);
  }

  /** Whether nothing is held. */
  get empty(): boolean {
    return this.#runs.size === 0 && this.#steps.size === 0 && this.#events.length === 0;
  }

  hasRun(runId: string): boolean {
    return this.#runs.has(runId);
  }

  hasStep(stepId: string): boolean {
    return this.#steps.has(stepId);
  }

  /** Holds a new run's row (`values` in {@link RUN_COLUMNS} order; its id first). */
  addRun(values: Values): void {
    this.#runs.add(values);
  }

  /** Holds a new step's row (`values` in {@link STEP_COLUMNS} order; its id first). */
  addStep(values: Values): void {
    this.#steps.add(values);
  }

  /** Holds events: step id, seq and body of each, flat (in {@link EVENT_COLUMNS} order). */
  addEvents(rows: readonly (string | number)[]): void {
    for (const v of rows) this.#events.push(v);
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
   * Writes every held row: runs, then steps, then events (the order the keys need; within a
   * table, the order they were added in, which is the tables' rowid order).
   */
  write(): void {
    if (this.empty) return;
    const runs = this.#runs.take();
    const steps = this.#steps.take();
    const events = this.#events;
    this.#events = [];
    this.#insertRuns.run(runs);
    this.#insertSteps.run(steps);
    this.#insertEvents.run(events);
  }

  /** Forgets what is held (the transaction it belonged to is gone). */
  drop(): void {
    this.#runs.take();
    this.#steps.take();
    this.#events = [];
  }
}
