/**
 * @module The cold tier, embedded: knowledge and its vectors persisted in SQLite, searched
 * through an in-memory IVF index (`vector-index.ts`) loaded from the file when the tier
 * opens. The embedder is pluggable (`embedders.ts`); a file remembers which one wrote it and
 * refuses another (vectors of two embedders do not compare).
 */
import type Database from 'better-sqlite3';
import { ConflictError } from '../errors/conflict-error.js';
import { hashedEmbedder, type Embedder } from './embedders.js';
import type { ColdItem, ColdTier, Ranked } from './memory-types.js';
import { DEFAULT_MEMORY_PATH, openMemoryDb } from './sqlite-warm-tier.js';
import { bytesOf, ColdIndex, vectorOf } from './cold-index.js';
import type { VectorIndexOptions } from './vector-index.js';

/** Options of {@link sqliteColdTier}. */
export interface SqliteColdTierOptions extends VectorIndexOptions {
  /** Default `hashedEmbedder()`. */
  readonly embedder?: Embedder;
}

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS cold_items (
    id      TEXT NOT NULL UNIQUE,
    key     TEXT NOT NULL,
    content TEXT NOT NULL,
    ts      INTEGER NOT NULL,
    vector  BLOB NOT NULL,
    tags    TEXT NOT NULL DEFAULT '[]',
    source  TEXT NOT NULL DEFAULT ''
  );
  CREATE TABLE IF NOT EXISTS cold_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
`;

interface Row {
  id: string;
  key: string;
  content: string;
  ts: number;
  vector: Buffer;
  tags: string;
  source: string;
}

/** Adds the columns a file written before cold items kept tags and a source lacks. */
function addTagColumns(db: Database.Database): void {
  const columns = new Set(
    (db.prepare('PRAGMA table_info(cold_items)').all() as { name: string }[]).map((c) => c.name),
  );
  if (!columns.has('tags'))
    db.exec("ALTER TABLE cold_items ADD COLUMN tags TEXT NOT NULL DEFAULT '[]'");
  if (!columns.has('source'))
    db.exec("ALTER TABLE cold_items ADD COLUMN source TEXT NOT NULL DEFAULT ''");
}

class SqliteColdTier implements ColdTier {
  readonly name = 'sqlite';
  readonly #db: Database.Database;
  readonly #owned: boolean;
  readonly #embedder: Embedder;
  readonly #index: ColdIndex;
  readonly #insert: Database.Statement;

  constructor(db: Database.Database, owned: boolean, options: SqliteColdTierOptions) {
    this.#db = db;
    this.#owned = owned;
    this.#embedder = options.embedder ?? hashedEmbedder();
    db.exec(SCHEMA);
    addTagColumns(db);
    const meta = db.prepare("SELECT value FROM cold_meta WHERE name = 'embedder'").get() as
      { value: string } | undefined;
    const mine = `${this.#embedder.name}/${this.#embedder.dimensions}`;
    if (meta && meta.value !== mine) {
      throw new ConflictError(
        `the cold tier's file was written by embedder ${meta.value}, not ${mine}: vectors of two embedders do not compare`,
        { details: { stored: meta.value, given: mine } },
      );
    }
    if (!meta) db.prepare("INSERT INTO cold_meta (name, value) VALUES ('embedder', ?)").run(mine);
    const { embedder: _embedder, ...indexOptions } = options;
    this.#index = new ColdIndex(this.#embedder, indexOptions);
    this.#insert = db.prepare(
      `INSERT INTO cold_items (id, key, content, ts, vector, tags, source)
       VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    );
    for (const r of db
      .prepare('SELECT * FROM cold_items ORDER BY rowid')
      .iterate() as Iterable<Row>) {
      const vector = vectorOf(r.vector);
      const item: ColdItem = {
        id: r.id,
        key: r.key,
        content: r.content,
        tags: JSON.parse(r.tags) as string[],
        source: r.source,
        ts: r.ts,
      };
      this.#index.add(item, vector);
    }
  }

  async put(item: ColdItem): Promise<boolean> {
    if (this.#index.has(item.id)) return false;
    const [vector] = await this.#embedder.embed([item.content]);
    if (!vector || this.#index.has(item.id)) return false;
    const r = this.#insert.run(
      item.id,
      item.key,
      item.content,
      item.ts,
      bytesOf(vector),
      JSON.stringify(item.tags),
      item.source,
    );
    // Another process stored it first: it reaches this index when the file is opened again.
    if (r.changes === 0) return false;
    this.#index.add(item, vector);
    return true;
  }

  search(
    query: string,
    keys: readonly string[],
    limit: number,
    tags?: readonly string[],
  ): Promise<Ranked<ColdItem>[]> {
    return this.#index.search(query, keys, limit, tags);
  }

  close(): Promise<void> {
    if (this.#owned && this.#db.open) this.#db.close();
    return Promise.resolve();
  }
}

/**
 * The embedded cold tier in the SQLite file at `path` (default `./.axon/memory.db`, shared
 * with the warm tier), or in an open database (not closed by the tier).
 */
export function sqliteColdTier(
  path: string | Database.Database = DEFAULT_MEMORY_PATH,
  options: SqliteColdTierOptions = {},
): ColdTier {
  if (typeof path !== 'string') return new SqliteColdTier(path, false, options);
  const db = openMemoryDb(path);
  try {
    return new SqliteColdTier(db, true, options);
  } catch (err) {
    db.close(); // refused (another embedder, an unknown option): the file is not left open
    throw err;
  }
}
