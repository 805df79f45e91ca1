/**
 * @module The registry in SQLite: one table, `registry_entries`, keyed by `(kind, name)`,
 * with schema, metadata and statistics as JSON. Several processes may share the file (WAL):
 * every read-modify-write (`update`, `recordCall`, `ensure`) is one `BEGIN IMMEDIATE`
 * transaction, so calls counted by two processes at once are all counted.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { systemClock, type Clock } from '../context/clock.js';
import type { JsonSchema } from '../tools/json-schema.js';
import { settle } from '../store/sqlite/sqlite-turn-commit.js';
import {
  checkEntryCall,
  checkEntryKind,
  checkEntryPatch,
  checkNewEntry,
  compareEntries,
  entryNotFound,
  entryTaken,
  newRegistryEntry,
  nowIso,
  patchEntry,
} from './registry-entries.js';
import {
  countCall,
  ENTRY_KINDS,
  type EntryCall,
  type EntryHealth,
  type EntryKind,
  type EntryPatch,
  type EntryStats,
  type NewEntry,
  type Registry,
  type RegistryEntry,
} from './registry.js';

/** Options of {@link createSqliteRegistry}. */
export interface SqliteRegistryOptions {
  /** The time of `registeredAt` and `updatedAt`. Default {@link systemClock}. */
  readonly clock?: Clock;
}

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS registry_entries (
    kind          TEXT NOT NULL,
    name          TEXT NOT NULL,
    description   TEXT NOT NULL,
    schema        TEXT,
    metadata      TEXT NOT NULL,
    enabled       INTEGER NOT NULL,
    health        TEXT NOT NULL,
    stats         TEXT NOT NULL,
    registered_at TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    PRIMARY KEY (kind, name)
  ) WITHOUT ROWID;
