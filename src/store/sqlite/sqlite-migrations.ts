/**
 * @module The SQLite store's schema, as numbered migrations. Each runs once, in order, in a
 * transaction; the `schema_migrations` table records which have run. Never edit a migration
 * that has shipped: add the next one.
 */

import type Database from 'better-sqlite3';
import { ConflictError } from '../../errors/conflict-error.js';

/** One schema change. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** Every migration, oldest first. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'runs, steps and step event logs',
    sql: `
      CREATE TABLE runs (
        run_id       TEXT PRIMARY KEY,
        flow_id      TEXT,
        mode         TEXT NOT NULL,
        seed         INTEGER,
        budgets      TEXT NOT NULL,
        status       TEXT NOT NULL,
        budget_usage TEXT NOT NULL,
        provenance   TEXT,
        entry        TEXT NOT NULL,
        trace_id     TEXT NOT NULL,
        user_id      TEXT,
        created_at   TEXT NOT NULL,
        ended_at     TEXT
      );
      CREATE TABLE steps (
        step_id        TEXT PRIMARY KEY,
        run_id         TEXT NOT NULL REFERENCES runs (run_id),
        type           TEXT NOT NULL,
        name           TEXT NOT NULL,
        parent_step_id TEXT,
        actor_path     TEXT NOT NULL,
        client_token   TEXT,
        input          TEXT,
        placement      TEXT NOT NULL,
        status         TEXT NOT NULL,
        budget_usage   TEXT NOT NULL,
        provenance     TEXT,
        output         TEXT,
        error          TEXT,
        created_at     TEXT NOT NULL,
        started_at     TEXT,
        ended_at       TEXT
      );
      -- A run's steps in creation order: by rowid, which grows with each insert, in any
      -- process sharing the file.
      CREATE INDEX steps_by_run ON steps (run_id);
      CREATE UNIQUE INDEX steps_by_client_token ON steps (run_id, client_token)
        WHERE client_token IS NOT NULL;
      CREATE TABLE events (
        step_id TEXT NOT NULL REFERENCES steps (step_id),
        seq     INTEGER NOT NULL,
        body    TEXT NOT NULL,
        PRIMARY KEY (step_id, seq)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 2,
    name: 'flows, facts and checkpoints',
    sql: `
      CREATE TABLE flows (
        flow_id    TEXT PRIMARY KEY,
        hash       TEXT NOT NULL UNIQUE,
        name       TEXT NOT NULL,
        ast        TEXT,
        tools      TEXT NOT NULL,
        config     TEXT NOT NULL,
        labels     TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX runs_by_flow ON runs (flow_id);
      -- Append order is rowid order.
      CREATE TABLE facts (
        fact_id         TEXT PRIMARY KEY,
        run_id          TEXT NOT NULL REFERENCES runs (run_id),
        type            TEXT NOT NULL,
        schema_uri      TEXT,
        data            TEXT,
        emitted_by_step TEXT,
        ts              INTEGER NOT NULL
      );
      CREATE INDEX facts_by_run ON facts (run_id);
      -- NERVE-4004: facts are append-only, whoever writes to the file.
      CREATE TRIGGER facts_no_update BEFORE UPDATE ON facts
        BEGIN SELECT RAISE(ABORT, 'facts are append-only'); END;
      CREATE TRIGGER facts_no_delete BEFORE DELETE ON facts
        BEGIN SELECT RAISE(ABORT, 'facts are append-only'); END;
      CREATE TABLE checkpoints (
        checkpoint_id TEXT PRIMARY KEY,
        run_id        TEXT NOT NULL REFERENCES runs (run_id),
        step_id       TEXT,
        label         TEXT,
        snapshots     TEXT NOT NULL,
        log_offsets   TEXT NOT NULL,
        ts            INTEGER NOT NULL
      );
      CREATE INDEX checkpoints_by_run ON checkpoints (run_id);
    `,
  },
  {
    version: 3,
    name: 'run settings (NERVE-4002) and call recordings',
    sql: `
      ALTER TABLE runs ADD COLUMN policy TEXT NOT NULL DEFAULT '{}';
      ALTER TABLE runs ADD COLUMN pool_policy TEXT NOT NULL DEFAULT '{}';
      ALTER TABLE runs ADD COLUMN fs_policy TEXT;
      ALTER TABLE runs ADD COLUMN replay_of TEXT;
      ALTER TABLE runs ADD COLUMN cancel_on_disconnect INTEGER NOT NULL DEFAULT 0;
      CREATE TABLE recordings (
        run_id       TEXT NOT NULL REFERENCES runs (run_id),
        call_key     TEXT NOT NULL,
        client_token TEXT NOT NULL,
        actor_path   TEXT NOT NULL,
        seq          INTEGER NOT NULL,
        kind         TEXT NOT NULL,
        name         TEXT NOT NULL,
        inputs       TEXT NOT NULL,
        output       TEXT,
        ts           INTEGER NOT NULL,
        PRIMARY KEY (run_id, call_key)
      );
    `,
  },
  {
    version: 4,
    name: 'approvals',
    sql: `
      CREATE TABLE approvals (
        approval_id TEXT PRIMARY KEY,
        run_id      TEXT NOT NULL REFERENCES runs (run_id),
        status      TEXT NOT NULL,
        body        TEXT NOT NULL
      );
      CREATE INDEX approvals_by_run ON approvals (run_id);
    `,
  },
  {
    version: 5,
    name: 'compact run and step rows, step logs in chunks, step budgets',
    // Runs and steps keep their queried fields as columns and the rest as a JSON array (the
    // order of RUN_LAYOUT and STEP_LAYOUT in sqlite-rows.ts); a step's log is kept in chunks,
    // one row per step per transaction, each event without its step_id and seq. Steps refer
    // to their run, and chunks to their step, by rowid: their indexes hold small integers,
    // which a commit rewrites far fewer pages of than ids. Rowids are kept, so runs and steps
    // stay in creation order. Tables are rebuilt the way SQLite's documentation says
    // (foreign keys off: see migrate()).
    sql: `
      CREATE TABLE runs_5 (
        run_ref INTEGER PRIMARY KEY,
        run_id  TEXT NOT NULL UNIQUE,
        flow_id TEXT,
        status  TEXT NOT NULL,
        record  TEXT NOT NULL
      );
      INSERT INTO runs_5 (run_ref, run_id, flow_id, status, record)
        SELECT rowid, run_id, flow_id, status, json_array(
          mode, seed, json(budgets), entry, trace_id, user_id, created_at, json(policy),
          json(pool_policy), json(fs_policy), replay_of,
          json(CASE WHEN cancel_on_disconnect THEN 'true' ELSE 'false' END),
          json(budget_usage), json(provenance), ended_at)
        FROM runs;
      DROP TABLE runs;
      ALTER TABLE runs_5 RENAME TO runs;
      -- Most runs have no flow: they take no room in the index.
      CREATE INDEX runs_by_flow ON runs (flow_id) WHERE flow_id IS NOT NULL;

      CREATE TABLE steps_5 (
        step_ref     INTEGER PRIMARY KEY,
        step_id      TEXT NOT NULL UNIQUE,
        run_ref      INTEGER NOT NULL REFERENCES runs (run_ref),
        client_token TEXT,
        record       TEXT NOT NULL
      );
      INSERT INTO steps_5 (step_ref, step_id, run_ref, client_token, record)
        SELECT s.rowid, s.step_id, r.run_ref, s.client_token, json_array(
          s.type, s.name, s.parent_step_id, json(s.actor_path), json(s.input), s.placement,
          s.created_at, json('{}'), s.status, json(s.budget_usage), json(s.provenance),
          json(s.output), json(s.error), s.started_at, s.ended_at)
        FROM steps s JOIN runs r ON r.run_id = s.run_id;
      DROP TABLE steps;
      ALTER TABLE steps_5 RENAME TO steps;
      CREATE INDEX steps_by_run ON steps (run_ref);
      CREATE UNIQUE INDEX steps_by_client_token ON steps (run_ref, client_token)
        WHERE client_token IS NOT NULL;

      -- A rowid table: chunks go in at its right edge and fill its pages (a table keyed by
      -- the step and seq split its pages in every commit).
      CREATE TABLE event_chunks (
        step_ref  INTEGER NOT NULL REFERENCES steps (step_ref),
        last_seq  INTEGER NOT NULL,
        first_seq INTEGER NOT NULL,
        events    TEXT NOT NULL
      );
      INSERT INTO event_chunks (step_ref, last_seq, first_seq, events)
        SELECT s.step_ref, e.seq, e.seq, json_array(json_remove(e.body, '$.step_id', '$.seq'))
        FROM events e JOIN steps s ON s.step_id = e.step_id ORDER BY s.step_ref, e.seq;
      DROP TABLE events;
      CREATE UNIQUE INDEX event_chunks_by_step ON event_chunks (step_ref, last_seq);
    `,
  },
  {
    version: 6,
    name: 'step placement decisions',
    // A step records where it was placed and why (PLACE-5001), at the end of its record
    // array (STEP_LAYOUT); steps stored before have none.
    sql: `UPDATE steps SET record = json_insert(record, '$[#]', NULL)
      WHERE json_array_length(record) = 15;`,
  },
  {
    version: 7,
    name: 'leases',
    // Leases every process on the file sees (a workflow engine's threads): `store-leases.ts`.
    sql: `CREATE TABLE leases (
        key TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        until INTEGER NOT NULL
      ) WITHOUT ROWID;`,
  },
  {
    version: 8,
    name: 'runs by status, user and entry',
    // Listings read a page from an index, not every run (`pageRuns`, `sqlite-run-pages.ts`).
    // A run's user and entry, fixed at its creation, become columns of their own (its
    // record keeps them too): an update of the record then leaves these indexes alone.
    sql: `ALTER TABLE runs ADD COLUMN user_id TEXT;
      ALTER TABLE runs ADD COLUMN entry TEXT;
      UPDATE runs SET user_id = json_extract(record, '$[5]'), entry = json_extract(record, '$[3]');
      CREATE INDEX runs_by_status ON runs (status, run_ref);
      CREATE INDEX runs_by_user ON runs (user_id, status, run_ref);
      CREATE INDEX runs_by_entry ON runs (entry, run_ref);`,
  },
  {
    version: 9,
    name: 'durable agents: actors, mailboxes, wakes and schedules',
    // Issue 46 (`sqlite-actors.ts`). An actor's state is JSON; its queried fields are
    // columns. Its mailbox holds its messages not ended, by step rowid (a message's step is
    // in the actor's run) and id (so that reading it needs none of the store's held rows
    // written), `queued` until taken. Wakes and schedules keep their record as
    // JSON beside the columns their indexes need: due times (one index of due wakes, not a
    // timer per sleeper), event names, fired ones.
    sql: `CREATE TABLE actors (
        actor_ref  INTEGER PRIMARY KEY,
        actor_id   TEXT NOT NULL UNIQUE,
        user_id    TEXT,
        name       TEXT NOT NULL,
        key        TEXT NOT NULL,
        run_id     TEXT NOT NULL,
        version    INTEGER NOT NULL,
        state      TEXT NOT NULL,
        status     TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX actors_by_user ON actors (user_id, actor_ref);
      CREATE INDEX actors_by_name ON actors (name, actor_ref);
      CREATE INDEX actors_by_key ON actors (key);
      CREATE INDEX actors_open ON actors (status, actor_id) WHERE status <> 'idle';
      CREATE TABLE mailbox (
        actor_ref INTEGER NOT NULL,
        step_ref  INTEGER NOT NULL,
        step_id   TEXT NOT NULL,
        queued    INTEGER NOT NULL,
        PRIMARY KEY (actor_ref, step_ref)
      ) WITHOUT ROWID;
      CREATE TABLE wakes (
        wake_id  TEXT PRIMARY KEY,
        actor_id TEXT NOT NULL,
        user_id  TEXT,
        kind     TEXT NOT NULL,
        step_id  TEXT,
        status   TEXT NOT NULL,
        due_at   INTEGER,
        event    TEXT,
        fired_at INTEGER,
        created  INTEGER NOT NULL,
        record   TEXT NOT NULL
      ) WITHOUT ROWID;
      CREATE INDEX wakes_due ON wakes (due_at) WHERE status = 'pending' AND due_at IS NOT NULL;
      CREATE INDEX wakes_by_event ON wakes (event, user_id, created)
        WHERE status = 'pending' AND event IS NOT NULL;
      CREATE INDEX wakes_fired ON wakes (fired_at) WHERE status = 'fired' AND kind <> 'reminder';
      CREATE INDEX wakes_by_actor ON wakes (actor_id);
      CREATE INDEX wakes_by_step ON wakes (step_id) WHERE step_id IS NOT NULL;
      CREATE TABLE schedules (
        schedule_ref INTEGER PRIMARY KEY,
        schedule_id  TEXT NOT NULL UNIQUE,
        user_id      TEXT,
        status       TEXT NOT NULL,
        next_at      INTEGER,
        record       TEXT NOT NULL
      );
      CREATE INDEX schedules_due ON schedules (next_at)
        WHERE status = 'active' AND next_at IS NOT NULL;
      CREATE INDEX schedules_by_user ON schedules (user_id, schedule_ref);`,
  },
  {
    version: 10,
    name: "a step's first log chunk in its row; a run's usage as columns",
    // Issue 47: a step is one record. The events a step's first transaction appends (all of
    // a short step's) go in its own row (`log`: the chunk's events, `log_last`: its last
    // seq; 0 with none), not in a row of `event_chunks`, which keeps the chunks appended in
    // later transactions. A run's usage is four columns, so a step's end adds to them
    // (`tokens_in = tokens_in + ?`) without reading the run; its place in the record (field
    // 12) is kept, as null. SQLite reads JSON numbers exactly, so the copy loses nothing.
    sql: `ALTER TABLE steps ADD COLUMN log TEXT;
      ALTER TABLE steps ADD COLUMN log_last INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE runs ADD COLUMN tokens_in INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE runs ADD COLUMN tokens_out INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE runs ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0;
      ALTER TABLE runs ADD COLUMN wall_ms REAL NOT NULL DEFAULT 0;
      UPDATE runs SET
        tokens_in = COALESCE(json_extract(record, '$[12].tokens_in'), 0),
        tokens_out = COALESCE(json_extract(record, '$[12].tokens_out'), 0),
        cost_usd = COALESCE(json_extract(record, '$[12].cost_usd'), 0),
        wall_ms = COALESCE(json_extract(record, '$[12].wall_ms'), 0),
        record = json_set(record, '$[12]', json('null'));`,
  },
];

/**
 * Applies the migrations the database has not had, each in a transaction. Refuses a
 * database that has had migrations this code does not know (a newer axon wrote it).
 */
