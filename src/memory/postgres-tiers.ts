/**
 * @module The warm and cold tiers in PostgreSQL (seed 002's `postgres` backend), in tables of
 * one schema (default `axon_memory`), made at first use under an advisory lock and versioned
 * in its `memory_meta` table (a schema newer than this code is refused).
 *
 * Warm: episodes and facts with their distinct words in an array (a GIN index finds the items
 * holding a query's words), ranked by BM25 (`bm25.ts`) over the scope's counts, as the Redis
 * tier ranks. Cold: knowledge and its vectors (`bytea`, float32) searched through the
 * project's own IVF index (`vector-index.ts`) — no vector extension is needed — which loads
 * the rows at first use and, before each search, the rows other processes added since.
 */
import pg from 'pg';
import { ConflictError } from '../errors/conflict-error.js';
import { rankByBm25, words } from './bm25.js';
import { hashedEmbedder, type Embedder } from './embedders.js';
import type { ColdItem, ColdTier, Ranked, WarmItem, WarmKind, WarmTier } from './memory-types.js';
import { MAX_CANDIDATES } from './redis-warm-tier.js';
import { bytesOf, ColdIndex, vectorOf } from './cold-index.js';
import type { VectorIndexOptions } from './vector-index.js';

/** The version of the memory tables this code writes. */
const MEMORY_VERSION = 1;
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Where a PostgreSQL tier keeps its tables. */
export interface PostgresTierOptions {
  /** A `postgres://` URL, or a pool of your own (not closed by the tier). */
  readonly connection: string | pg.Pool;
  /** Default `axon_memory`. */
  readonly schema?: string;
}

/** A pool, the quoted schema, and the tables made once. */
class PostgresTables {
  readonly pool: pg.Pool;
  readonly s: string;
  readonly #owned: boolean;
  readonly ready: Promise<void>;

