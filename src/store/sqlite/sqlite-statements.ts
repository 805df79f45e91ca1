/** @module The SQLite store's options and its fixed statements, prepared once per connection. */
import type Database from 'better-sqlite3';
import type { Migration } from './sqlite-migrations.js';

/**
 * The SQL of each fixed statement (patches are built and prepared as they are needed; the
 * run, step and log chunk inserts are `sqlite-pending.ts`'s).
 */
const SQL = {
  putRecording: `INSERT INTO recordings (run_id, call_key, client_token, actor_path, seq, kind, name, inputs, output, ts)
       VALUES (@run_id, @call_key, @client_token, @actor_path, @seq, @kind, @name, @inputs, @output, @ts)
       ON CONFLICT (run_id, call_key) DO UPDATE SET
         kind = excluded.kind, name = excluded.name, inputs = excluded.inputs,
         output = excluded.output, ts = excluded.ts`,
  releaseToken: 'UPDATE steps SET client_token = NULL WHERE step_id = ?',
  getRecording: 'SELECT * FROM recordings WHERE run_id = ? AND call_key = ?',
  listRecordings: 'SELECT * FROM recordings WHERE run_id = ? ORDER BY rowid',
  getRun: 'SELECT * FROM runs WHERE run_id = ?',
  // A step's row refers to its run by rowid: the run's id comes from a join.
  getStep: `SELECT s.step_id, r.run_id, s.client_token, s.record
       FROM steps s JOIN runs r ON r.run_ref = s.run_ref WHERE s.step_id = ?`,
  listSteps: `SELECT s.step_id, r.run_id, s.client_token, s.record
       FROM steps s JOIN runs r ON r.run_ref = s.run_ref WHERE r.run_id = ? ORDER BY s.step_ref`,
  stepByToken: `SELECT s.step_id, r.run_id, s.client_token, s.record
       FROM steps s JOIN runs r ON r.run_ref = s.run_ref WHERE r.run_id = ? AND s.client_token = ?`,
  /**
   * A step's rowid and the last seq of its log (its row's first chunk, or a later one); no
   * row for an unknown step.
   */
  stepLog: `SELECT step_ref AS ref, MAX(log_last,
       (SELECT COALESCE(MAX(last_seq), 0) FROM event_chunks c WHERE c.step_ref = steps.step_ref)) AS seq
       FROM steps WHERE step_id = ?`,
  stepExists: 'SELECT 1 FROM steps WHERE step_id = ?',
  runExists: 'SELECT 1 FROM runs WHERE run_id = ?',
  runRef: 'SELECT run_ref FROM runs WHERE run_id = ?',
  /** A step's log from seq `@after` on: the chunk in its row, then the later ones. */
  readChunks: `SELECT 1 AS first_seq, log AS events, log_last AS last_seq FROM steps
       WHERE step_id = @step AND log_last > @after
     UNION ALL
     SELECT first_seq, events, last_seq FROM event_chunks
       WHERE step_ref = (SELECT step_ref FROM steps WHERE step_id = @step) AND last_seq > @after
     ORDER BY last_seq`,
  /** Adds a step's usage to its run's (schema 10's columns): no read of the run. */
  addRunUsage: `UPDATE runs SET tokens_in = tokens_in + ?, tokens_out = tokens_out + ?,
       cost_usd = cost_usd + ?, wall_ms = wall_ms + ? WHERE run_id = ?
     RETURNING tokens_in, tokens_out, cost_usd, wall_ms`,
  insertFlow: `INSERT INTO flows (flow_id, hash, name, ast, tools, config, labels, created_at)
       VALUES (@flow_id, @hash, @name, @ast, @tools, @config, @labels, @created_at)`,
  getFlow: 'SELECT * FROM flows WHERE flow_id = ?',
  listFlows: 'SELECT * FROM flows ORDER BY rowid',
  getFlowByHash: 'SELECT * FROM flows WHERE hash = ?',
  insertFact: `INSERT INTO facts (fact_id, run_id, type, schema_uri, data, emitted_by_step, ts)
       VALUES (@fact_id, @run_id, @type, @schema_uri, @data, @emitted_by_step, @ts)`,
  insertCheckpoint: `INSERT INTO checkpoints (checkpoint_id, run_id, step_id, label, snapshots, log_offsets, ts)
       VALUES (@checkpoint_id, @run_id, @step_id, @label, @snapshots, @log_offsets, @ts)`,
  listCheckpoints: 'SELECT * FROM checkpoints WHERE run_id = ? ORDER BY rowid',
} as const;

