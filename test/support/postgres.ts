/**
 * @module Test helper: the tests' PostgreSQL server (127.0.0.1:5432, or `AXON_TEST_POSTGRES`),
 * a schema name per test file, and dropping the schemas a file made.
 */
import pg from 'pg';

/** The tests' PostgreSQL server. */
export const POSTGRES_URL =
  process.env['AXON_TEST_POSTGRES'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A schema name for `name` in this process (letters, digits and `_` only). */
export function testSchema(name: string): string {
  return `axon_test_${name.replace(/[^a-z0-9]/gi, '_').toLowerCase()}_${process.pid}`;
}

/** `text` on the tests' server, on a connection of its own. */
export async function sql<T extends pg.QueryResultRow>(
  text: string,
  values: readonly unknown[] = [],
): Promise<T[]> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    return (await client.query<T>(text, values as unknown[])).rows;
  } finally {
    await client.end();
  }
}

/** Drops `schemas` and everything in them. */
export async function dropSchemas(schemas: Iterable<string>): Promise<void> {
  for (const s of schemas) await sql(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
}
