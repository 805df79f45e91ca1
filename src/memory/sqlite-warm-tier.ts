/**
 * @module The warm tier in SQLite, the embedded default: episodes and facts in a table,
 * indexed by FTS5 and ranked by its BM25 (`ORDER BY rank`). A file under `./.axon/` by
 * default; several processes may share it (WAL).
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { words } from './bm25.js';
import type { Ranked, WarmItem, WarmKind, WarmTier } from './memory-types.js';

/** The default file of the embedded memory tiers. */
export const DEFAULT_MEMORY_PATH = './.axon/memory.db';

/** The words of `query` as an FTS5 query: each quoted, any of them; `null` for none. */
export function ftsQuery(query: string): string | null {
  const all = words(query);
  const unique = [...new Set(all)].slice(0, 64);
  return unique.length === 0 ? null : unique.map((w) => `"${w}"`).join(' OR ');
}

/** Opens (creating its folder) a SQLite file for memory, in WAL mode. */
export function openMemoryDb(path: string): Database.Database {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  return db;
}

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS warm_items (
    id      TEXT NOT NULL UNIQUE,
    key     TEXT NOT NULL,
    kind    TEXT NOT NULL,
    content TEXT NOT NULL,
    tags    TEXT NOT NULL,
    source  TEXT NOT NULL,
    ts      INTEGER NOT NULL
  );
  CREATE INDEX IF NOT EXISTS warm_by_key ON warm_items (key, kind);
  CREATE VIRTUAL TABLE IF NOT EXISTS warm_fts USING fts5(
    content, content = 'warm_items', content_rowid = 'rowid'
  );
  CREATE TRIGGER IF NOT EXISTS warm_items_ai AFTER INSERT ON warm_items BEGIN
    INSERT INTO warm_fts (rowid, content) VALUES (new.rowid, new.content);
  END;
  CREATE TABLE IF NOT EXISTS memory_marks (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
`;

interface Row {
  id: string;
  key: string;
  kind: string;
  content: string;
  tags: string;
  source: string;
  ts: number;
}

function fromRow(r: Row): WarmItem {
  return {
    id: r.id,
    key: r.key,
    kind: r.kind as WarmKind,
    content: r.content,
    tags: JSON.parse(r.tags) as string[],
    source: r.source,
    ts: r.ts,
  };
}

class SqliteWarmTier implements WarmTier {
  readonly name = 'sqlite';
  readonly #db: Database.Database;
  readonly #owned: boolean;
  readonly #insert: Database.Statement;
  readonly #list: Database.Statement;
  readonly #getMark: Database.Statement;
  readonly #setMark: Database.Statement;
  readonly #searches = new Map<number, Database.Statement>();

  constructor(db: Database.Database, owned: boolean) {
    this.#db = db;
    this.#owned = owned;
    db.exec(SCHEMA);
    this.#insert = db.prepare(
      `INSERT INTO warm_items (id, key, kind, content, tags, source, ts)
       VALUES (@id, @key, @kind, @content, @tags, @source, @ts) ON CONFLICT (id) DO NOTHING`,
    );
    this.#list = db.prepare('SELECT * FROM warm_items WHERE key = ? AND kind = ? ORDER BY rowid');
    this.#getMark = db.prepare('SELECT value FROM memory_marks WHERE name = ?');
    this.#setMark = db.prepare(
      `INSERT INTO memory_marks (name, value) VALUES (?, ?)
       ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
    );
  }

  put(item: WarmItem): Promise<boolean> {
    const r = this.#insert.run({ ...item, tags: JSON.stringify(item.tags) });
    return Promise.resolve(r.changes === 1);
  }

  /** The search statement for `n` scope keys (prepared once per count). */
  #search(n: number): Database.Statement {
    let stmt = this.#searches.get(n);
    if (!stmt) {
      const keys = Array.from({ length: n }, () => '?').join(', ');
      stmt = this.#db.prepare(
        `SELECT w.*, f.rank AS rank FROM warm_fts f JOIN warm_items w ON w.rowid = f.rowid
         WHERE warm_fts MATCH ? AND w.kind = ? AND w.key IN (${keys})
         ORDER BY f.rank LIMIT ?`,
      );
      this.#searches.set(n, stmt);
    }
    return stmt;
  }

  search(
    query: string,
    keys: readonly string[],
    kind: WarmKind,
    limit: number,
  ): Promise<Ranked<WarmItem>[]> {
    const match = ftsQuery(query);
    if (match === null || keys.length === 0 || limit <= 0) return Promise.resolve([]);
    const rows = this.#search(keys.length).all(match, kind, ...keys, limit) as (Row & {
      rank: number;
    })[];
    // FTS5's rank is BM25 negated (lower is better): the score is BM25 itself.
    return Promise.resolve(rows.map((r) => ({ item: fromRow(r), score: -r.rank })));
  }

  list(key: string, kind: WarmKind): Promise<WarmItem[]> {
    return Promise.resolve((this.#list.all(key, kind) as Row[]).map(fromRow));
  }

  getMark(name: string): Promise<number> {
    const row = this.#getMark.get(name) as { value: number } | undefined;
    return Promise.resolve(row?.value ?? 0);
  }

  setMark(name: string, value: number): Promise<void> {
    this.#setMark.run(name, value);
    return Promise.resolve();
  }

  close(): Promise<void> {
    if (this.#owned && this.#db.open) this.#db.close();
    return Promise.resolve();
  }
}

/**
 * The warm tier in the SQLite file at `path` (default `./.axon/memory.db`), or in an open
 * database (which the tier then does not close).
 */
export function sqliteWarmTier(path: string | Database.Database = DEFAULT_MEMORY_PATH): WarmTier {
  return typeof path === 'string'
    ? new SqliteWarmTier(openMemoryDb(path), true)
    : new SqliteWarmTier(path, false);
}
