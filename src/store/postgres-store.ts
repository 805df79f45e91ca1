/**
 * @module The PostgreSQL RunStore (issue 32, first step): runs, steps, logs, flows, facts,
 * checkpoints, recordings and approvals in tables of one schema, each record as JSON beside
 * the columns queried (status, user, entry, client token), through a `pg` pool. Every
 * multi-row write is one transaction; a step's log grows only by the next `seq` (the step's
 * row locked while it is checked), so concurrent writers of one log cannot interleave.
 * Migrations (`postgres-migrations.ts`) are versioned and applied at start; a schema newer
 * than this code is refused.
 *
 * Not yet (issue 32): fenced writes and shared budget reservations for a fleet, group commit,
 * the memory tiers, `axon serve --postgres`.
 */
import pg from 'pg';
import { ConflictError } from '../errors/conflict-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import type { BudgetUsage, StepEvent } from '../streams/events.js';
import { decided } from './approval-records.js';
import { patchRunRecord, patchStepRecord } from './copy-records.js';
import { checkFactQuery, selectFacts } from './fact-query.js';
import { addUsage, recordingKey } from './records.js';
import type {
  ApprovalDecision,
  ApprovalRecord,
  CallRecording,
  CheckpointRecord,
  FactQuery,
  FactRecord,
  FlowRecord,
  RecordingKey,
  RunPatch,
  RunRecord,
  RunStatus,
  StepPatch,
  StepRecord,
} from './records.js';
import type { RunPageQuery, RunStore, StepEnd } from './run-store.js';
import { migrate, SCHEMA_NAME, type Query } from './postgres-migrations.js';

export { POSTGRES_SCHEMA_VERSION } from './postgres-migrations.js';

/** Options of {@link postgresStore}. */
export interface PostgresStoreOptions {
  /** A `postgres://` URL, or a pool of your own (not closed by the store). */
  readonly connection: string | pg.Pool;
  /** The schema holding the store's tables, made if missing; default `axon`. */
  readonly schema?: string;
}

/** A recording's key as text PostgreSQL takes (its NUL separators escaped, as JSON does). */
const keyText = (key: RecordingKey): string => JSON.stringify(recordingKey(key));

/** A {@link RunStore} in PostgreSQL; see the module. Use {@link postgresStore}. */
export class PostgresRunStore implements RunStore {
  readonly #pool: pg.Pool;
  readonly #owned: boolean;
  readonly #s: string;
  readonly #ready: Promise<void>;

  constructor(options: PostgresStoreOptions) {
    const schema = options.schema ?? 'axon';
    if (!SCHEMA_NAME.test(schema)) {
      throw new RangeError(
        `postgresStore: schema must match ${SCHEMA_NAME.source}, got ${JSON.stringify(schema)}`,
      );
    }
    this.#s = `"${schema}"`;
    this.#owned = typeof options.connection === 'string';
    this.#pool =
      typeof options.connection === 'string'
        ? new pg.Pool({ connectionString: options.connection, max: 8 })
        : options.connection;
    if (this.#owned) this.#pool.on('error', () => undefined);
    this.#ready = this.#migrate(schema);
    this.#ready.catch(() => undefined);
  }

  /** Applies the migrations this schema lacks (see `postgres-migrations.ts`). */
  async #migrate(schema: string): Promise<void> {
    await this.#tx((q) => migrate(q, schema, this.#s), false);
  }

  /** `body` in one transaction (after the migrations, unless `ready` is false). */
  async #tx<T>(body: (q: Query) => Promise<T>, ready = true): Promise<T> {
    if (ready) await this.#ready;
    const client = await this.#pool.connect();
    try {
      await client.query('BEGIN');
      const result = await body((text, values) => client.query(text, values as unknown[]));
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  async #q(text: string, values?: readonly unknown[]): Promise<pg.QueryResult> {
    await this.#ready;
    return this.#pool.query(text, values as unknown[]);
  }

