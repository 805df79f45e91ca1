/**
 * @module The SQLite store's cache of the logs it appends to: each step's rowid (its log's
 * chunks refer to it) and the last `seq` of its log, so an append needs no lookup. Another
 * process sharing the file may append to the same logs between this store's transactions,
 * so the cache is dropped whenever another connection has committed since the last
 * transaction began (`PRAGMA data_version`).
 */
import type Database from 'better-sqlite3';

/** A log this store appends to: its step's rowid and its last `seq`. */
export interface LogEnd {
  readonly ref: number;
  seq: number;
}

/** Recently appended logs, by step id. */
export class LogEnds {
  /** Logs remembered at most (it is a cache: past this it starts over). */
  static readonly MAX = 10_000;
  readonly #ends = new Map<string, LogEnd>();
  readonly #dataVersion: Database.Statement;
  #version: unknown = undefined;

  constructor(db: Database.Database) {
    this.#dataVersion = db.prepare('PRAGMA data_version').pluck();
  }

  /** A transaction began: forgets everything if another connection committed since the last. */
  began(): void {
    const version = this.#dataVersion.get();
    if (version !== this.#version) this.#ends.clear();
    this.#version = version;
  }

  /** The step's log, if remembered (update its `seq` in place as events are appended). */
  get(stepId: string): LogEnd | undefined {
    return this.#ends.get(stepId);
  }

  /** Remembers the step's log, starting over when full. */
  set(stepId: string, end: LogEnd): void {
    if (this.#ends.size >= LogEnds.MAX) this.#ends.clear();
    this.#ends.set(stepId, end);
  }

  /** Forgets a log (its step ended: no more appends to it are expected). */
  delete(stepId: string): void {
    this.#ends.delete(stepId);
  }
}