/** The store's prepared statements, by name. */
export type Statements = { readonly [K in keyof typeof SQL]: Database.Statement };

/** Prepares every fixed statement of the store on `db`. */
export function prepareStatements(db: Database.Database): Statements {
  const out: Partial<Record<keyof typeof SQL, Database.Statement>> = {};
  for (const name of Object.keys(SQL) as (keyof typeof SQL)[]) out[name] = db.prepare(SQL[name]);
  return out as Statements;
}

/**
 * What a commit of the SQLite store survives (see {@link SqliteStoreOptions.durability}):
 * `'process'` the process dying, `'power'` a power loss or an OS crash too.
 */
export type SqliteDurability = 'process' | 'power';

/** Options of {@link sqliteStore}. */
export interface SqliteStoreOptions {
  /**
   * What a commit survives, so what the runtime's acknowledgements (made after a commit)
   * promise; default `'process'`.
   *
   * - `'process'`: `PRAGMA synchronous = NORMAL`. A committed write survives the process
   *   dying (a crash, `kill -9`, an exception nobody caught). A power loss or an OS crash
   *   may lose the last commits: the WAL is synced to disk only before a checkpoint, not at
   *   each commit. The file itself stays consistent either way.
   * - `'power'`: `PRAGMA synchronous = FULL`. Each commit syncs the WAL (`fsync`) before it
   *   resolves, so a committed write survives a power loss or an OS crash too, as far as the
   *   disk honours a sync. On macOS `fsync` does not flush the drive's cache (SQLite's
   *   `fullfsync`, which this does not set).
   *
   * Why `'process'` by default: under `'power'` every acknowledgement waits for a disk sync.
   * `npm run bench:store` measured `'power'` at about half to two thirds of the two-step
   * runs/s of `'process'` with 16 in flight, and far less one run at a time; and a killed
   * process, what `resumeRuns` recovers from, loses nothing under either. Choose `'power'`
   * where losing an acknowledged step to a power cut costs more: a step whose effects
   * outside axon must not run twice (a resume runs an unrecorded step again).
   *
   * The setting belongs to the connection, not the file: each store sets its own. Anything
   * else is a `TypeError` (not a string) or a `RangeError` (another string).
   */
  readonly durability?: SqliteDurability;
  /** How long a write waits for another process's lock; default 5 000 ms. */
  readonly busyTimeoutMs?: number;
  /** The migrations to apply (tests use this to simulate a newer schema); default all. */
  readonly migrations?: readonly Migration[];
  /**
   * Told when a commit fails (a full disk, a lost file): that turn's writes are lost and the
   * store refuses everything after, with the same error.
   */
  readonly onError?: (err: Error) => void;
  /**
   * Writes are committed together, a turn of the event loop at a time, and at least every
   * `maxBatchMs` of a turn that goes on writing; default 50. `0` commits every write by
   * itself (slower; nothing is ever held back). A busy runtime's turn can run long (work
   * that goes on through resolved promises never yields): a commit in its middle writes the
   * rows its unfinished work holds, whose later changes then cost updates — at 10 ms, 256
   * durable messages in flight ran at about half the rate they run at 50 ms (docs/concepts.md).
   */
  readonly maxBatchMs?: number;
  /**
   * How often a worker thread checkpoints the WAL into the database file (its own
   * connection, `PRAGMA wal_checkpoint(PASSIVE)`), so commits on the event loop never do;
   * default 25 ms. `0` leaves checkpoints to SQLite (in the commit that passes 1 000 pages
   * of log). A `:memory:` database has none.
   */
  readonly checkpointIntervalMs?: number;
}
