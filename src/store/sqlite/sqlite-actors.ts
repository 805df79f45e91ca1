/**
 * @module The SQLite store's durable agents (migration 9; issue 46): actors, their mailboxes,
 * wakes and schedules, each read through an index. Writes go through the store's turn (one
 * commit per turn of the event loop, under SQLite's write lock): an acceptance, a firing or a
 * message's end reads and writes under that lock, so of two concurrent ones — in any
 * processes sharing the file — one wins.
 */
import type Database from 'better-sqlite3';
import { NotFoundError } from '../../errors/not-found-error.js';
import {
  mailboxFull,
  type ActorEndWrite,
  type ActorPageQuery,
  type ActorRecord,
  type ActorStatus,
  type ScheduleRecord,
  type SchedulePatch,
  type WakeRecord,
} from '../actor-records.js';
import type { AcceptedMessage, ActorStore } from '../actor-store.js';
import type { RunRecord, StepPatch, StepRecord } from '../records.js';
import type { PendingRows } from './sqlite-pending.js';
import { stepFromRow, type StepRow } from './sqlite-rows.js';
import type { Statements } from './sqlite-statements.js';
import { settle } from './sqlite-turn-commit.js';
import { SqliteSchedules } from './sqlite-schedules.js';

const SQL = {
  actorById: 'SELECT * FROM actors WHERE actor_id = ?',
  insertActor: `INSERT INTO actors (actor_id, user_id, name, key, run_id, version, state, status, created_at, updated_at)
       VALUES (@actor_id, @user_id, @name, @key, @run_id, @version, @state, @status, @created_at, @updated_at)`,
  setStatus: 'UPDATE actors SET status = ?, updated_at = ? WHERE actor_id = ?',
  liveIfIdle: `UPDATE actors SET status = 'live' WHERE actor_ref = ? AND status = 'idle'`,
  endState: `UPDATE actors SET state = ?, version = ?, updated_at = ?,
       status = CASE WHEN EXISTS (SELECT 1 FROM mailbox WHERE actor_ref = ? AND queued = 1)
         THEN 'live' ELSE 'idle' END
       WHERE actor_ref = ?`,
  endKeep: `UPDATE actors SET updated_at = ?,
       status = CASE WHEN EXISTS (SELECT 1 FROM mailbox WHERE actor_ref = ? AND queued = 1)
         THEN 'live' ELSE 'idle' END
       WHERE actor_ref = ?`,
  actorsWith: `SELECT * FROM actors WHERE status IN (SELECT value FROM json_each(?))
       AND actor_id > ? ORDER BY actor_id LIMIT ?`,
  queued: 'SELECT count(*) AS n FROM mailbox WHERE actor_ref = ? AND queued = 1',
  insertMail: 'INSERT INTO mailbox (actor_ref, step_ref, step_id, queued) VALUES (?, ?, ?, 1)',
  takeMail: 'UPDATE mailbox SET queued = 0 WHERE actor_ref = ? AND step_ref = ?',
  dropMail: 'DELETE FROM mailbox WHERE actor_ref = ? AND step_ref = ?',
  // In the order accepted: the one taken, if any, is the oldest (messages are taken in order).
  openMessages: `SELECT step_id FROM mailbox WHERE actor_ref = ? ORDER BY step_ref LIMIT ?`,
  stepRef: 'SELECT step_ref FROM steps WHERE step_id = ?',
  insertWake: `INSERT INTO wakes (wake_id, actor_id, user_id, kind, step_id, status, due_at, event, fired_at, created, record)
       VALUES (@wake_id, @actor_id, @user_id, @kind, @step_id, @status, @due_at, @event, @fired_at, @created_at, @record)
       ON CONFLICT (wake_id) DO NOTHING`,
  getWake: 'SELECT record FROM wakes WHERE wake_id = ?',
  updateWake: 'UPDATE wakes SET status = ?, due_at = ?, fired_at = ?, record = ? WHERE wake_id = ?',
  actorWakes: 'SELECT record FROM wakes WHERE actor_id = ? ORDER BY due_at IS NULL, due_at',
  dueWakes: `SELECT record FROM wakes WHERE status = 'pending' AND due_at IS NOT NULL AND due_at <= ?
       ORDER BY due_at LIMIT ?`,
  nextWake: `SELECT min(due_at) AS at FROM wakes WHERE status = 'pending' AND due_at IS NOT NULL`,
  firedWakes: `SELECT record FROM wakes WHERE status = 'fired' AND kind <> 'reminder'
       ORDER BY fired_at LIMIT ?`,
  deleteWake: 'DELETE FROM wakes WHERE wake_id = ?',
  deleteStepWakes: 'DELETE FROM wakes WHERE step_id = ?',
  eventWaiters: `SELECT record FROM wakes WHERE status = 'pending' AND event = ? AND user_id IS ?
       ORDER BY created LIMIT ?`,
} as const;