  constructor(options: PostgresTierOptions) {
    const schema = options.schema ?? 'axon_memory';
    if (!SCHEMA_NAME.test(schema)) {
      throw new RangeError(
        `postgres memory: schema must match ${SCHEMA_NAME.source}, got ${JSON.stringify(schema)}`,
      );
    }
    this.s = `"${schema}"`;
    this.#owned = typeof options.connection === 'string';
    this.pool =
      typeof options.connection === 'string'
        ? new pg.Pool({ connectionString: options.connection, max: 4 })
        : options.connection;
    if (this.#owned) this.pool.on('error', () => undefined);
    this.ready = this.#migrate(schema);
    this.ready.catch(() => undefined);
  }

  async #migrate(schema: string): Promise<void> {
    const s = this.s;
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`axon-memory:${schema}`]);
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${s}.memory_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)`,
      );
      const { rows } = await client.query<{ value: string }>(
        `SELECT value FROM ${s}.memory_meta WHERE name = 'version'`,
      );
      const at = Number(rows[0]?.value ?? 0);
      if (at > MEMORY_VERSION) {
        throw new RangeError(
          `postgres memory: schema ${schema} is at version ${at}, newer than this axon knows (${MEMORY_VERSION}): upgrade axon`,
        );
      }
      if (at < 1) {
        await client.query(`
          CREATE TABLE ${s}.warm_items (seq BIGSERIAL PRIMARY KEY, id TEXT NOT NULL UNIQUE,
            key TEXT NOT NULL, kind TEXT NOT NULL, content TEXT NOT NULL, tags JSONB NOT NULL,
            source TEXT NOT NULL, ts BIGINT NOT NULL, words TEXT[] NOT NULL, length INT NOT NULL);
          CREATE INDEX ON ${s}.warm_items (key, kind, seq);
          CREATE INDEX ON ${s}.warm_items USING GIN (words);
          CREATE TABLE ${s}.memory_marks (name TEXT PRIMARY KEY, value DOUBLE PRECISION NOT NULL);
          CREATE TABLE ${s}.cold_items (seq BIGSERIAL PRIMARY KEY, id TEXT NOT NULL UNIQUE,
            key TEXT NOT NULL, content TEXT NOT NULL, tags JSONB NOT NULL, source TEXT NOT NULL,
            ts BIGINT NOT NULL, vector BYTEA NOT NULL);
          INSERT INTO ${s}.memory_meta (name, value) VALUES ('version', '${MEMORY_VERSION}');`);
      }
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  async query<R extends pg.QueryResultRow>(
    text: string,
    values: readonly unknown[] = [],
  ): Promise<pg.QueryResult<R>> {
    await this.ready;
    return this.pool.query<R>(text, values as unknown[]);
  }

  async close(): Promise<void> {
    await this.ready.catch(() => undefined);
    if (this.#owned) await this.pool.end();
  }
}

interface WarmRow {
  id: string;
  key: string;
  kind: string;
  content: string;
  tags: string[];
  source: string;
  ts: string;
}

const warmItem = (r: WarmRow): WarmItem => ({
  id: r.id,
  key: r.key,
  kind: r.kind as WarmKind,
  content: r.content,
  tags: r.tags,
  source: r.source,
  ts: Number(r.ts),
});

class PostgresWarmTier implements WarmTier {
  readonly name = 'postgres';
  readonly #t: PostgresTables;

  constructor(options: PostgresTierOptions) {
    this.#t = new PostgresTables(options);
  }

  async put(item: WarmItem): Promise<boolean> {
    const all = words(item.content);
    const { rowCount } = await this.#t.query(
      `INSERT INTO ${this.#t.s}.warm_items (id, key, kind, content, tags, source, ts, words, length)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING`,
      [
        item.id,
        item.key,
        item.kind,
        item.content,
        JSON.stringify(item.tags),
        item.source,
        item.ts,
        [...new Set(all)],
        all.length,
      ],
    );
    return rowCount === 1;
  }

  async search(
    query: string,
    keys: readonly string[],
    kind: WarmKind,
    limit: number,
    tags?: readonly string[],
  ): Promise<Ranked<WarmItem>[]> {
    const terms = [...new Set(words(query))].slice(0, 64);
    if (terms.length === 0 || keys.length === 0 || limit <= 0) return [];
    const s = this.#t.s;
    // The scope's counts, as BM25 needs them: its items, their mean length, each word's.
    const { rows: counts } = await this.#t.query<{ n: string; len: string | null }>(
      `SELECT count(*) AS n, avg(length) AS len FROM ${s}.warm_items WHERE key = ANY($1) AND kind = $2`,
      [keys, kind],
    );
    const row = counts[0];
    const n = Number(row?.n ?? 0);
    if (n === 0) return [];
    const { rows: dfs } = await this.#t.query<{ t: string; df: string }>(
      `SELECT t, (SELECT count(*) FROM ${s}.warm_items
                  WHERE key = ANY($1) AND kind = $2 AND words @> ARRAY[t]) AS df
       FROM unnest($3::text[]) t`,
      [keys, kind, terms],
    );
    const df = new Map(dfs.map((d) => [d.t, Number(d.df)]));
    const { rows } = await this.#t.query<WarmRow>(
      `SELECT id, key, kind, content, tags, source, ts FROM ${s}.warm_items
       WHERE key = ANY($1) AND kind = $2 AND words && $3::text[]
         AND ($4::jsonb IS NULL OR tags @> $4::jsonb)
       ORDER BY seq LIMIT ${MAX_CANDIDATES}`,
      [keys, kind, terms, tags && tags.length > 0 ? JSON.stringify(tags) : null],
    );
    const stats = { n, avgLength: Number(row?.len ?? 1) || 1, df };
    return rankByBm25(rows.map(warmItem), terms, stats, limit);
  }

  async list(key: string, kind: WarmKind): Promise<WarmItem[]> {
    const { rows } = await this.#t.query<WarmRow>(
      `SELECT id, key, kind, content, tags, source, ts FROM ${this.#t.s}.warm_items
       WHERE key = $1 AND kind = $2 ORDER BY seq`,
      [key, kind],
    );
    return rows.map(warmItem);
  }

  async getMark(name: string): Promise<number> {
    const { rows } = await this.#t.query<{ value: number }>(
      `SELECT value FROM ${this.#t.s}.memory_marks WHERE name = $1`,
      [name],
    );
    return rows[0]?.value ?? 0;
  }

  async setMark(name: string, value: number): Promise<void> {
    await this.#t.query(
      `INSERT INTO ${this.#t.s}.memory_marks (name, value) VALUES ($1, $2)
       ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value`,
      [name, value],
    );
  }

  close(): Promise<void> {
    return this.#t.close();
  }
}

