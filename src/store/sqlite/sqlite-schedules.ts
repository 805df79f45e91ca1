/**
 * @module The SQLite store's schedules of durable agents (migration 9; issue 46): each a
 * record as JSON beside its status and next time, which an index of due times reads.
 */
import type Database from 'better-sqlite3';
import { NotFoundError } from '../../errors/not-found-error.js';
import type { ScheduleRecord, SchedulePatch } from '../actor-records.js';
import { settle } from './sqlite-turn-commit.js';

const SQL = {
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

/** The records rows hold as JSON. */
function records<T>(rows: readonly { record: string }[]): T[] {
  return rows.map((r) => JSON.parse(r.record) as T);
}

/** See the module; writes go through the store's turn (`write`). */
export class SqliteSchedules {
  readonly #stmt: { readonly [K in keyof typeof SQL]: Database.Statement };
  readonly #write: <T>(fn: () => T) => Promise<T>;

  constructor(db: Database.Database, write: <T>(fn: () => T) => Promise<T>) {
    const stmt: Partial<Record<keyof typeof SQL, Database.Statement>> = {};
    for (const name of Object.keys(SQL) as (keyof typeof SQL)[]) stmt[name] = db.prepare(SQL[name]);
    this.#stmt = stmt as { readonly [K in keyof typeof SQL]: Database.Statement };
    this.#write = write;
  }

  #read<T>(fn: () => T): Promise<T> {
    return settle(fn);
  }

  putSchedule(schedule: ScheduleRecord): Promise<{ schedule: ScheduleRecord; created: boolean }> {
    return this.#write(() => {
      const record = JSON.stringify(schedule);
      const { schedule_id: id, user_id: user, status, next_at: nextAt } = schedule;
      if (this.#stmt.insertSchedule.run(id, user, status, nextAt, record).changes === 1) {
        return { schedule: JSON.parse(record) as ScheduleRecord, created: true };
      }
      return { schedule: this.#schedule(id) as ScheduleRecord, created: false };
    });
  }

  #schedule(scheduleId: string): ScheduleRecord | null {
    const row = this.#stmt.getSchedule.get(scheduleId) as { record: string } | undefined;
    return row ? (JSON.parse(row.record) as ScheduleRecord) : null;
  }

  getSchedule(scheduleId: string): Promise<ScheduleRecord | null> {
    return this.#read(() => this.#schedule(scheduleId));
  }

  listSchedules(userId?: string | null): Promise<ScheduleRecord[]> {
    return this.#read(() =>
      records<ScheduleRecord>(
        (userId === undefined
          ? this.#stmt.listSchedules.all()
          : this.#stmt.listUserSchedules.all(userId)) as { record: string }[],
      ),
    );
  }

  updateSchedule(scheduleId: string, patch: SchedulePatch): Promise<void> {
    return this.#write(() => {
      const found = this.#schedule(scheduleId);
      if (!found) throw new NotFoundError('schedule', scheduleId);
      const next = { ...found, ...patch };
      this.#stmt.updateSchedule.run(next.status, next.next_at, JSON.stringify(next), scheduleId);
    });
  }

  deleteSchedule(scheduleId: string): Promise<boolean> {
    return this.#write(() => this.#stmt.deleteSchedule.run(scheduleId).changes === 1);
  }

  dueSchedules(now: number, limit: number): Promise<ScheduleRecord[]> {
    return this.#read(() =>
      records<ScheduleRecord>(this.#stmt.dueSchedules.all(now, limit) as { record: string }[]),
    );
  }

  nextScheduleAt(): Promise<number | null> {
    return this.#read(() => (this.#stmt.nextSchedule.get() as { at: number | null }).at);
  }
}
