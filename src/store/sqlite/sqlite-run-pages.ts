/**
 * @module The SQLite store's listings of runs, from its indexes (migration 8): by status
 * (`runs_by_status`), by user and status (`runs_by_user`), by entry (`runs_by_entry`), newest
 * first by rowid. A page of several statuses is read one status at a time — each an index
 * range read from its newest end, `limit` rows at most — and merged, so a page costs what it
 * holds, not what the file holds.
 */
import type Database from 'better-sqlite3';
import { NotFoundError } from '../../errors/not-found-error.js';
import { RUN_STATUSES, type RunStatus } from '../records.js';
import { newestOf } from '../run-pages.js';
import type { RunPageQuery } from '../run-store.js';
import type { RunRow } from './sqlite-rows.js';

/** A row with its rowid, for merging pages. */
type RefRow = RunRow & { readonly run_ref: number };

/** The listings of one SQLite database; see the module. */
export class SqliteRunPages {
  readonly #db: Database.Database;
  /** Statements by the shape of their query. */
  readonly #statements = new Map<string, Database.Statement>();
  readonly #runRef: Database.Statement;

  constructor(db: Database.Database) {
    this.#db = db;
    this.#runRef = db.prepare('SELECT run_ref FROM runs WHERE run_id = ?');
  }

  /** Runs in creation order, those of `status` when given. */
  list(status?: readonly RunStatus[]): RunRow[] {
    if (status === undefined)
      return this.#statement('all', 'SELECT * FROM runs ORDER BY run_ref').all() as RunRow[];
    if (status.length === 0) return [];
    const marks = status.map(() => '?').join(', ');
    return this.#statement(
      `status:${status.length}`,
      `SELECT * FROM runs WHERE status IN (${marks}) ORDER BY run_ref`,
    ).all(...status) as RunRow[];
  }

  /** One page (see `RunStore.pageRuns`). */
  page(query: RunPageQuery): RunRow[] {
    let before: number | null = null;
    if (query.before !== undefined) {
      const row = this.#runRef.get(query.before) as { run_ref: number } | undefined;
      if (!row) throw new NotFoundError('run', query.before);
      before = row.run_ref;
    }
    // A user's runs are indexed by user then status: read a status at a time, so each read
    // is one range of the index from its newest end.
    const statuses =
      query.status ??
      (query.userId !== undefined && query.entry === undefined ? RUN_STATUSES : null);
    const lists = (statuses ?? [null]).map((status) => this.#read(query, status, before));
    return newestOf(lists, query.limit, (a, b) => b.run_ref - a.run_ref);
  }

  #read(query: RunPageQuery, status: RunStatus | null, before: number | null): RefRow[] {
    // Each condition the query has: its SQL, its parameter's name and value.
    const conditions = (
      [
        ['user_id IS @user', 'user', query.userId],
        ['status = @status', 'status', status ?? undefined],
        ['entry = @entry', 'entry', query.entry],
        ['run_ref < @before', 'before', before ?? undefined],
      ] as const
    ).filter(([, , value]) => value !== undefined);
    const params: Record<string, unknown> = { limit: query.limit };
    for (const [, name, value] of conditions) params[name] = value;
    const where = conditions.map(([sql]) => sql);
    // One statement per shape of query: the names of the conditions it has.
    const shape = conditions.map(([, name]) => name).join(',');
    const sql = `SELECT * FROM runs ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY run_ref DESC LIMIT @limit`;
    return this.#statement(`page:${shape}`, sql).all(params) as RefRow[];
  }

  #statement(key: string, sql: string): Database.Statement {
    let stmt = this.#statements.get(key);
    if (!stmt) {
      stmt = this.#db.prepare(sql);
      this.#statements.set(key, stmt);
    }
    return stmt;
  }
}