/** Options of {@link postgresColdTier}. */
export interface PostgresColdTierOptions extends PostgresTierOptions, VectorIndexOptions {
  /** Default `hashedEmbedder()`. */
  readonly embedder?: Embedder;
}

interface ColdRow {
  seq: string;
  id: string;
  key: string;
  content: string;
  tags: string[];
  source: string;
  ts: string;
  vector: Buffer;
}

class PostgresColdTier implements ColdTier {
  readonly name = 'postgres';
  readonly #t: PostgresTables;
  readonly #embedder: Embedder;
  readonly #index: ColdIndex;
  /** The last row in the index; the rows after it are loaded before a search. */
  #seq = '0';
  #loading: Promise<void> | null = null;
  readonly #checked: Promise<void>;

  constructor(options: PostgresColdTierOptions) {
    const { connection, schema, embedder, ...indexOptions } = options;
    this.#embedder = embedder ?? hashedEmbedder();
    this.#index = new ColdIndex(this.#embedder, indexOptions);
    this.#t = new PostgresTables({ connection, ...(schema === undefined ? {} : { schema }) });
    this.#checked = this.#checkEmbedder();
    this.#checked.catch(() => undefined);
  }

  /** Refuses tables written by another embedder (their vectors do not compare). */
  async #checkEmbedder(): Promise<void> {
    const mine = `${this.#embedder.name}/${this.#embedder.dimensions}`;
    await this.#t.query(
      `INSERT INTO ${this.#t.s}.memory_meta (name, value) VALUES ('embedder', $1)
       ON CONFLICT (name) DO NOTHING`,
      [mine],
    );
    const { rows } = await this.#t.query<{ value: string }>(
      `SELECT value FROM ${this.#t.s}.memory_meta WHERE name = 'embedder'`,
    );
    const stored = rows[0]?.value;
    if (stored !== mine) {
      throw new ConflictError(
        `the cold tier's tables were written by embedder ${stored}, not ${mine}: vectors of two embedders do not compare`,
        { details: { stored, given: mine } },
      );
    }
  }

  /** Adds to the index the rows stored since it last looked (by any process). */
  async #catchUp(): Promise<void> {
    await this.#checked;
    this.#loading ??= (async () => {
      try {
        const { rows } = await this.#t.query<ColdRow>(
          `SELECT * FROM ${this.#t.s}.cold_items WHERE seq > $1 ORDER BY seq`,
          [this.#seq],
        );
        for (const r of rows) {
          this.#seq = r.seq;
          if (this.#index.has(r.id)) continue;
          this.#index.add(
            {
              id: r.id,
              key: r.key,
              content: r.content,
              tags: r.tags,
              source: r.source,
              ts: Number(r.ts),
            },
            vectorOf(r.vector),
          );
        }
      } finally {
        this.#loading = null;
      }
    })();
    await this.#loading;
  }

  async put(item: ColdItem): Promise<boolean> {
    await this.#checked;
    if (this.#index.has(item.id)) return false;
    const [vector] = await this.#embedder.embed([item.content]);
    if (!vector) return false;
    const { rowCount } = await this.#t.query(
      `INSERT INTO ${this.#t.s}.cold_items (id, key, content, tags, source, ts, vector)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`,
      [
        item.id,
        item.key,
        item.content,
        JSON.stringify(item.tags),
        item.source,
        item.ts,
        bytesOf(vector),
      ],
    );
    // Stored (by this process or another): the index takes it from the table, in order.
    await this.#catchUp();
    return rowCount === 1;
  }

  async search(
    query: string,
    keys: readonly string[],
    limit: number,
    tags?: readonly string[],
  ): Promise<Ranked<ColdItem>[]> {
    await this.#catchUp();
    return this.#index.search(query, keys, limit, tags);
  }

  close(): Promise<void> {
    return this.#t.close();
  }
}

/**
 * The warm tier in PostgreSQL.
 *
 * @example
 * const warm = postgresWarmTier({ connection: 'postgres://localhost/app' });
 */
export function postgresWarmTier(options: PostgresTierOptions): WarmTier {
  return new PostgresWarmTier(options);
}

/**
 * The cold tier in PostgreSQL, searched with the project's own vector index.
 *
 * @example
 * const cold = postgresColdTier({ connection: 'postgres://localhost/app' });
 */
export function postgresColdTier(options: PostgresColdTierOptions): ColdTier {
  return new PostgresColdTier(options);
}
