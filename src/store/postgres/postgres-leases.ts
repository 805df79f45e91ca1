/**
 * @module The PostgreSQL store's leases, in its `leases` table: every process opening the
 * schema sees them (a workflow engine's threads are held there, as in the SQLite store's
 * file). Times are the server's clock, so the hosts' clocks need not agree.
 */
import type pg from 'pg';
import type { Leases } from '../store-leases.js';

/** Leases in `<s>.leases`, each statement run once `settled` (the store's earlier writes). */
export function postgresLeases(
  query: (text: string, values: readonly unknown[]) => Promise<pg.QueryResult>,
  s: string,
): Leases {
  const now = `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`;
  return {
    acquire: async (key, owner, ttlMs) => {
      if (!(Number.isFinite(ttlMs) && ttlMs > 0)) {
        throw new RangeError(`leases: ttlMs must be a number > 0, got ${ttlMs}`);
      }
      const { rowCount } = await query(
        `INSERT INTO ${s}.leases (key, owner, until) VALUES ($1, $2, ${now} + $3)
         ON CONFLICT (key) DO UPDATE SET owner = EXCLUDED.owner, until = EXCLUDED.until
         WHERE ${s}.leases.owner = EXCLUDED.owner OR ${s}.leases.until <= ${now}`,
        [key, owner, Math.ceil(ttlMs)],
      );
      return rowCount === 1;
    },
    release: async (key, owner) => {
      await query(`DELETE FROM ${s}.leases WHERE key = $1 AND owner = $2`, [key, owner]);
    },
  };
}
