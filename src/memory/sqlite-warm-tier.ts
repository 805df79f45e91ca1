/**
 * @module The warm tier in SQLite, the embedded default: episodes and facts in a table,
 * indexed by FTS5 and ranked by its BM25 (`ORDER BY rank`). A file under `./.axon/` by
 * default; several processes may share it (WAL).
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { words } from './bm25.js';
import type { Ranked, WarmItem, WarmKind, WarmTier } from './memory-types.js';

/** The default file of the embedded memory tiers. */
export const DEFAULT_MEMORY_PATH = './.axon/memory.db';

/** The distinct words of `query` (at most 64), as FTS5 matches them. */
export function queryWords(query: string): string[] {
  return [...new Set(words(query))].slice(0, 64);
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

/**
 * `tok` holds an item's scope key and kind as one index term (`s<hash>`), so FTS5
 * intersects the context's few terms with the query's words instead of ranking every match
 * and filtering after; ranking weighs `content` only (`bm25(1, 0)`).
 */
const SCHEMA = `
  CREATE TABLE IF NOT EXISTS warm_items (
    id      TEXT NOT NULL UNIQUE,
    key     TEXT NOT NULL,
    kind    TEXT NOT NULL,
    content TEXT NOT NULL,
    tags    TEXT NOT NULL,
    source  TEXT NOT NULL,
    ts      INTEGER NOT NULL,
    tok     TEXT NOT NULL
  );
  CREATE INDEX IF NOT EXISTS warm_by_key ON warm_items (key, kind);
  CREATE VIRTUAL TABLE IF NOT EXISTS warm_fts USING fts5(
    content, tok, content = 'warm_items', content_rowid = 'rowid'
  );
  CREATE TRIGGER IF NOT EXISTS warm_items_ai AFTER INSERT ON warm_items BEGIN
    INSERT INTO warm_fts (rowid, content, tok) VALUES (new.rowid, new.content, new.tok);
  END;
  CREATE TABLE IF NOT EXISTS memory_marks (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
`;

/** The index term of a scope key and a kind: `s` and 24 hex digits of their sha256. */
function scopeTerm(key: string, kind: WarmKind): string {
  return `s${createHash('sha256').update(`${kind}\u0000${key}`).digest('hex').slice(0, 24)}`;
}

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

  constructor(db: Database.Database, owned: boolean) {
    this.#db = db;
    this.#owned = owned;
    db.exec(SCHEMA);
    db.prepare("INSERT INTO warm_fts (warm_fts, rank) VALUES ('rank', 'bm25(1.0, 0.0)')").run();
    this.#insert = db.prepare(
      `INSERT INTO warm_items (id, key, kind, content, tags, source, ts, tok)
       VALUES (@id, @key, @kind, @content, @tags, @source, @ts, @tok) ON CONFLICT (id) DO NOTHING`,
    );
    this.#list = db.prepare('SELECT * FROM warm_items WHERE key = ? AND kind = ? ORDER BY rowid');
    this.#getMark = db.prepare('SELECT value FROM memory_marks WHERE name = ?');
    this.#setMark = db.prepare(
      `INSERT INTO memory_marks (name, value) VALUES (?, ?)
       ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
    );
  }

  put(item: WarmItem): Promise<boolean> {
    const tok = scopeTerm(item.key, item.kind);
    const r = this.#insert.run({ ...item, tags: JSON.stringify(item.tags), tok });
    return Promise.resolve(r.changes === 1);
  }

  #searchStmt: Database.Statement | null = null;
  #taggedStmt: Database.Statement | null = null;

  search(
    query: string,
    keys: readonly string[],
    kind: WarmKind,
    limit: number,
    tags?: readonly string[],
  ): Promise<Ranked<WarmItem>[]> {
    const terms = queryWords(query);
    if (terms.length === 0 || keys.length === 0 || limit <= 0) return Promise.resolve([]);
    const match = terms.map((w) => `"${w}"`).join(' OR ');
    const scopes = keys.map((k) => scopeTerm(k, kind)).join(' OR ');
    const where = `tok : (${scopes}) AND content : (${match})`;
    let rows: (Row & { rank: number })[];
    if (tags && tags.length > 0) {
      // Only items carrying every tag asked for: filtered before the limit, not after.
      this.#taggedStmt ??= this.#db.prepare(
        `SELECT w.*, f.rank AS rank FROM warm_fts f JOIN warm_items w ON w.rowid = f.rowid
         WHERE warm_fts MATCH ?
           AND NOT EXISTS (SELECT 1 FROM json_each(?) wanted
                           WHERE wanted.value NOT IN (SELECT value FROM json_each(w.tags)))
         ORDER BY f.rank LIMIT ?`,
      );
      rows = this.#taggedStmt.all(where, JSON.stringify(tags), limit) as (Row & {
        rank: number;
      })[];
    } else {
      this.#searchStmt ??= this.#db.prepare(
        `SELECT w.*, f.rank AS rank FROM warm_fts f JOIN warm_items w ON w.rowid = f.rowid
         WHERE warm_fts MATCH ? ORDER BY f.rank LIMIT ?`,
      );
      rows = this.#searchStmt.all(where, limit) as (Row & { rank: number })[];
    }
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