export function migrate(
  db: Database.Database,
  migrations: readonly Migration[] = MIGRATIONS,
): number {
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
  );
  const applied = new Set(
    (db.prepare('SELECT version FROM schema_migrations').all() as { version: number }[]).map(
      (r) => r.version,
    ),
  );
  const known = new Set(migrations.map((m) => m.version));
  const unknown = [...applied].filter((v) => !known.has(v));
  if (unknown.length > 0) {
    throw new ConflictError(
      `the database has schema version ${Math.max(...unknown)}, newer than this axon knows (${Math.max(0, ...known)}); upgrade axon`,
      { details: { versions: unknown } },
    );
  }
  const record = db.prepare(
    'INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)',
  );
  const pending = [...migrations]
    .sort((a, b) => a.version - b.version)
    .filter((m) => !applied.has(m.version));
  // A migration that rebuilds a table drops the old one while other tables refer to it:
  // foreign keys are off meanwhile (they cannot change inside a transaction), and each
  // migration checks them before it commits.
  const foreignKeys = db.pragma('foreign_keys', { simple: true }) === 1;
  if (pending.length > 0 && foreignKeys) db.pragma('foreign_keys = OFF');
  try {
    for (const m of pending) {
      db.transaction(() => {
        db.exec(m.sql);
        const broken = db.pragma('foreign_key_check') as unknown[];
        if (broken.length > 0) {
          throw new ConflictError(
            `migration ${m.version} (${m.name}) would leave ${broken.length} rows whose references are broken`,
            { details: { version: m.version, rows: broken.slice(0, 10) } },
          );
        }
        record.run(m.version, m.name, new Date().toISOString());
      })();
    }
  } finally {
    if (pending.length > 0 && foreignKeys) db.pragma('foreign_keys = ON');
  }
  return Math.max(0, ...migrations.map((m) => m.version));
}
