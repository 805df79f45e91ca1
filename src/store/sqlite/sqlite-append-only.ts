/**
 * @module The SQLite store's append-only records of a run: facts (NERVE-4004), checkpoints
 * (NERVE-4005) and call recordings (NERVE-4021). Each refers to its run, which must exist;
 * none is updated, but a recording's call is stored again when it is made again.
 */
import type Database from 'better-sqlite3';
import { ConflictError } from '../../errors/conflict-error.js';
import { NotFoundError } from '../../errors/not-found-error.js';
import { checkFactQuery } from '../fact-query.js';
import { recordingKey } from '../records.js';
import type {
  CallRecording,
  CheckpointRecord,
  FactQuery,
  FactRecord,
  RecordingKey,
} from '../records.js';
import { json, parse } from './sqlite-rows.js';
import {
  recordingFromRow,
  type CheckpointRow,
  type FactRow,
  type RecordingRow,
} from './sqlite-record-rows.js';
import type { Statements } from './sqlite-statements.js';

/**
 * Facts, checkpoints and recordings of a SQLite store. Writes go through `write`, the store's
 * write of a row that refers to a run and to nothing held (the held rows stay held unless
 * the run is one of them, which the row's foreign key needs written); reads through `read`.
 */
export class SqliteAppendOnly {
  readonly #db: Database.Database;
  readonly #stmt: Statements;
  readonly #write: <T>(runId: string, fn: () => T) => Promise<T>;
  readonly #read: <T>(fn: () => T) => Promise<T>;

  constructor(
    db: Database.Database,
    stmt: Statements,
    write: <T>(runId: string, fn: () => T) => Promise<T>,
    read: <T>(fn: () => T) => Promise<T>,
  ) {
    this.#db = db;
    this.#stmt = stmt;
    this.#write = write;
    this.#read = read;
  }

  appendFact(fact: FactRecord): Promise<void> {
    return this.#write(fact.run_id, () => {
      this.#runExists(fact.run_id);
      try {
        this.#stmt.insertFact.run({ ...fact, data: json(fact.data) });
      } catch (err) {
        if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
          throw new ConflictError(`fact ${fact.fact_id} exists`, { cause: err });
        }
        throw err;
      }
    });
  }

  listFacts(query: FactQuery): Promise<FactRecord[]> {
    return this.#read(() => {
      checkFactQuery(query);
      const where: string[] = [];
      const values: Record<string, unknown> = {};
      if (query.runId !== undefined) {
        where.push('run_id = @run_id');
        values['run_id'] = query.runId;
      }
      if (query.flowId !== undefined) {
        where.push('run_id IN (SELECT run_id FROM runs WHERE flow_id = @flow_id)');
        values['flow_id'] = query.flowId;
      }
      if (query.type !== undefined) {
        where.push('type = @type');
        values['type'] = query.type;
      }
      if (query.after !== undefined) {
        // An unknown cursor selects nothing (the subquery is NULL).
        where.push('rowid > (SELECT rowid FROM facts WHERE fact_id = @after)');
        values['after'] = query.after;
      }
      const limit = query.limit === undefined ? '' : ` LIMIT ${query.limit}`;
      const rows = this.#db
        .prepare(`SELECT * FROM facts WHERE ${where.join(' AND ')} ORDER BY rowid${limit}`)
        .all(values) as FactRow[];
      return rows.map((r) => ({ ...r, data: parse(r.data) }));
    });
  }

  createCheckpoint(checkpoint: CheckpointRecord): Promise<void> {
    return this.#write(checkpoint.run_id, () => {
      this.#runExists(checkpoint.run_id);
      this.#stmt.insertCheckpoint.run({
        ...checkpoint,
        snapshots: json(checkpoint.snapshots),
        log_offsets: json(checkpoint.log_offsets),
      });
    });
  }

  listCheckpoints(runId: string): Promise<CheckpointRecord[]> {
    return this.#read(() =>
      (this.#stmt.listCheckpoints.all(runId) as CheckpointRow[]).map((r) => ({
        ...r,
        snapshots: parse(r.snapshots) as CheckpointRecord['snapshots'],
        log_offsets: parse(r.log_offsets) as CheckpointRecord['log_offsets'],
      })),
    );
  }

  putRecording(recording: CallRecording): Promise<void> {
    return this.#write(recording.run_id, () => {
      this.#runExists(recording.run_id);
      this.#stmt.putRecording.run({
        run_id: recording.run_id,
        call_key: recordingKey(recording),
        client_token: recording.client_token,
        actor_path: json(recording.actor_path),
        seq: recording.seq,
        kind: recording.kind,
        name: recording.name,
        inputs: json(recording.inputs),
        output: json(recording.output),
        ts: recording.ts,
      });
    });
  }

  getRecording(runId: string, key: RecordingKey): Promise<CallRecording | null> {
    return this.#read(() => {
      const row = this.#stmt.getRecording.get(runId, recordingKey(key)) as RecordingRow | undefined;
      return row ? recordingFromRow(row) : null;
    });
  }

  /** `NotFoundError` unless run `runId` is in the table (its row, not read). */
  #runExists(runId: string): void {
    if (this.#stmt.runExists.get(runId) === undefined) throw new NotFoundError('run', runId);
  }

  listRecordings(runId: string): Promise<CallRecording[]> {
    return this.#read(() =>
      (this.#stmt.listRecordings.all(runId) as RecordingRow[]).map(recordingFromRow),
    );
  }
}
