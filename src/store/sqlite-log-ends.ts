/**
 * @module The SQLite store's cache of where each log ends: the last `seq` of the logs it
 * appended to, so an append needs no lookup. Another process sharing the file may append to
 * the same logs between this store's transactions, so the cache is dropped whenever another
 * connection has committed since the last transaction began (`PRAGMA data_version`). The
 * log's primary key stays the arbiter.
 */
import type Database from 'better-sqlite3';

/** The last `seq` of recently appended logs, by step id. */
export class LogEnds {
  /** Logs remembered at most (it is a cache: past this it starts over). */
  static readonly MAX = 10_000;
  readonly #ends = new Map<string, number>();
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

  /** The last `seq` of the step's log, if remembered. */
  get(stepId: string): number | undefined {
    return this.#ends.get(stepId);
  }

  /** Remembers the last `seq` of the step's log, starting over when full. */
  set(stepId: string, seq: number): void {
    if (this.#ends.size >= LogEnds.MAX) this.#ends.clear();
    this.#ends.set(stepId, seq);
  }

  /** Forgets a log (its step ended: no more appends to it are expected). */
  delete(stepId: string): void {
    this.#ends.delete(stepId);
  }
}