  async createRun(run: RunRecord): Promise<void> {
    const { rowCount } = await this.#q(
      `INSERT INTO ${this.#s}.runs (run_id, status, user_id, entry, record) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (run_id) DO NOTHING`,
      [run.run_id, run.status, run.user_id, run.entry, JSON.stringify(run)],
    );
    if (rowCount === 0) throw new ConflictError(`run ${run.run_id} exists`);
  }

  async getRun(runId: string): Promise<RunRecord | null> {
    const { rows } = await this.#q(`SELECT record FROM ${this.#s}.runs WHERE run_id = $1`, [runId]);
    return (rows[0] as { record: RunRecord } | undefined)?.record ?? null;
  }

  async updateRun(runId: string, patch: RunPatch): Promise<void> {
    await this.#tx(async (q) => {
      await this.#patchRun(q, runId, (run) => patchRunRecord(run, patch));
    });
  }

  /** Rewrites a run (locked) as `change` makes it; returns it. */
  async #patchRun(
    q: Query,
    runId: string,
    change: (run: RunRecord) => RunRecord,
  ): Promise<RunRecord> {
    const { rows } = await q(`SELECT record FROM ${this.#s}.runs WHERE run_id = $1 FOR UPDATE`, [
      runId,
    ]);
    const found = (rows[0] as { record: RunRecord } | undefined)?.record;
    if (!found) throw new NotFoundError('run', runId);
    const next = change(found);
    await q(
      `UPDATE ${this.#s}.runs SET status = $2, user_id = $3, entry = $4, record = $5 WHERE run_id = $1`,
      [runId, next.status, next.user_id, next.entry, JSON.stringify(next)],
    );
    return next;
  }

  async createStep(step: StepRecord): Promise<void> {
    await this.#tx(async (q) => {
      await this.#insertStep(q, step);
    });
  }

  async #insertStep(q: Query, step: StepRecord): Promise<boolean> {
    const run = await q(`SELECT 1 FROM ${this.#s}.runs WHERE run_id = $1`, [step.run_id]);
    if (run.rowCount === 0) throw new NotFoundError('run', step.run_id);
    const { rowCount } = await q(
      `INSERT INTO ${this.#s}.steps (step_id, run_id, client_token, record) VALUES ($1, $2, $3, $4)
       ON CONFLICT DO NOTHING`,
      [step.step_id, step.run_id, step.client_token, JSON.stringify(step)],
    );
    if (rowCount === 0) {
      const same = await q(`SELECT 1 FROM ${this.#s}.steps WHERE step_id = $1`, [step.step_id]);
      if (same.rowCount !== 0) throw new ConflictError(`step ${step.step_id} exists`);
      return false;
    }
    return true;
  }

  async claimStep(step: StepRecord): Promise<{ step: StepRecord; created: boolean }> {
    for (;;) {
      if (step.client_token !== null) {
        const { rows } = await this.#q(
          `SELECT record FROM ${this.#s}.steps WHERE run_id = $1 AND client_token = $2`,
          [step.run_id, step.client_token],
        );
        const found = (rows[0] as { record: StepRecord } | undefined)?.record;
        if (found) return { step: found, created: false };
      }
      const created = await this.#tx((q) => this.#insertStep(q, step));
      // Another claim of the token won between the look and the insert: read its step.
      if (created) return { step, created: true };
    }
  }

  async getStep(stepId: string): Promise<StepRecord | null> {
    const { rows } = await this.#q(`SELECT record FROM ${this.#s}.steps WHERE step_id = $1`, [
      stepId,
    ]);
    return (rows[0] as { record: StepRecord } | undefined)?.record ?? null;
  }

  async updateStep(stepId: string, patch: StepPatch): Promise<void> {
    await this.#tx(async (q) => {
      await this.#patchStep(q, stepId, (s) => patchStepRecord(s, patch));
    });
  }

  async #patchStep(
    q: Query,
    stepId: string,
    change: (s: StepRecord) => StepRecord,
  ): Promise<StepRecord> {
    const { rows } = await q(`SELECT record FROM ${this.#s}.steps WHERE step_id = $1 FOR UPDATE`, [
      stepId,
    ]);
    const found = (rows[0] as { record: StepRecord } | undefined)?.record;
    if (!found) throw new NotFoundError('step', stepId);
    const next = change(found);
    await q(`UPDATE ${this.#s}.steps SET client_token = $2, record = $3 WHERE step_id = $1`, [
      stepId,
      next.client_token,
      JSON.stringify(next),
    ]);
    return next;
  }

  async releaseClientToken(stepId: string): Promise<StepRecord> {
    return this.#tx((q) => this.#patchStep(q, stepId, (s) => ({ ...s, client_token: null })));
  }

  async listSteps(runId: string): Promise<StepRecord[]> {
    const { rows } = await this.#q(
      `SELECT record FROM ${this.#s}.steps WHERE run_id = $1 ORDER BY seq`,
      [runId],
    );
    return rows.map((r) => (r as { record: StepRecord }).record);
  }

  async listRuns(query: { readonly status?: readonly RunStatus[] } = {}): Promise<RunRecord[]> {
    const { rows } = await this.#q(
      `SELECT record FROM ${this.#s}.runs WHERE $1::text[] IS NULL OR status = ANY($1) ORDER BY seq`,
      [query.status ?? null],
    );
    return rows.map((r) => (r as { record: RunRecord }).record);
  }

  async pageRuns(query: RunPageQuery): Promise<RunRecord[]> {
    let before: string | null = null;
    if (query.before !== undefined) {
      const { rows } = await this.#q(`SELECT seq FROM ${this.#s}.runs WHERE run_id = $1`, [
        query.before,
      ]);
      before = (rows[0] as { seq?: string } | undefined)?.seq ?? null;
      if (before === null) throw new NotFoundError('run', query.before);
    }
    const { rows } = await this.#q(
      `SELECT record FROM ${this.#s}.runs
       WHERE ($1::text[] IS NULL OR status = ANY($1))
         AND (NOT $2::boolean OR user_id IS NOT DISTINCT FROM $3)
         AND ($4::text IS NULL OR entry = $4)
         AND ($5::bigint IS NULL OR seq < $5)
       ORDER BY seq DESC LIMIT $6`,
      [
        query.status ?? null,
        query.userId !== undefined,
        query.userId ?? null,
        query.entry ?? null,
        before,
        query.limit,
      ],
    );
    return rows.map((r) => (r as { record: RunRecord }).record);
  }

  async appendEvents(events: readonly StepEvent[]): Promise<void> {
    if (events.length === 0) return;
    await this.#tx((q) => this.#append(q, events));
  }

  /** Appends `events` in order; a seq that does not continue its log refuses the batch. */
  async #append(q: Query, events: readonly StepEvent[]): Promise<void> {
    const last = new Map<string, number>();
    for (const ev of events) {
      let at = last.get(ev.step_id);
      if (at === undefined) {
        const { rows } = await q(
          `SELECT last_seq FROM ${this.#s}.steps WHERE step_id = $1 FOR UPDATE`,
          [ev.step_id],
        );
        const row = rows[0] as { last_seq: number } | undefined;
        if (!row) throw new NotFoundError('step', ev.step_id);
        at = row.last_seq;
      }
      if (ev.seq !== at + 1) {
        const expected = at + 1;
        throw new ConflictError(`step ${ev.step_id}: expected seq ${expected}, got ${ev.seq}`, {
          details: { step_id: ev.step_id, expected, got: ev.seq },
        });
      }
      last.set(ev.step_id, ev.seq);
    }
    const ids = events.map((e) => e.step_id);
    await q(
      `INSERT INTO ${this.#s}.events (step_id, seq, event)
       SELECT * FROM unnest($1::text[], $2::int[], $3::json[])`,
      [ids, events.map((e) => e.seq), events.map((e) => JSON.stringify(e))],
    );
    for (const [stepId, seq] of last) {
      await q(`UPDATE ${this.#s}.steps SET last_seq = $2 WHERE step_id = $1`, [stepId, seq]);
    }
  }

  async endStep(end: StepEnd): Promise<void> {
    await this.#tx(async (q) => {
      const exists = await q(`SELECT 1 FROM ${this.#s}.steps WHERE step_id = $1`, [end.stepId]);
      if (exists.rowCount === 0) throw new NotFoundError('step', end.stepId);
      if (end.events.length > 0) await this.#append(q, end.events);
      await this.#patchStep(q, end.stepId, (s) => patchStepRecord(s, end.patch));
      const usage = end.runUsage;
      if (usage !== undefined) {
        await this.#patchRun(q, end.runId, (run) =>
          patchRunRecord(run, { budget_usage: addUsage(run.budget_usage, usage) }),
        );
      }
    });
  }

  async readEvents(stepId: string, afterSeq = 0, limit = Infinity): Promise<StepEvent[]> {
    const { rows } = await this.#q(
      `SELECT event FROM ${this.#s}.events WHERE step_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
      [stepId, Math.max(0, afterSeq), limit === Infinity ? null : Math.max(0, limit)],
    );
    return rows.map((r) => (r as { event: StepEvent }).event);
  }

  async putFlow(flow: FlowRecord): Promise<{ flow: FlowRecord; created: boolean }> {
    for (;;) {
      const found = await this.getFlowByHash(flow.hash);
      if (found) return { flow: found, created: false };
      const { rowCount } = await this.#q(
        `INSERT INTO ${this.#s}.flows (flow_id, hash, record) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
        [flow.flow_id, flow.hash, JSON.stringify(flow)],
      );
      if (rowCount !== 0) return { flow, created: true };
      if (await this.getFlow(flow.flow_id)) throw new ConflictError(`flow ${flow.flow_id} exists`);
    }
  }

  async getFlow(flowId: string): Promise<FlowRecord | null> {
    const { rows } = await this.#q(`SELECT record FROM ${this.#s}.flows WHERE flow_id = $1`, [
      flowId,
    ]);
    return (rows[0] as { record: FlowRecord } | undefined)?.record ?? null;
  }

  async getFlowByHash(hash: string): Promise<FlowRecord | null> {
    const { rows } = await this.#q(`SELECT record FROM ${this.#s}.flows WHERE hash = $1`, [hash]);
    return (rows[0] as { record: FlowRecord } | undefined)?.record ?? null;
  }

  async appendFact(fact: FactRecord): Promise<void> {
    await this.#tx(async (q) => {
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
    const { rows } = await this.#q(
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
    );
  }

  /** `text` in a transaction after checking the run exists (`NotFoundError`). */
  async #inRun(runId: string, text: string, values: readonly unknown[]): Promise<pg.QueryResult> {
    return this.#tx(async (q) => {
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
    const { rows } = await this.#q(text, values);
    return rows.map((r) => (r as { record: T }).record);
  }

  async addRunUsage(runId: string, usage: BudgetUsage): Promise<BudgetUsage> {
    const run = await this.#tx((q) =>
      this.#patchRun(q, runId, (r) =>
        patchRunRecord(r, { budget_usage: addUsage(r.budget_usage, usage) }),
      ),
    );
    return { ...run.budget_usage };
  }

  async putRecording(recording: CallRecording): Promise<void> {
    await this.#inRun(
      recording.run_id,
      `INSERT INTO ${this.#s}.recordings (run_id, key, record) VALUES ($1, $2, $3)
       ON CONFLICT (run_id, key) DO UPDATE SET record = EXCLUDED.record`,
      [recording.run_id, keyText(recording), JSON.stringify(recording)],
    );
  }

  async getRecording(runId: string, key: RecordingKey): Promise<CallRecording | null> {
    const { rows } = await this.#q(
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
    const { rows } = await this.#q(
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
    return this.#tx(async (q) => {
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

  /** Every write is committed before its promise resolves: nothing is held back. */
  flush(): null {
    return null;
  }

  async close(): Promise<void> {
    await this.#ready.catch(() => undefined);
    if (this.#owned) await this.#pool.end();
  }
}

/**
 * The PostgreSQL store.
 *
 * @example
 * const runtime = createRuntime({ store: postgresStore({ connection: 'postgres://localhost/axon' }) });
 */
export function postgresStore(options: PostgresStoreOptions): PostgresRunStore {
  return new PostgresRunStore(options);
}
