/**
 * @module The SQLite store's cache of the logs it appends to: each step's rowid (its log's
 * chunks refer to it) and the last `seq` of its log, so an append needs no lookup. Another
 * process sharing the file may append to the same logs between this store's transactions,
 * so the cache is dropped whenever another connection has committed since the last
 * transaction began (`PRAGMA data_version`).
 */
import type Database from 'better-sqlite3';
import { ConflictError } from '../../errors/conflict-error.js';
import type { StepEvent } from '../../streams/events.js';

/** The refusal of an event whose `seq` does not continue its log. */
export function seqConflict(ev: StepEvent, expected: number): ConflictError {
  return new ConflictError(`step ${ev.step_id}: expected seq ${expected}, got ${ev.seq}`, {
    details: { step_id: ev.step_id, expected, got: ev.seq },
  });
}

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

  /** Forgets every log (a transaction rolled back: what it appended is gone). */
  clear(): void {
    this.#ends.clear();
  }

  /** Forgets a log (its step ended: no more appends to it are expected). */
  delete(stepId: string): void {
    this.#ends.delete(stepId);
  }

  /**
   * Each step's log as `events` continue it, checked: `seq` must follow the log's end (a
   * log not remembered is looked up), else `conflict` is thrown and nothing changes.
   */
  continued(
    events: readonly StepEvent[],
    lookUp: (stepId: string) => LogEnd,
    conflict: (ev: StepEvent, expected: number) => Error,
  ): Map<string, LogEnd> {
    // The cache changes only once all of the batch fits (`settle`).
    const logs = new Map<string, LogEnd>();
    for (const ev of events) {
      let log = logs.get(ev.step_id);
      if (!log) {
        const known = this.#ends.get(ev.step_id) ?? lookUp(ev.step_id);
        log = { ref: known.ref, seq: known.seq };
        logs.set(ev.step_id, log);
      }
      if (ev.seq !== log.seq + 1) throw conflict(ev, log.seq + 1);
      log.seq = ev.seq;
    }
    return logs;
  }

  /** Remembers the logs' ends a batch checked by {@link continued} left, once it is held. */
  settle(logs: ReadonlyMap<string, LogEnd>): void {
    for (const [stepId, log] of logs) {
      const cached = this.#ends.get(stepId);
      if (cached) cached.seq = log.seq;
      else this.set(stepId, log);
    }
  }
}
