/**
 * @module The PostgreSQL store's records of a run besides its steps: facts, checkpoints,
 * recordings and approvals, each a statement (or a transaction) of its own outside the
 * batches, after the batches asked before it have committed; a fleet writer's are fenced by
 * its turn in the same transaction.
 */
import type pg from 'pg';
import { ConflictError } from '../../errors/conflict-error.js';
import { NotFoundError } from '../../errors/not-found-error.js';
import { decided } from '../approval-records.js';
import { checkFactQuery, selectFacts } from '../fact-query.js';
import type { Query } from './postgres-migrations.js';
import { recordingKey } from '../records.js';
import type {
  ApprovalDecision,
  ApprovalRecord,
  CallRecording,
  CheckpointRecord,
  FactQuery,
  FactRecord,
  RecordingKey,
  RunRecord,
} from '../records.js';
import type { WriteTarget } from '../write-target.js';

/** A recording's key as text PostgreSQL takes (its NUL separators escaped, as JSON does). */
const keyText = (key: RecordingKey): string => JSON.stringify(recordingKey(key));

/** What the records need of their store. */
export interface RunRecordsHost {
  /** The quoted schema. */
  readonly s: string;
  /** `body` in one transaction, once the batches asked before have committed. */
  tx<T>(body: (q: Query) => Promise<T>): Promise<T>;
  /** One statement, once the batches asked before have committed. */
  q(text: string, values?: readonly unknown[]): Promise<pg.QueryResult>;
  /** Refuses the transaction of `q` when the writer's turn `target`'s write must hold is over. */
  guard(q: Query, target: WriteTarget): Promise<void>;
}

/** The records; see the module. */
export class PostgresRunRecords {
  readonly #s: string;
  readonly #host: RunRecordsHost;

  constructor(host: RunRecordsHost) {
    this.#host = host;
    this.#s = host.s;
  }

  async appendFact(fact: FactRecord): Promise<void> {
    await this.#host.tx(async (q) => {
      await this.#host.guard(q, { stepId: fact.emitted_by_step ?? undefined, runId: fact.run_id });
      const run = await q(`SELECT record FROM ${this.#s}.runs WHERE run_id = $1`, [fact.run_id]);
      const found = (run.rows[0] as { record: RunRecord } | undefined)?.record;
      if (!found) throw new NotFoundError('run', fact.run_id);
      const { rowCount } = await q(
        `INSERT INTO ${this.#s}.facts (fact_id, run_id, flow_id, record) VALUES ($1, $2, $3, $4)
         ON CONFLICT (fact_id) DO NOTHING`,
        [fact.fact_id, fact.run_id, found.flow_id, JSON.stringify(fact)],
      );
      if (rowCount === 0) throw new ConflictError(`fact ${fact.fact_id} exists`);
    });
  }

  async listFacts(query: FactQuery): Promise<FactRecord[]> {
    checkFactQuery(query);
    const { rows } = await this.#host.q(
      `SELECT record FROM ${this.#s}.facts
       WHERE ($1::text IS NULL OR run_id = $1) AND ($2::text IS NULL OR flow_id = $2) ORDER BY seq`,
      [query.runId ?? null, query.flowId ?? null],
    );
    return selectFacts(
      rows.map((r) => (r as { record: FactRecord }).record),
      query,
    );
  }

  async createCheckpoint(checkpoint: CheckpointRecord): Promise<void> {
    await this.#inRun(
      checkpoint.run_id,
      `INSERT INTO ${this.#s}.checkpoints (run_id, record) VALUES ($1, $2)`,
      [checkpoint.run_id, JSON.stringify(checkpoint)],
      { stepId: checkpoint.step_id ?? undefined, runId: checkpoint.run_id },
    );
  }

  /**
   * `text` in a transaction after checking the run exists (`NotFoundError`) and, given a
   * `target`, that the writer's turn holds.
   */
  async #inRun(
    runId: string,
    text: string,
    values: readonly unknown[],
    target?: WriteTarget,
  ): Promise<pg.QueryResult> {
    return this.#host.tx(async (q) => {
      if (target) await this.#host.guard(q, target);
      const run = await q(`SELECT 1 FROM ${this.#s}.runs WHERE run_id = $1`, [runId]);
      if (run.rowCount === 0) throw new NotFoundError('run', runId);
      return q(text, values);
    });
  }

  async listCheckpoints(runId: string): Promise<CheckpointRecord[]> {
    return this.#records(
      `SELECT record FROM ${this.#s}.checkpoints WHERE run_id = $1 ORDER BY seq`,
      runId,
    );
  }

  async #records<T>(text: string, ...values: unknown[]): Promise<T[]> {
    const { rows } = await this.#host.q(text, values);
    return rows.map((r) => (r as { record: T }).record);
  }

  async putRecording(recording: CallRecording): Promise<void> {
    await this.#inRun(
      recording.run_id,
      `INSERT INTO ${this.#s}.recordings (run_id, key, record) VALUES ($1, $2, $3)
       ON CONFLICT (run_id, key) DO UPDATE SET record = EXCLUDED.record`,
      [recording.run_id, keyText(recording), JSON.stringify(recording)],
      { runId: recording.run_id, clientToken: recording.client_token },
    );
  }

  async getRecording(runId: string, key: RecordingKey): Promise<CallRecording | null> {
    const { rows } = await this.#host.q(
      `SELECT record FROM ${this.#s}.recordings WHERE run_id = $1 AND key = $2`,
      [runId, keyText(key)],
    );
    return (rows[0] as { record: CallRecording } | undefined)?.record ?? null;
  }

  async listRecordings(runId: string): Promise<CallRecording[]> {
    return this.#records(
      `SELECT record FROM ${this.#s}.recordings WHERE run_id = $1 ORDER BY seq`,
      runId,
    );
  }

  async createApproval(
    approval: ApprovalRecord,
  ): Promise<{ approval: ApprovalRecord; created: boolean }> {
    const { rowCount } = await this.#inRun(
      approval.run_id,
      `INSERT INTO ${this.#s}.approvals (approval_id, run_id, record) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
      [approval.approval_id, approval.run_id, JSON.stringify(approval)],
    );
    if (rowCount !== 0) return { approval, created: true };
    const found = await this.getApproval(approval.approval_id);
    return { approval: found ?? approval, created: false };
  }

  async getApproval(approvalId: string): Promise<ApprovalRecord | null> {
    const { rows } = await this.#host.q(
      `SELECT record FROM ${this.#s}.approvals WHERE approval_id = $1`,
      [approvalId],
    );
    return (rows[0] as { record: ApprovalRecord } | undefined)?.record ?? null;
  }

  async listApprovals(runId: string): Promise<ApprovalRecord[]> {
    return this.#records(
      `SELECT record FROM ${this.#s}.approvals WHERE run_id = $1 ORDER BY seq`,
      runId,
    );
  }

  async decideApproval(approvalId: string, decision: ApprovalDecision): Promise<ApprovalRecord> {
    return this.#host.tx(async (q) => {
      const { rows } = await q(
        `SELECT record FROM ${this.#s}.approvals WHERE approval_id = $1 FOR UPDATE`,
        [approvalId],
      );
      const found = (rows[0] as { record: ApprovalRecord } | undefined)?.record;
      if (!found) throw new NotFoundError('approval', approvalId);
      const next = decided(found, decision);
      await q(`UPDATE ${this.#s}.approvals SET record = $2 WHERE approval_id = $1`, [
        approvalId,
        JSON.stringify(next),
      ]);
      return next;
    });
  }
}
