/** @module The SQLite store's approvals (migration 4): each a JSON body, its status beside it. */
import type Database from 'better-sqlite3';
import { NotFoundError } from '../../errors/not-found-error.js';
import { decided } from '../approval-records.js';
import type { ApprovalDecision, ApprovalRecord } from '../records.js';

const SQL = {
  insert: `INSERT INTO approvals (approval_id, run_id, status, body) VALUES (?, ?, ?, ?)
       ON CONFLICT (approval_id) DO NOTHING`,
  get: 'SELECT body FROM approvals WHERE approval_id = ?',
  list: 'SELECT body FROM approvals WHERE run_id = ? ORDER BY rowid',
  update: 'UPDATE approvals SET status = ?, body = ? WHERE approval_id = ?',
} as const;

/**
 * The approvals of a SQLite store. Writes go through `write`, the store's own (one commit
 * per turn, under SQLite's write lock): a decision reads and writes under that lock, so of
 * two concurrent ones — in any processes — one wins.
 */
export class SqliteApprovals {
  readonly #stmt: { readonly [K in keyof typeof SQL]: Database.Statement };
  readonly #write: <T>(fn: () => T) => Promise<T>;
  readonly #read: <T>(fn: () => T) => Promise<T>;
  readonly #runExists: (runId: string) => boolean;

  /** `runExists`: the store's own check (inside `write`, it sees the run's held row too). */
  constructor(
    db: Database.Database,
    write: <T>(fn: () => T) => Promise<T>,
    read: <T>(fn: () => T) => Promise<T>,
    runExists: (runId: string) => boolean,
  ) {
    this.#stmt = {
      insert: db.prepare(SQL.insert),
      get: db.prepare(SQL.get),
      list: db.prepare(SQL.list),
      update: db.prepare(SQL.update),
    };
    this.#write = write;
    this.#read = read;
    this.#runExists = runExists;
  }

  createApproval(
    approval: ApprovalRecord,
  ): Promise<{ readonly approval: ApprovalRecord; readonly created: boolean }> {
    return this.#write(() => {
      if (!this.#runExists(approval.run_id)) {
        throw new NotFoundError('run', approval.run_id);
      }
      const body = JSON.stringify(approval);
      const r = this.#stmt.insert.run(approval.approval_id, approval.run_id, approval.status, body);
      if (r.changes === 1) return { approval: JSON.parse(body) as ApprovalRecord, created: true };
      return { approval: this.#get(approval.approval_id) as ApprovalRecord, created: false };
    });
  }

  getApproval(approvalId: string): Promise<ApprovalRecord | null> {
    return this.#read(() => this.#get(approvalId));
  }

  listApprovals(runId: string): Promise<ApprovalRecord[]> {
    return this.#read(() =>
      (this.#stmt.list.all(runId) as { body: string }[]).map(
        (r) => JSON.parse(r.body) as ApprovalRecord,
      ),
    );
  }

  decideApproval(approvalId: string, decision: ApprovalDecision): Promise<ApprovalRecord> {
    return this.#write(() => {
      const found = this.#get(approvalId);
      if (!found) throw new NotFoundError('approval', approvalId);
      const next = decided(found, decision);
      this.#stmt.update.run(next.status, JSON.stringify(next), approvalId);
      return next;
    });
  }

  #get(approvalId: string): ApprovalRecord | null {
    const row = this.#stmt.get.get(approvalId) as { body: string } | undefined;
    return row ? (JSON.parse(row.body) as ApprovalRecord) : null;
  }
}