interface ActorRow {
  readonly actor_ref: number;
  readonly actor_id: string;
  readonly user_id: string | null;
  readonly name: string;
  readonly key: string;
  readonly run_id: string;
  readonly version: number;
  readonly state: string;
  readonly status: ActorStatus;
  readonly created_at: string;
  readonly updated_at: string;
}

function actorFromRow(row: ActorRow): ActorRecord {
  return {
    actor_id: row.actor_id,
    user_id: row.user_id,
    name: row.name,
    key: row.key,
    run_id: row.run_id,
    version: row.version,
    state: JSON.parse(row.state) as unknown,
    status: row.status,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Actors whose rowids are remembered at most (see `SqliteActors.#refs`). */
const MAX_REFS = 100_000;

/** The record a row holds as JSON, or `null` for no row. */
function parsed(row: { record: string } | undefined): unknown {
  return row ? JSON.parse(row.record) : null;
}

/** What the actors need of their store, inside its turn's transaction. */
export interface SqliteActorsHost {
  /** A write in the turn's transaction (the store's, holding its rows back). */
  write<T>(fn: () => T): Promise<T>;
  /** Creates a run (held), as `createRun`; throws when its id is taken. */
  createRun(run: RunRecord): void;
  /** Creates a step (held), its token known to be new to its run (under the write). */
  createStep(step: StepRecord): void;
  /** Applies an end to a step (a merged message's), held or written; false when unknown. */
  patchStep(stepId: string, patch: StepPatch): boolean;
  /** The rowid of a step the store holds or remembers (its log's end), without a lookup. */
  stepRef(stepId: string): number | undefined;
}

/** The durable agents of a {@link SqliteRunStore}; see the module. */
export class SqliteActors implements ActorStore {
  readonly #stmt: { readonly [K in keyof typeof SQL]: Database.Statement };
  readonly #host: SqliteActorsHost;
  readonly #db: Database.Database;
  /** The store's held rows (runs, steps, events not written yet). */
  readonly #pending: PendingRows;
  /** The store's own statements (steps by id and token). */
  readonly #steps: Statements;
  readonly #schedules: SqliteSchedules;

  /**
   * Actors, mailboxes, wakes and schedules are never held back: reads need none of the
   * store's held rows written, and a step is read held or written (`#step`).
   */
  constructor(
    db: Database.Database,
    pending: PendingRows,
    steps: Statements,
    host: SqliteActorsHost,
  ) {
    this.#pending = pending;
    this.#steps = steps;
    this.#schedules = new SqliteSchedules(db, (fn) => host.write(fn));
    const stmt: Partial<Record<keyof typeof SQL, Database.Statement>> = {};
    for (const name of Object.keys(SQL) as (keyof typeof SQL)[]) stmt[name] = db.prepare(SQL[name]);
    this.#stmt = stmt as { readonly [K in keyof typeof SQL]: Database.Statement };
    this.#host = host;
    this.#db = db;
  }

  /** A read: nothing held needs writing first (see the constructor). */
  #read<T>(fn: () => T): Promise<T> {
    return settle(fn);
  }

  /** A step's record, held or written. */
  #step(stepId: string): StepRecord | undefined {
    const row =
      this.#pending.heldStep(stepId) ?? (this.#steps.getStep.get(stepId) as StepRow | undefined);
    return row ? stepFromRow(row) : undefined;
  }

  /** The step of run `runId` with client token `token`, held or written, if there is one. */
  #byToken(runId: string, token: string): StepRecord | undefined {
    const row =
      this.#pending.heldByToken(runId, token) ??
      (this.#steps.stepByToken.get(runId, token) as StepRow | undefined);
    return row ? stepFromRow(row) : undefined;
  }

  /** The rowid of a step, held or written; `undefined` for an unknown one. */
  #stepRef(stepId: string): number | undefined {
    return (
      this.#host.stepRef(stepId) ??
      (this.#stmt.stepRef.get(stepId) as { step_ref: number } | undefined)?.step_ref
    );
  }

  #actorRow(actorId: string): ActorRow | undefined {
    const row = this.#stmt.actorById.get(actorId) as ActorRow | undefined;
    if (row) this.#remember(actorId, row.actor_ref, row.run_id);
    return row;
  }

  /**
   * Actors' rowids and runs, which never change once written: most writes of a message need
   * no more of the actor, and find it without a look at the index. Forgotten when a
   * transaction rolls back (a row it held may be gone) and, past `MAX_REFS`, all at once.
   */
  readonly #refs = new Map<string, { readonly ref: number; readonly runId: string }>();

  #remember(actorId: string, ref: number, runId: string): void {
    if (this.#refs.size >= MAX_REFS) this.#refs.clear();
    this.#refs.set(actorId, { ref, runId });
  }

  /** The rowid and run of an actor, or `undefined` for an unknown one. */
  #refOf(actorId: string): { readonly ref: number; readonly runId: string } | undefined {
    const known = this.#refs.get(actorId);
    if (known) return known;
    const row = this.#actorRow(actorId);
    return row ? { ref: row.actor_ref, runId: row.run_id } : undefined;
  }

  /** Forgets every actor's rowid (a transaction rolled back). */
  forget(): void {
    this.#refs.clear();
  }

  openActor(actor: ActorRecord, run: RunRecord): Promise<{ actor: ActorRecord; created: boolean }> {
    return this.#host.write(() => {
      const found = this.#actorRow(actor.actor_id);
      if (found) return { actor: actorFromRow(found), created: false };
      this.#host.createRun(run);
      const inserted = this.#stmt.insertActor.run({ ...actor, state: JSON.stringify(actor.state) });
      this.#remember(actor.actor_id, Number(inserted.lastInsertRowid), actor.run_id);
      return { actor, created: true };
    });
  }

  getActor(actorId: string): Promise<ActorRecord | null> {
    return this.#read(() => {
      const row = this.#actorRow(actorId);
      return row ? actorFromRow(row) : null;
    });
  }

  pageActors(query: ActorPageQuery): Promise<ActorRecord[]> {
    return this.#read(() => {
      const where: string[] = [];
      const params: unknown[] = [];
      if (query.before !== undefined) {
        const before = this.#actorRow(query.before);
        if (!before) throw new NotFoundError('actor', query.before);
        where.push('actor_ref < ?');
        params.push(before.actor_ref);
      }
      if (query.userId !== undefined) {
        where.push('user_id IS ?');
        params.push(query.userId);
      }
      if (query.name !== undefined) {
        where.push('name = ?');
        params.push(query.name);
      }
      if (query.status !== undefined) {
        where.push('status IN (SELECT value FROM json_each(?))');
        params.push(JSON.stringify(query.status));
      }
      if (query.keyPrefix !== undefined && query.keyPrefix !== '') {
        // A range on the key index: every key that begins with the prefix.
        where.push('key >= ? AND key < ?');
        params.push(query.keyPrefix, `${query.keyPrefix}\u{10FFFF}`);
      }
      const sql = `SELECT * FROM actors ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
        ORDER BY actor_ref DESC LIMIT ?`;
      params.push(query.limit);
      return (this.#db.prepare(sql).all(...params) as ActorRow[]).map(actorFromRow);
    });
  }

  acceptMessage(actorId: string, step: StepRecord, maxQueue: number): Promise<AcceptedMessage> {
    return this.#host.write(() => {
      const actor = this.#refOf(actorId);
      if (!actor) throw new NotFoundError('actor', actorId);
      // A token seen before is answered with its message, full mailbox or not.
      const seen =
        step.client_token === null ? undefined : this.#byToken(step.run_id, step.client_token);
      if (seen) return { step: seen, created: false };
      const queued = (this.#stmt.queued.get(actor.ref) as { n: number }).n;
      if (queued >= maxQueue) throw mailboxFull(this.#actorRow(actorId) as ActorRow, maxQueue);
      this.#host.createStep(step);
      const claimed = { step, created: true };
      const ref = this.#stepRef(step.step_id) as number;
      this.#stmt.insertMail.run(actor.ref, ref, step.step_id);
      this.#stmt.liveIfIdle.run(actor.ref);
      return claimed;
    });
  }

  openMessages(actorId: string, limit: number): Promise<StepRecord[]> {
    return this.#read(() => {
      const actor = this.#refOf(actorId);
      if (!actor) return [];
      const out: StepRecord[] = [];
      for (const row of this.#stmt.openMessages.all(actor.ref, limit) as { step_id: string }[]) {
        const step = this.#step(row.step_id);
        if (step) out.push(step);
      }
      return out;
    });
  }

  takeMessage(actorId: string, stepId: string): Promise<void> {
    return this.#host.write(() => {
      const actor = this.#refOf(actorId);
      const ref = this.#stepRef(stepId);
      if (actor && ref !== undefined) this.#stmt.takeMail.run(actor.ref, ref);
    });
  }

  mailboxDepth(actorId: string): Promise<number> {
    return this.#read(() => {
      const actor = this.#refOf(actorId);
      return actor ? (this.#stmt.queued.get(actor.ref) as { n: number }).n : 0;
    });
  }

  setActorStatus(actorId: string, status: ActorStatus, updatedAt: string): Promise<void> {
    return this.#host.write(() => {
      if (this.#stmt.setStatus.run(status, updatedAt, actorId).changes === 0) {
        throw new NotFoundError('actor', actorId);
      }
    });
  }

  actorsWith(
    statuses: readonly ActorStatus[],
    after: string | null,
    limit: number,
  ): Promise<ActorRecord[]> {
    return this.#read(() =>
      (this.#stmt.actorsWith.all(JSON.stringify(statuses), after ?? '', limit) as ActorRow[]).map(
        actorFromRow,
      ),
    );
  }

  /**
   * Throws `NotFoundError` unless `write`'s actor exists; called inside the store's end write
   * before anything of it is held.
   */
  checkEnd(write: ActorEndWrite): void {
    if (!this.#refOf(write.actor_id)) throw new NotFoundError('actor', write.actor_id);
  }

  /** Applies a message's end to its actor, inside the store's end write (see `StepEnd.actor`). */
  applyEnd(write: ActorEndWrite, stepId: string): void {
    const actor = this.#refOf(write.actor_id) as { readonly ref: number };
    for (const id of [stepId, ...(write.merged ?? []).map((m) => m.stepId)]) {
      const ref = this.#stepRef(id);
      if (ref !== undefined) this.#stmt.dropMail.run(actor.ref, ref);
      this.#stmt.deleteStepWakes.run(id);
    }
    for (const merged of write.merged ?? []) this.#host.patchStep(merged.stepId, merged.patch);
    if (write.state) {
      this.#stmt.endState.run(
        JSON.stringify(write.state.value),
        write.state.version,
        write.updated_at,
        actor.ref,
        actor.ref,
      );
    } else {
      this.#stmt.endKeep.run(write.updated_at, actor.ref, actor.ref);
    }
  }

  putWake(wake: WakeRecord): Promise<{ wake: WakeRecord; created: boolean }> {
    return this.#host.write(() => {
      const record = JSON.stringify(wake);
      const inserted = this.#stmt.insertWake.run({ ...wake, record }).changes === 1;
      if (inserted) return { wake: JSON.parse(record) as WakeRecord, created: true };
      return { wake: this.#wake(wake.wake_id) as WakeRecord, created: false };
    });
  }

  #wake(wakeId: string): WakeRecord | null {
    return parsed(
      this.#stmt.getWake.get(wakeId) as { record: string } | undefined,
    ) as WakeRecord | null;
  }

  #records<T>(rows: readonly { record: string }[]): T[] {
    return rows.map((r) => JSON.parse(r.record) as T);
  }

  getWake(wakeId: string): Promise<WakeRecord | null> {
    return this.#read(() => this.#wake(wakeId));
  }

  actorWakes(actorId: string): Promise<WakeRecord[]> {
    return this.#read(() =>
      this.#records<WakeRecord>(this.#stmt.actorWakes.all(actorId) as { record: string }[]),
    );
  }

  dueWakes(now: number, limit: number): Promise<WakeRecord[]> {
    return this.#read(() =>
      this.#records<WakeRecord>(this.#stmt.dueWakes.all(now, limit) as { record: string }[]),
    );
  }

  nextWakeAt(): Promise<number | null> {
    return this.#read(() => (this.#stmt.nextWake.get() as { at: number | null }).at);
  }

  fireWake(
    wakeId: string,
    data: unknown,
    firedAt: number,
    timedOut: boolean,
  ): Promise<WakeRecord | null> {
    return this.#host.write(() => {
      const wake = this.#wake(wakeId);
      if (wake?.status !== 'pending') return null;
      const fired: WakeRecord = {
        ...wake,
        status: 'fired',
        data: data ?? null,
        fired_at: firedAt,
        timed_out: timedOut,
      };
      const record = JSON.stringify(fired);
      this.#stmt.updateWake.run('fired', fired.due_at, firedAt, record, wakeId);
      return JSON.parse(record) as WakeRecord;
    });
  }

  firedWakes(limit: number): Promise<WakeRecord[]> {
    return this.#read(() =>
      this.#records<WakeRecord>(this.#stmt.firedWakes.all(limit) as { record: string }[]),
    );
  }

  rearmWake(wakeId: string, dueAt: number): Promise<void> {
    return this.#host.write(() => {
      const wake = this.#wake(wakeId);
      if (!wake) return;
      const next: WakeRecord = { ...wake, status: 'pending', due_at: dueAt, fired_at: null };
      this.#stmt.updateWake.run('pending', dueAt, null, JSON.stringify(next), wakeId);
    });
  }

  deleteWakes(wakeIds: readonly string[]): Promise<void> {
    return this.#host.write(() => {
      for (const id of wakeIds) this.#stmt.deleteWake.run(id);
    });
  }

  eventWaiters(userId: string | null, event: string, limit: number): Promise<WakeRecord[]> {
    return this.#read(() =>
      this.#records<WakeRecord>(
        this.#stmt.eventWaiters.all(event, userId, limit) as { record: string }[],
      ),
    );
  }

  putSchedule(schedule: ScheduleRecord): Promise<{ schedule: ScheduleRecord; created: boolean }> {
    return this.#schedules.putSchedule(schedule);
  }

  getSchedule(scheduleId: string): Promise<ScheduleRecord | null> {
    return this.#schedules.getSchedule(scheduleId);
  }

  listSchedules(userId?: string | null): Promise<ScheduleRecord[]> {
    return this.#schedules.listSchedules(userId);
  }

  updateSchedule(scheduleId: string, patch: SchedulePatch): Promise<void> {
    return this.#schedules.updateSchedule(scheduleId, patch);
  }

  deleteSchedule(scheduleId: string): Promise<boolean> {
    return this.#schedules.deleteSchedule(scheduleId);
  }

  dueSchedules(now: number, limit: number): Promise<ScheduleRecord[]> {
    return this.#schedules.dueSchedules(now, limit);
  }

  nextScheduleAt(): Promise<number | null> {
    return this.#schedules.nextScheduleAt();
  }
}
