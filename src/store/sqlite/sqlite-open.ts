/**
 * @module Opening a SQLite store's database: its folder made, WAL mode, the sync level its
 * `durability` asks for, foreign keys, the busy timeout, the schema migrated to the current
 * version, and the WAL checkpointed off the event loop (see `sqlite-checkpointer.ts`).
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { FALLBACK_AUTOCHECKPOINT_PAGES, WalCheckpointer } from './sqlite-checkpointer.js';
import { migrate } from './sqlite-migrations.js';
import type { SqliteDurability, SqliteStoreOptions } from './sqlite-statements.js';

/** The durability of a store opened without one (see `SqliteStoreOptions.durability`). */
export const DEFAULT_SQLITE_DURABILITY: SqliteDurability = 'process';

/** The `synchronous` level of each durability: NORMAL (1) and FULL (2). */
const SYNCHRONOUS: Readonly<Record<SqliteDurability, 'NORMAL' | 'FULL'>> = {
  process: 'NORMAL',
  power: 'FULL',
};

/** An open, migrated database. */
export interface OpenedSqlite {
  readonly db: Database.Database;
  /** The schema version after migrating. */
  readonly schemaVersion: number;
  /** Checkpoints the WAL in a thread of its own (file stores, unless turned off). */
  readonly checkpointer: WalCheckpointer | null;
  /** What a commit survives, as applied to the connection (`PRAGMA synchronous`). */
  readonly durability: SqliteDurability;
}

/** The `durability` option, checked: the default when absent. */
function durabilityOf(options: SqliteStoreOptions): SqliteDurability {
  // Only an absent option means the default: `null` is refused like any other wrong value.
  const value: unknown =
    options.durability === undefined ? DEFAULT_SQLITE_DURABILITY : options.durability;
  if (typeof value !== 'string') {
    throw new TypeError(
      `sqliteStore: durability must be 'process' or 'power', got ${value === null ? 'null' : typeof value}`,
    );
  }
  if (!Object.hasOwn(SYNCHRONOUS, value)) {
    throw new RangeError(
      `sqliteStore: durability must be 'process' or 'power', got ${JSON.stringify(value)}`,
    );
  }
  return value as SqliteDurability;
}

/**
 * Opens (or creates, with its folder) the database at `path` and migrates it. Throws, before
 * touching the file, `RangeError` for a bad `checkpointIntervalMs` and `TypeError` /
 * `RangeError` for a bad `durability`; and the migration's error (the connection closed) when
 * the file cannot be brought to this version's schema.
 */
export function openSqlite(path: string, options: SqliteStoreOptions): OpenedSqlite {
  const every = options.checkpointIntervalMs ?? 25;
  if (!(Number.isFinite(every) && every >= 0)) {
    throw new RangeError(
      `sqliteStore: checkpointIntervalMs must be a number >= 0, got ${String(every)}`,
    );
  }
  const durability = durabilityOf(options);
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  // Per connection, not stored in the file: every store sets its own.
  db.pragma(`synchronous = ${SYNCHRONOUS[durability]}`);
  db.pragma('foreign_keys = ON');
  db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
  let schemaVersion: number;
  try {
    schemaVersion = migrate(db, options.migrations);
  } catch (err) {
    db.close();
    throw err;
  }
  let checkpointer: WalCheckpointer | null = null;
  if (path !== ':memory:' && every > 0) {
    db.pragma(`wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`);
    checkpointer = new WalCheckpointer(path, every, () => {
      // The thread failed: checkpoint in commits again, as SQLite does by default.
      if (db.open) db.pragma('wal_autocheckpoint = 1000');
    });
  }
  return { db, schemaVersion, checkpointer, durability };
}