`;

/** A row of `registry_entries`. */
interface Row {
  kind: string;
  name: string;
  description: string;
  schema: string | null;
  metadata: string;
  enabled: number;
  health: string;
  stats: string;
  registered_at: string;
  updated_at: string;
}

function fromRow(r: Row): RegistryEntry {
  return {
    name: r.name,
    kind: r.kind as EntryKind,
    description: r.description,
    schema: r.schema === null ? null : (JSON.parse(r.schema) as JsonSchema),
    metadata: JSON.parse(r.metadata) as Record<string, unknown>,
    enabled: r.enabled === 1,
    health: r.health as EntryHealth,
    stats: JSON.parse(r.stats) as EntryStats,
    registeredAt: r.registered_at,
    updatedAt: r.updated_at,
  };
}

function toRow(e: RegistryEntry): Row {
  return {
    kind: e.kind,
    name: e.name,
    description: e.description,
    schema: e.schema === null ? null : JSON.stringify(e.schema),
    metadata: JSON.stringify(e.metadata),
    enabled: e.enabled ? 1 : 0,
    health: e.health,
    stats: JSON.stringify(e.stats),
    registered_at: e.registeredAt,
    updated_at: e.updatedAt,
  };
}

/**
 * A {@link Registry} in a SQLite file. Entries are read from the file at each call, so two
 * registries (or processes) on one file see each other's writes. Use
 * {@link createSqliteRegistry} to make one.
 */
export class SqliteRegistry implements Registry {
  /** The database it reads and writes. */
  readonly db: Database.Database;
  readonly #owned: boolean;
  readonly #clock: Clock;
  readonly #insert: Database.Statement<[Row]>;
  readonly #get: Database.Statement<[{ kind: string; name: string }], Row>;
  readonly #all: Database.Statement<[], Row>;
  readonly #discoverable: Database.Statement<[], Row>;
  readonly #discoverableOf: Database.Statement<[string], Row>;
  readonly #replace: Database.Statement<[Row]>;
  readonly #setStats: Database.Statement<[{ kind: string; name: string; stats: string }]>;
  readonly #ensure: (entry: NewEntry) => RegistryEntry;
  readonly #update: (name: string, kind: EntryKind, patch: EntryPatch) => RegistryEntry;
  readonly #recordCall: (name: string, kind: EntryKind, call: EntryCall) => RegistryEntry;

  /** `owned`: whether {@link SqliteRegistry.close} closes `db` (it opened it). */
  constructor(db: Database.Database, owned: boolean, options: SqliteRegistryOptions = {}) {
    this.db = db;
    this.#owned = owned;
    this.#clock = options.clock ?? systemClock;
    db.exec(SCHEMA);
    this.#insert = db.prepare(
      `INSERT INTO registry_entries
         (kind, name, description, schema, metadata, enabled, health, stats, registered_at, updated_at)
       VALUES
         (@kind, @name, @description, @schema, @metadata, @enabled, @health, @stats, @registered_at, @updated_at)
       ON CONFLICT (kind, name) DO NOTHING`,
    );
    this.#get = db.prepare('SELECT * FROM registry_entries WHERE kind = @kind AND name = @name');
    this.#all = db.prepare('SELECT * FROM registry_entries');
    const discoverable = "enabled = 1 AND health <> 'unavailable'";
    this.#discoverable = db.prepare(`SELECT * FROM registry_entries WHERE ${discoverable}`);
    this.#discoverableOf = db.prepare(
      `SELECT * FROM registry_entries WHERE kind = ? AND ${discoverable}`,
    );
    this.#replace = db.prepare(
      `UPDATE registry_entries
         SET description = @description, schema = @schema, metadata = @metadata,
             enabled = @enabled, health = @health, updated_at = @updated_at
       WHERE kind = @kind AND name = @name`,
    );
    this.#setStats = db.prepare(
      'UPDATE registry_entries SET stats = @stats WHERE kind = @kind AND name = @name',
    );

    // Each read-modify-write takes the write lock before it reads (`BEGIN IMMEDIATE`): no
    // other connection can change the row between the read and the write.
    const ensure = db.transaction((entry: NewEntry): RegistryEntry => {
      this.#insert.run(toRow(newRegistryEntry(entry, nowIso(this.#clock))));
      return this.#read(entry.name, entry.kind) as RegistryEntry;
    });
    this.#ensure = (entry) => ensure.immediate(entry);
    const update = db.transaction((name: string, kind: EntryKind, patch: EntryPatch) => {
      const stored = this.#read(name, kind);
      if (!stored) throw entryNotFound(name, kind);
      const updated = patchEntry(stored, patch, nowIso(this.#clock));
      this.#replace.run(toRow(updated));
      return updated;
    });
    this.#update = (name, kind, patch) => update.immediate(name, kind, patch);
    const recordCall = db.transaction((name: string, kind: EntryKind, call: EntryCall) => {
      const stored = this.#read(name, kind);
      if (!stored) throw entryNotFound(name, kind);
      const updated = { ...stored, stats: countCall(stored.stats, call) };
      this.#setStats.run({ kind, name, stats: JSON.stringify(updated.stats) });
      return updated;
    });
    this.#recordCall = (name, kind, call) => recordCall.immediate(name, kind, call);
  }

  register(entry: NewEntry): Promise<RegistryEntry> {
    return settle(() => {
      checkNewEntry('Registry.register', entry);
      const created = newRegistryEntry(entry, nowIso(this.#clock));
      if (this.#insert.run(toRow(created)).changes === 0) throw entryTaken(entry);
      return created;
    });
  }

  ensure(entry: NewEntry): Promise<RegistryEntry> {
    return settle(() => {
      checkNewEntry('Registry.ensure', entry);
      return this.#ensure(entry);
    });
  }

  discover(kind?: EntryKind): Promise<RegistryEntry[]> {
    return settle(() => {
      if (kind === undefined) return this.#sorted(this.#discoverable.all());
      checkEntryKind('Registry.discover', kind);
      return this.#sorted(this.#discoverableOf.all(kind));
    });
  }

  list(): Promise<RegistryEntry[]> {
    return settle(() => this.#sorted(this.#all.all()));
  }

  resolve(name: string, kind?: EntryKind): Promise<RegistryEntry | null> {
    return settle(() => {
      if (kind !== undefined) checkEntryKind('Registry.resolve', kind);
      for (const k of kind === undefined ? ENTRY_KINDS : [kind]) {
        const found = this.#read(name, k);
        if (found) return found;
      }
      return null;
    });
  }

  update(name: string, kind: EntryKind, patch: EntryPatch): Promise<RegistryEntry> {
    return settle(() => {
      checkEntryKind('Registry.update', kind);
      checkEntryPatch('Registry.update', patch);
      return this.#update(name, kind, patch);
    });
  }

  recordCall(name: string, kind: EntryKind, call: EntryCall): Promise<RegistryEntry> {
    return settle(() => {
      checkEntryKind('Registry.recordCall', kind);
      checkEntryCall('Registry.recordCall', call);
      return this.#recordCall(name, kind, call);
    });
  }

  /** Closes the database if this registry opened it; a database it was given stays open. */
  close(): Promise<void> {
    return settle(() => {
      if (this.#owned && this.db.open) this.db.close();
    });
  }

  #read(name: string, kind: EntryKind): RegistryEntry | null {
    const row = this.#get.get({ kind, name });
    return row ? fromRow(row) : null;
  }

  // Sorted here rather than by SQL: SQLite orders text by UTF-8 bytes, JavaScript by UTF-16
  // code units, and every registry must order names the same way.
  #sorted(rows: readonly Row[]): RegistryEntry[] {
    return rows.map(fromRow).sort(compareEntries);
  }
}

/**
 * A {@link Registry} in SQLite. Given a path it opens the file (creating its folder; WAL
 * mode, a 5 s busy timeout) and closes it on `close()`; `':memory:'` keeps everything in
 * memory. Given an open database it only adds its table, and leaves the database open.
 *
 * @example
 * const registry = createSqliteRegistry('./.axon/registry.db');
 * await registry.ensure({ name: 'billing', kind: 'agent', description: 'Invoices and refunds' });
 * await registry.close();
 */
export function createSqliteRegistry(
  path: string | Database.Database,
  options: SqliteRegistryOptions = {},
): SqliteRegistry {
  if (typeof path !== 'string') {
    if (!(path instanceof Database)) {
      throw new TypeError(
        'createSqliteRegistry: path must be a file path or a better-sqlite3 database',
      );
    }
    return new SqliteRegistry(path, false, options);
  }
  if (path === '') throw new TypeError('createSqliteRegistry: path must be a non-empty string');
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('busy_timeout = 5000');
    return new SqliteRegistry(db, true, options);
  } catch (err) {
    db.close();
    throw err;
  }
}
