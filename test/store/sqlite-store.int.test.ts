import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { ConflictError } from '../../src/errors/conflict-error.js';
import { MIGRATIONS } from '../../src/store/sqlite-migrations.js';
import { migrate, sqliteStore } from '../../src/store/sqlite-store.js';
import { makeRun, makeStep, narration } from '../support/records.js';
import { describeRunStore } from './run-store.conformance.js';

const dir = mkdtempSync(join(tmpdir(), 'axon-sqlite-'));
let n = 0;
const file = (): string => join(dir, `store-${++n}.db`);

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describeRunStore('sqlite (a file, WAL)', () => sqliteStore(file()));

describe('SqliteRunStore', () => {
  it('keeps runs, steps and logs across a reopen of the same file', async () => {
    const path = file();
    const first = sqliteStore(path);
    const run = makeRun();
    const step = makeStep(run.run_id);
    await first.createRun(run);
    await first.createStep(step);
    await first.appendEvents([
      narration(step.step_id, 1, 'one'),
      narration(step.step_id, 2, 'two'),
    ]);
    await first.close();

    const second = sqliteStore(path);
    expect(await second.getRun(run.run_id)).toEqual(run);
    expect(await second.getStep(step.step_id)).toEqual(step);
    expect((await second.readEvents(step.step_id, 1)).map((e) => e.seq)).toEqual([2]);
    // The log goes on where it stopped.
    await expect(second.appendEvents([narration(step.step_id, 2, 'again')])).rejects.toBeInstanceOf(
      ConflictError,
    );
    await second.appendEvents([narration(step.step_id, 3, 'three')]);
    await second.close();
  });

  it('runs in WAL mode and records its migrations', async () => {
    const store = sqliteStore(file());
    expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(store.schemaVersion).toBe(MIGRATIONS.length);
    const applied = store.db
      .prepare('SELECT version FROM schema_migrations ORDER BY version')
      .all();
    expect(applied).toEqual(MIGRATIONS.map((m) => ({ version: m.version })));
    await store.close();
  });

  it('refuses a database written by a newer schema, naming the versions', async () => {
    const path = file();
    const newer = sqliteStore(path, {
      migrations: [
        ...MIGRATIONS,
        { version: 99, name: 'from the future', sql: 'CREATE TABLE future (x)' },
      ],
    });
    await newer.close();
    expect(() => sqliteStore(path)).toThrow(/schema version 99, newer than this axon knows/);
  });

  it('migrates a file of an older schema in place: its runs gain the run settings, with their defaults', async () => {
    const path = file();
    // A file written by the axon of schema 2 (its store could not even prepare today's statements).
    const older = new Database(path);
    expect(
      migrate(
        older,
        MIGRATIONS.filter((m) => m.version <= 2),
      ),
    ).toBe(2);
    const run = makeRun();
    older
      .prepare(
        `INSERT INTO runs (run_id, flow_id, mode, seed, budgets, status, budget_usage, provenance, entry, trace_id, user_id, created_at, ended_at)
         VALUES (?, NULL, 'record', NULL, '{}', 'running', ?, NULL, 'old', 't', NULL, ?, NULL)`,
      )
      .run(run.run_id, JSON.stringify(run.budget_usage), run.created_at);
    older.close();

    const store = sqliteStore(path);
    expect(store.schemaVersion).toBe(MIGRATIONS.length);
    expect(await store.getRun(run.run_id)).toMatchObject({
      run_id: run.run_id,
      policy: {},
      pool_policy: {},
      fs_policy: null,
      replay_of: null,
      cancel_on_disconnect: false,
    });
    expect(await store.listRecordings(run.run_id)).toEqual([]);
    await store.close();
  });

  it('creates the folder of a new file', async () => {
    const store = sqliteStore(join(dir, 'nested', 'deeper', 'axon.db'));
    await store.createRun(makeRun());
    await store.close();
  });
});
