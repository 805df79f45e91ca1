/**
 * @module The PostgreSQL store's schema and its migrations: versioned in `<schema>.meta`,
 * applied at start in one transaction under an advisory lock (two processes opening one
 * schema at once apply them once), a schema newer than this code refused.
 */
import type pg from 'pg';
import { ACTOR_OPS, actorFunctions, actorTables } from './postgres-actor-functions.js';
import { tables2, tables3, writeFunctions } from './postgres-functions.js';
import { heldFunctions, tables5 } from './postgres-held-functions.js';

/** One statement on the migrating transaction's connection. */
export type Query = (text: string, values?: readonly unknown[]) => Promise<pg.QueryResult>;

/** The schema version this code writes. */
export const POSTGRES_SCHEMA_VERSION = 5;

export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** The tables of schema version 1, in the schema `s` (a checked identifier). */
function migration1(s: string): string {
  return `
    CREATE TABLE ${s}.runs (seq BIGSERIAL UNIQUE, run_id TEXT PRIMARY KEY, status TEXT NOT NULL,
      user_id TEXT, entry TEXT, record JSON NOT NULL);
    CREATE INDEX ON ${s}.runs (status, seq);
    CREATE TABLE ${s}.steps (seq BIGSERIAL UNIQUE, step_id TEXT PRIMARY KEY, run_id TEXT NOT NULL,
      client_token TEXT, last_seq INTEGER NOT NULL DEFAULT 0, record JSON NOT NULL);
    CREATE INDEX ON ${s}.steps (run_id, seq);
    CREATE UNIQUE INDEX ON ${s}.steps (run_id, client_token) WHERE client_token IS NOT NULL;
    CREATE TABLE ${s}.events (step_id TEXT NOT NULL, seq INTEGER NOT NULL, event JSON NOT NULL,
      PRIMARY KEY (step_id, seq));
    CREATE TABLE ${s}.flows (flow_id TEXT PRIMARY KEY, hash TEXT NOT NULL UNIQUE, record JSON NOT NULL);
    CREATE TABLE ${s}.facts (seq BIGSERIAL PRIMARY KEY, fact_id TEXT NOT NULL UNIQUE,
      run_id TEXT NOT NULL, flow_id TEXT, record JSON NOT NULL);
    CREATE INDEX ON ${s}.facts (run_id, seq);
    CREATE INDEX ON ${s}.facts (flow_id, seq);
    CREATE TABLE ${s}.checkpoints (seq BIGSERIAL PRIMARY KEY, run_id TEXT NOT NULL, record JSON NOT NULL);
    CREATE INDEX ON ${s}.checkpoints (run_id, seq);
    CREATE TABLE ${s}.recordings (seq BIGSERIAL UNIQUE, run_id TEXT NOT NULL, key TEXT NOT NULL,
      record JSON NOT NULL, PRIMARY KEY (run_id, key));
    CREATE TABLE ${s}.approvals (seq BIGSERIAL UNIQUE, approval_id TEXT PRIMARY KEY,
      run_id TEXT NOT NULL, record JSON NOT NULL);
    CREATE INDEX ON ${s}.approvals (run_id, seq);`;
}

/**
 * Brings schema `schema` (quoted as `s`) to {@link POSTGRES_SCHEMA_VERSION} inside `q`'s
 * transaction. The tables of each version it lacks are added in place, keeping every row (a
 * schema of version 4 has its steps' events moved into chunks); the functions (code) are
 * replaced.
 */
export async function migrate(q: Query, schema: string, s: string): Promise<void> {
  await q('SELECT pg_advisory_xact_lock(hashtext($1))', [`axon-migrate:${schema}`]);
  await q(`CREATE SCHEMA IF NOT EXISTS ${s}`);
  await q(`CREATE TABLE IF NOT EXISTS ${s}.meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
  const { rows } = await q(`SELECT value FROM ${s}.meta WHERE key = 'schema_version'`);
  const at = Number((rows[0] as { value?: string } | undefined)?.value ?? 0);
  if (at > POSTGRES_SCHEMA_VERSION) {
    throw new RangeError(
      `postgresStore: schema ${schema} is at version ${at}, newer than this axon knows (${POSTGRES_SCHEMA_VERSION}): upgrade axon`,
    );
  }
  if (at >= POSTGRES_SCHEMA_VERSION) return;
  if (at < 1) await q(migration1(s));
  if (at < 2) await q(tables2(s));
  if (at < 3) await q(tables3(s));
  // Version 4: durable agents (issue 46).
  if (at < 4) await q(actorTables(s));
  // Version 5: a step's log in its row and its chunks (issue 47).
  if (at < 5) await q(tables5(s));
  await q(writeFunctions(s, ACTOR_OPS));
  await q(actorFunctions(s));
  await q(heldFunctions(s));
  await q(
    `INSERT INTO ${s}.meta (key, value) VALUES ('schema_version', $1)
         ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`,
    [String(POSTGRES_SCHEMA_VERSION)],
  );
}
