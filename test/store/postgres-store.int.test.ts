/**
 * The PostgreSQL store (issue 32, first step): the RunStore conformance suite against the
 * server on 127.0.0.1:5432 (`AXON_TEST_POSTGRES` to name another), each store in a schema of
 * its own, dropped after; its migrations, and a schema newer than the code refused.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { POSTGRES_SCHEMA_VERSION, postgresStore } from '../../src/store/postgres-store.js';
import { makeRun } from '../support/records.js';
import { describeRunStore } from './run-store.conformance.js';

const url = process.env['AXON_TEST_POSTGRES'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const admin = new pg.Pool({ connectionString: url, max: 2 });
const schemas: string[] = [];
const schema = (): string => {
  const s = `axon_test_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  schemas.push(s);
  return s;
};

afterAll(async () => {
  for (const s of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  await admin.end();
});

describeRunStore('postgres (a schema per store)', () =>
  postgresStore({ connection: url, schema: schema() }),
);

describe('the PostgreSQL store', () => {
  it('applies its migrations once, records the version, and opens the same schema again', async () => {
    const s = schema();
    const first = postgresStore({ connection: url, schema: s });
    const run = makeRun();
    await first.createRun(run);
    await first.close();
    const again = postgresStore({ connection: url, schema: s });
    expect(await again.getRun(run.run_id)).toEqual(run);
    await again.close();
    const { rows } = await admin.query(
      `SELECT value FROM "${s}".meta WHERE key = 'schema_version'`,
    );
    expect(rows).toEqual([{ value: String(POSTGRES_SCHEMA_VERSION) }]);
  });

  it('refuses a schema newer than the code knows, touching nothing', async () => {
    const s = schema();
    await admin.query(`CREATE SCHEMA "${s}"`);
    await admin.query(`CREATE TABLE "${s}".meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
    await admin.query(`INSERT INTO "${s}".meta VALUES ('schema_version', '99')`);
    const store = postgresStore({ connection: url, schema: s });
    await expect(store.getRun('run_x')).rejects.toThrow(/version 99, newer than this axon knows/);
    await store.close();
  });

  it('refuses a schema name that is not a plain identifier', () => {
    expect(() => postgresStore({ connection: url, schema: 'a"; DROP' })).toThrow(RangeError);
  });
});
