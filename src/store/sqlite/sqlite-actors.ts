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

import { stepFromRow, type StepRow } from './sqlite-rows.js';

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
  insertMail: 'INSERT INTO mailbox (actor_ref, step_ref, queued) VALUES (?, ?, 1)',
  takeMail: 'UPDATE mailbox SET queued = 0 WHERE actor_ref = ? AND step_ref = ?',
  dropMail: 'DELETE FROM mailbox WHERE actor_ref = ? AND step_ref = ?',
  openMessages: `SELECT s.step_id, ? AS run_id, s.client_token, s.record
       FROM mailbox m JOIN steps s ON s.step_ref = m.step_ref
       WHERE m.actor_ref = ? ORDER BY m.queued, m.step_ref LIMIT ?`,
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
  insertSchedule: `INSERT INTO schedules (schedule_id, user_id, status, next_at, record)
       VALUES (?, ?, ?, ?, ?) ON CONFLICT (schedule_id) DO NOTHING`,
  getSchedule: 'SELECT record FROM schedules WHERE schedule_id = ?',
  listSchedules: 'SELECT record FROM schedules ORDER BY schedule_ref',
  listUserSchedules: 'SELECT record FROM schedules WHERE user_id IS ? ORDER BY schedule_ref',
  updateSchedule: 'UPDATE schedules SET status = ?, next_at = ?, record = ? WHERE schedule_id = ?',
  deleteSchedule: 'DELETE FROM schedules WHERE schedule_id = ?',
  dueSchedules: `SELECT record FROM schedules WHERE status = 'active' AND next_at IS NOT NULL
       AND next_at <= ? ORDER BY next_at LIMIT ?`,
  nextSchedule: `SELECT min(next_at) AS at FROM schedules WHERE status = 'active' AND next_at IS NOT NULL`,
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

/** The record a row holds as JSON, or `null` for no row. */
function parsed(row: { record: string } | undefined): unknown {
  return row ? JSON.parse(row.record) : null;
}

/** What the actors need of their store, inside its turn's transaction. */
export interface SqliteActorsHost {
  /** A write in the turn's transaction (the store's, holding its rows back). */
  write<T>(fn: () => T): Promise<T>;
  /** A read, after the store's held rows are written. */
  read<T>(fn: () => T): Promise<T>;
  /** Creates a run (held), as `createRun`; throws when its id is taken. */
  createRun(run: RunRecord): void;
  /** Claims a step by its client token, as `claimStep` (under the write). */
  claim(step: StepRecord): { readonly step: StepRecord; readonly created: boolean };
  /** The step of run `runId` with client token `token`, held or written, if there is one. */
  byToken(runId: string, token: string): StepRecord | undefined;
  /** The rowid of a step the store holds back (not written yet); `undefined` otherwise. */
  heldStepRef(stepId: string): number | undefined;
  /** Applies an end to a step (a merged message's), held or written; false when unknown. */
  patchStep(stepId: string, patch: StepPatch): boolean;
}

/** The durable agents of a {@link SqliteRunStore}; see the module. */
export class SqliteActors implements ActorStore {
  readonly #stmt: { readonly [K in keyof typeof SQL]: Database.Statement };
  readonly #host: SqliteActorsHost;
  readonly #db: Database.Database;

  constructor(db: Database.Database, host: SqliteActorsHost) {
    const stmt: Partial<Record<keyof typeof SQL, Database.Statement>> = {};
    for (const name of Object.keys(SQL) as (keyof typeof SQL)[]) stmt[name] = db.prepare(SQL[name]);
    this.#stmt = stmt as { readonly [K in keyof typeof SQL]: Database.Statement };
    this.#host = host;
    this.#db = db;
  }

  /** The rowid of a step, held or written; `undefined` for an unknown one. */
  #stepRef(stepId: string): number | undefined {
    return (
      this.#host.heldStepRef(stepId) ??
      (this.#stmt.stepRef.get(stepId) as { step_ref: number } | undefined)?.step_ref
    );
  }

