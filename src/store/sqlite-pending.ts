/**
 * @module Rows the SQLite store holds back inside its open transaction: new runs, new steps
 * and appended events are kept as the parameters of their inserts, and written when the
 * transaction needs them — before any read or any other write, and before the commit.
 *
 * Why: a run's row and its steps' rows are inserted and then updated (status, output, usage)
 * within the same few microseconds, usually in the same turn of the event loop. Held back,
 * an insert and its updates become one insert of the final row, and a turn's events one
 * multi-row insert: a two-step run makes 4 statements instead of 10. Nothing changes for a
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
      const chunk = flat.slice(at, at + CHUNK * width);
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

const RUN_AT = positions(RUN_COLUMNS);
const STEP_AT = positions(STEP_COLUMNS);

/** New rows of the open transaction, not yet written. */
export class PendingRows {
  readonly #insertRuns: MultiInsert;
  readonly #insertSteps: MultiInsert;
  readonly #insertEvents: MultiInsert;
  readonly #runs = new Map<string, Values>();
  readonly #steps = new Map<string, Values>();
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
    this.#runs.set(values[0] as string, values);
  }

  /** Holds a new step's row (`values` in {@link STEP_COLUMNS} order; its id first). */
  addStep(values: Values): void {
    this.#steps.set(values[0] as string, values);
  }

  /** Holds an event of a step's log. */
  addEvent(stepId: string, seq: number, body: string): void {
    this.#events.push(stepId, seq, body);
  }

  /** Applies `patch` to a held run's row; false when the run is not held. */
  patchRun(runId: string, patch: object): boolean {
    return patchRow(this.#runs.get(runId), RUN_AT, patch);
  }

  /** Applies `patch` to a held step's row; false when the step is not held. */
  patchStep(stepId: string, patch: object): boolean {
    return patchRow(this.#steps.get(stepId), STEP_AT, patch);
  }

  /**
   * Writes every held row: runs, then steps, then events (the order the keys need; within a
   * table, the order they were added in, which is the tables' rowid order).
   */
  write(): void {
    if (this.empty) return;
    const runs = [...this.#runs.values()].flat();
    const steps = [...this.#steps.values()].flat();
    const events = this.#events;
    this.drop();
    this.#insertRuns.run(runs);
    this.#insertSteps.run(steps);
    this.#insertEvents.run(events);
  }

  /** Forgets what is held (the transaction it belonged to is gone). */
  drop(): void {
    this.#runs.clear();
    this.#steps.clear();
    this.#events = [];
  }
}

/** Sets the patched columns of `row` as an UPDATE would; false when there is no row. */
function patchRow(
  row: Values | undefined,
  at: ReadonlyMap<string, number>,
  patch: object,
): boolean {
  if (row === undefined) return false;
  for (const [column, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    const i = at.get(column);
    if (i === undefined) throw new TypeError(`no column ${column} to patch`);
    row[i] = patchValue(column, value);
  }
  return true;
}
