/**
 * @module The SQLite store's cache of runs' rowids, which never change once written (a run is
 * never deleted): an actor's run takes a step per message, and each would look its run up.
 * Forgotten when a transaction rolls back (a run it held may be gone) and, past `MAX`, all at
 * once.
 */
import type Database from 'better-sqlite3';
import type { PendingRows } from './sqlite-pending.js';

/** Runs' rowids, held or remembered; see the module. */
export class RunRefs {
  /** Runs remembered at most. */
  static readonly MAX = 100_000;
  readonly #refs = new Map<string, number>();
  readonly #pending: PendingRows;
  /** `SELECT run_ref FROM runs WHERE run_id = ?` */
  readonly #lookUp: Database.Statement;

  constructor(pending: PendingRows, lookUp: Database.Statement) {
    this.#pending = pending;
    this.#lookUp = lookUp;
  }

  /** The rowid of a run, held or written; `undefined` for an unknown one. */
  of(runId: string): number | undefined {
    const held = this.#pending.runRef(runId);
    if (held !== undefined) return held;
    const known = this.#refs.get(runId);
    if (known !== undefined) return known;
    const ref = (this.#lookUp.get(runId) as { run_ref: number } | undefined)?.run_ref;
    if (ref !== undefined) {
      if (this.#refs.size >= RunRefs.MAX) this.#refs.clear();
      this.#refs.set(runId, ref);
    }
    return ref;
  }

  /** Forgets every run's rowid (a transaction rolled back). */
  clear(): void {
    this.#refs.clear();
  }
}