  #actorRow(actorId: string): ActorRow | undefined {
    return this.#stmt.actorById.get(actorId) as ActorRow | undefined;
  }

  openActor(actor: ActorRecord, run: RunRecord): Promise<{ actor: ActorRecord; created: boolean }> {
    return this.#host.write(() => {
      const found = this.#actorRow(actor.actor_id);
      if (found) return { actor: actorFromRow(found), created: false };
      this.#host.createRun(run);
      this.#stmt.insertActor.run({ ...actor, state: JSON.stringify(actor.state) });
      return { actor, created: true };
    });
  }

  getActor(actorId: string): Promise<ActorRecord | null> {
    return this.#host.read(() => {
      const row = this.#actorRow(actorId);
      return row ? actorFromRow(row) : null;
    });
  }

  pageActors(query: ActorPageQuery): Promise<ActorRecord[]> {
    return this.#host.read(() => {
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
      const actor = this.#actorRow(actorId);
      if (!actor) throw new NotFoundError('actor', actorId);
      // A token seen before is answered with its message, full mailbox or not.
      const seen =
        step.client_token === null ? undefined : this.#host.byToken(step.run_id, step.client_token);
      if (seen) return { step: seen, created: false };
      const queued = (this.#stmt.queued.get(actor.actor_ref) as { n: number }).n;
      if (queued >= maxQueue) throw mailboxFull(actor, maxQueue);
      const claimed = this.#host.claim(step);
      if (!claimed.created) return claimed;
      const ref = this.#stepRef(step.step_id) as number;
      this.#stmt.insertMail.run(actor.actor_ref, ref);
      this.#stmt.liveIfIdle.run(actor.actor_ref);
      return claimed;
    });
  }

  openMessages(actorId: string, limit: number): Promise<StepRecord[]> {
    return this.#host.read(() => {
      const actor = this.#actorRow(actorId);
      if (!actor) return [];
      const rows = this.#stmt.openMessages.all(actor.run_id, actor.actor_ref, limit) as StepRow[];
      return rows.map(stepFromRow);
    });
  }

  takeMessage(actorId: string, stepId: string): Promise<void> {
    return this.#host.write(() => {
      const actor = this.#actorRow(actorId);
      const ref = this.#stepRef(stepId);
      if (actor && ref !== undefined) this.#stmt.takeMail.run(actor.actor_ref, ref);
    });
  }

  mailboxDepth(actorId: string): Promise<number> {
    return this.#host.read(() => {
      const actor = this.#actorRow(actorId);
      return actor ? (this.#stmt.queued.get(actor.actor_ref) as { n: number }).n : 0;
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
    return this.#host.read(() =>
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
    if (!this.#actorRow(write.actor_id)) throw new NotFoundError('actor', write.actor_id);
  }

  /** Applies a message's end to its actor, inside the store's end write (see `StepEnd.actor`). */
  applyEnd(write: ActorEndWrite, stepId: string): void {
    const actor = this.#actorRow(write.actor_id) as ActorRow;
    for (const id of [stepId, ...(write.merged ?? []).map((m) => m.stepId)]) {
      const ref = this.#stepRef(id);
      if (ref !== undefined) this.#stmt.dropMail.run(actor.actor_ref, ref);
      this.#stmt.deleteStepWakes.run(id);
    }
    for (const merged of write.merged ?? []) this.#host.patchStep(merged.stepId, merged.patch);
    if (write.state) {
      this.#stmt.endState.run(
        JSON.stringify(write.state.value),
        write.state.version,
        write.updated_at,
        actor.actor_ref,
        actor.actor_ref,
      );
    } else {
      this.#stmt.endKeep.run(write.updated_at, actor.actor_ref, actor.actor_ref);
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
    return this.#host.read(() => this.#wake(wakeId));
  }

  actorWakes(actorId: string): Promise<WakeRecord[]> {
    return this.#host.read(() =>
      this.#records<WakeRecord>(this.#stmt.actorWakes.all(actorId) as { record: string }[]),
    );
  }

  dueWakes(now: number, limit: number): Promise<WakeRecord[]> {
    return this.#host.read(() =>
      this.#records<WakeRecord>(this.#stmt.dueWakes.all(now, limit) as { record: string }[]),
    );
  }

  nextWakeAt(): Promise<number | null> {
    return this.#host.read(() => (this.#stmt.nextWake.get() as { at: number | null }).at);
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
    return this.#host.read(() =>
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
    return this.#host.read(() =>
      this.#records<WakeRecord>(
        this.#stmt.eventWaiters.all(event, userId, limit) as { record: string }[],
      ),
    );
  }

  putSchedule(schedule: ScheduleRecord): Promise<{ schedule: ScheduleRecord; created: boolean }> {
    return this.#host.write(() => {
      const record = JSON.stringify(schedule);
      const { schedule_id: id, user_id: user, status, next_at: nextAt } = schedule;
      if (this.#stmt.insertSchedule.run(id, user, status, nextAt, record).changes === 1) {
        return { schedule: JSON.parse(record) as ScheduleRecord, created: true };
      }
      return { schedule: this.#schedule(id) as ScheduleRecord, created: false };
    });
  }

  #schedule(scheduleId: string): ScheduleRecord | null {
    return parsed(
      this.#stmt.getSchedule.get(scheduleId) as { record: string } | undefined,
    ) as ScheduleRecord | null;
  }

  getSchedule(scheduleId: string): Promise<ScheduleRecord | null> {
    return this.#host.read(() => this.#schedule(scheduleId));
  }

  listSchedules(userId?: string | null): Promise<ScheduleRecord[]> {
    return this.#host.read(() =>
      this.#records<ScheduleRecord>(
        (userId === undefined
          ? this.#stmt.listSchedules.all()
          : this.#stmt.listUserSchedules.all(userId)) as { record: string }[],
      ),
    );
  }

  updateSchedule(scheduleId: string, patch: SchedulePatch): Promise<void> {
    return this.#host.write(() => {
      const found = this.#schedule(scheduleId);
      if (!found) throw new NotFoundError('schedule', scheduleId);
      const next = { ...found, ...patch };
      this.#stmt.updateSchedule.run(next.status, next.next_at, JSON.stringify(next), scheduleId);
    });
  }

  deleteSchedule(scheduleId: string): Promise<boolean> {
    return this.#host.write(() => this.#stmt.deleteSchedule.run(scheduleId).changes === 1);
  }

  dueSchedules(now: number, limit: number): Promise<ScheduleRecord[]> {
    return this.#host.read(() =>
      this.#records<ScheduleRecord>(
        this.#stmt.dueSchedules.all(now, limit) as { record: string }[],
      ),
    );
  }

  nextScheduleAt(): Promise<number | null> {
    return this.#host.read(() => (this.#stmt.nextSchedule.get() as { at: number | null }).at);
  }
}
