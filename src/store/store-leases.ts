/**
 * @module Leases (a key held by one owner until it lets go or stops renewing it), as a
 * store may keep them so that every process opening it sees them: the SQLite store's, in a
 * table of its file (`sqliteLeases`). The runtime's own and the fleet's are in
 * `runtime/leases.ts`.
 */
import type Database from 'better-sqlite3';

/** Keys held by owners for a time. */
export interface Leases {
  /**
   * Takes `key` for `owner` for `ttlMs`: true when it was free, had expired, or was
   * `owner`'s already (then it is renewed); false while another owner holds it.
   */
  acquire(key: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Lets `key` go if `owner` holds it; nothing otherwise. */
  release(key: string, owner: string): Promise<void>;
}

/**
 * Leases in the `leases` table of a SQLite database, each change made by `write` (in the
 * store's transaction of the turn) and settled once `flush` says it is committed: another
 * process sees a lease as soon as it is told it holds it. Times are the wall clock's, as
 * every process on one file shares it.
 */
export function sqliteLeases(
  db: Database.Database,
  write: <T>(fn: () => T) => Promise<T>,
  flush: () => Promise<void> | null,
): Leases {
  const take = db.prepare(
    `INSERT INTO leases (key, owner, until) VALUES (?, ?, ?)
     ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, until = excluded.until
     WHERE leases.owner = excluded.owner OR leases.until <= ?`,
  );
  const drop = db.prepare('DELETE FROM leases WHERE key = ? AND owner = ?');
  return {
    acquire: async (key, owner, ttlMs) => {
      const held = await write(() => {
        const now = Date.now();
        return take.run(key, owner, now + ttlMs, now).changes === 1;
      });
      await flush();
      return held;
    },
    release: async (key, owner) => {
      await write(() => drop.run(key, owner));
      await flush();
    },
  };
}
