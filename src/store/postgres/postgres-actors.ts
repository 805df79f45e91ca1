/**
 * @module The PostgreSQL store's durable agents (schema version 4; issue 46): actors, their
 * mailboxes, wakes and schedules in tables of the store's schema. Writes and point reads are
 * operations of the store's batches (`postgres-actor-functions.ts`: one function each, so one
 * transaction each, atomic against every other process on the schema); lists are statements
 * of their own once the batches asked before them have committed, each read through an index.
 * A message's end is the step end's operation (`PostgresRunStore.endStep`, `end_message`).
 */
import type pg from 'pg';
import { NotFoundError } from '../../errors/not-found-error.js';
import type {
  ActorPageQuery,
  ActorRecord,
  ActorStatus,
  ScheduleRecord,
  SchedulePatch,
  WakeRecord,
} from '../actor-records.js';
import type { AcceptedMessage, ActorStore } from '../actor-store.js';
import type { RunRecord, StepRecord } from '../records.js';
import type { BatchOp } from './postgres-batch.js';

/** What the actors need of their store. */
export interface PostgresActorsHost {
  /** The quoted schema. */
  readonly s: string;
  /** `op` in the store's next batch; resolves its value once the batch has committed. */
  run<T>(op: BatchOp): Promise<T>;
  /** One statement, once the batches asked before have committed. */
  q(text: string, values?: readonly unknown[]): Promise<pg.QueryResult>;
}

/** The record of each row of `rows`' `record` column. */
const records = <T>(rows: readonly unknown[]): T[] => rows.map((r) => (r as { record: T }).record);

/** The `at` of a `min(...) AS at` row, or `null`. */
const soonest = (rows: readonly unknown[]): number | null =>
  (rows[0] as { at: number | null } | undefined)?.at ?? null;

/** The end of every key beginning with a prefix, in code-point order (`COLLATE "C"`). */
const PREFIX_END = '\u{10FFFF}';

/** The durable agents of a {@link PostgresRunStore}; see the module. */
export class PostgresActors implements ActorStore {
  readonly #host: PostgresActorsHost;
  readonly #s: string;

  constructor(host: PostgresActorsHost) {
    this.#host = host;
    this.#s = host.s;
  }

  async #rows(text: string, values: readonly unknown[] = []): Promise<unknown[]> {
    const { rows } = await this.#host.q(text, values);
    return rows as unknown[];
  }

  openActor(actor: ActorRecord, run: RunRecord): Promise<{ actor: ActorRecord; created: boolean }> {
    return this.#host.run({ op: 'open_actor', actor, run });
  }

  getActor(actorId: string): Promise<ActorRecord | null> {
    return this.#host.run({ op: 'get_actor', id: actorId });
  }

  async pageActors(query: ActorPageQuery): Promise<ActorRecord[]> {
    const where: string[] = [];
    const values: unknown[] = [];
    const param = (value: unknown): string => `$${values.push(value)}`;
    if (query.before !== undefined) {
      const [before] = await this.#rows(`SELECT seq FROM ${this.#s}.actors WHERE actor_id = $1`, [
        query.before,
      ]);
      if (!before) throw new NotFoundError('actor', query.before);
      where.push(`seq < ${param((before as { seq: string }).seq)}`);
    }
    // `= NULL` matches nothing: the actors of nobody are asked for as such (on the index).
    if (query.userId === null) where.push('user_id IS NULL');
    else if (query.userId !== undefined) where.push(`user_id = ${param(query.userId)}`);
    if (query.name !== undefined) where.push(`name = ${param(query.name)}`);
    if (query.status !== undefined) where.push(`status = ANY(${param(query.status)})`);
    if (query.keyPrefix !== undefined && query.keyPrefix !== '') {
      // A range on the key index: every key that begins with the prefix.
      where.push(
        `key >= ${param(query.keyPrefix)} AND key < ${param(`${query.keyPrefix}${PREFIX_END}`)}`,
      );
    }
    const rows = await this.#rows(
      `SELECT to_jsonb(a) - 'seq' AS record FROM ${this.#s}.actors a
       ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
       ORDER BY seq DESC LIMIT ${param(query.limit)}`,
      values,
    );
    return records(rows);
  }

  async acceptMessage(
    actorId: string,
    step: StepRecord,
    maxQueue: number,
  ): Promise<AcceptedMessage> {
    const found = await this.#host.run<{ step?: StepRecord }>({
      op: 'accept_message',
      id: actorId,
      step,
      max_queue: maxQueue,
    });
    return found.step ? { step: found.step, created: false } : { step, created: true };
  }

  async openMessages(actorId: string, limit: number): Promise<StepRecord[]> {
    const rows = await this.#rows(
      `SELECT s.record FROM ${this.#s}.mailbox m JOIN ${this.#s}.steps s ON s.step_id = m.step_id
       WHERE m.actor_id = $1 ORDER BY m.queued, m.seq LIMIT $2`,
      [actorId, limit],
    );
    return records(rows);
  }

  async takeMessage(actorId: string, stepId: string): Promise<void> {
    await this.#host.run({ op: 'take_message', actor_id: actorId, id: stepId });
  }

  async mailboxDepth(actorId: string): Promise<number> {
    const [row] = await this.#rows(
      `SELECT count(*)::int AS n FROM ${this.#s}.mailbox WHERE actor_id = $1 AND queued`,
      [actorId],
    );
    return (row as { n: number }).n;
  }

  async setActorStatus(actorId: string, status: ActorStatus, updatedAt: string): Promise<void> {
    await this.#host.run({
      op: 'set_actor_status',
      id: actorId,
      status,
      updated_at: updatedAt,
    });
  }

  async actorsWith(
    statuses: readonly ActorStatus[],
    after: string | null,
    limit: number,
  ): Promise<ActorRecord[]> {
    const rows = await this.#rows(
      `SELECT to_jsonb(a) - 'seq' AS record FROM ${this.#s}.actors a
       WHERE status = ANY($1) AND actor_id > $2 ORDER BY actor_id LIMIT $3`,
      [statuses, after ?? '', limit],
    );
    return records(rows);
  }

  putWake(wake: WakeRecord): Promise<{ wake: WakeRecord; created: boolean }> {
    return this.#host.run({ op: 'put_wake', wake });
  }

  getWake(wakeId: string): Promise<WakeRecord | null> {
    return this.#host.run({ op: 'get_wake', id: wakeId });
  }

  async actorWakes(actorId: string): Promise<WakeRecord[]> {
    return records(
      await this.#rows(
        `SELECT record FROM ${this.#s}.wakes WHERE actor_id = $1 ORDER BY due_at NULLS LAST`,
        [actorId],
      ),
    );
  }

  async dueWakes(now: number, limit: number): Promise<WakeRecord[]> {
    return records(
      await this.#rows(
        `SELECT record FROM ${this.#s}.wakes
         WHERE status = 'pending' AND due_at IS NOT NULL AND due_at <= $1 ORDER BY due_at LIMIT $2`,
        [now, limit],
      ),
    );
  }

  async nextWakeAt(): Promise<number | null> {
    return soonest(
      await this.#rows(
        `SELECT min(due_at) AS at FROM ${this.#s}.wakes WHERE status = 'pending' AND due_at IS NOT NULL`,
      ),
    );
  }

  fireWake(
    wakeId: string,
    data: unknown,
    firedAt: number,
    timedOut: boolean,
  ): Promise<WakeRecord | null> {
    return this.#host.run({
      op: 'fire_wake',
      id: wakeId,
      data: data ?? null,
      fired_at: firedAt,
      timed_out: timedOut,
    });
  }

  async firedWakes(limit: number): Promise<WakeRecord[]> {
    return records(
      await this.#rows(
        `SELECT record FROM ${this.#s}.wakes WHERE status = 'fired' AND kind <> 'reminder'
         ORDER BY fired_at LIMIT $1`,
        [limit],
      ),
    );
  }

  async rearmWake(wakeId: string, dueAt: number): Promise<void> {
    await this.#host.run({ op: 'rearm_wake', id: wakeId, due_at: dueAt });
  }

  async deleteWakes(wakeIds: readonly string[]): Promise<void> {
    if (wakeIds.length === 0) return;
    await this.#host.run({ op: 'delete_wakes', ids: wakeIds });
  }

  async eventWaiters(userId: string | null, event: string, limit: number): Promise<WakeRecord[]> {
    // `= NULL` matches nothing: the waits of nobody are asked for as such (on the index).
    const user = userId === null ? 'user_id IS NULL' : 'user_id = $3';
    return records(
      await this.#rows(
        `SELECT record FROM ${this.#s}.wakes
         WHERE status = 'pending' AND event = $1 AND ${user} ORDER BY created LIMIT $2`,
        userId === null ? [event, limit] : [event, limit, userId],
      ),
    );
  }

  putSchedule(schedule: ScheduleRecord): Promise<{ schedule: ScheduleRecord; created: boolean }> {
    return this.#host.run({ op: 'put_schedule', schedule });
  }

  getSchedule(scheduleId: string): Promise<ScheduleRecord | null> {
    return this.#host.run({ op: 'get_schedule', id: scheduleId });
  }

  async listSchedules(userId?: string | null): Promise<ScheduleRecord[]> {
    const where =
      userId === undefined ? '' : userId === null ? 'WHERE user_id IS NULL' : 'WHERE user_id = $1';
    return records(
      await this.#rows(
        `SELECT record FROM ${this.#s}.schedules ${where} ORDER BY seq`,
        typeof userId === 'string' ? [userId] : [],
      ),
    );
  }

  async updateSchedule(scheduleId: string, patch: SchedulePatch): Promise<void> {
    // Only the fields set: JSON has no `undefined`, and an absent field keeps its value.
    const set: Record<string, unknown> = {};
    if (patch.status !== undefined) set['status'] = patch.status;
    if (patch.next_at !== undefined) set['next_at'] = patch.next_at;
    if (patch.updated_at !== undefined) set['updated_at'] = patch.updated_at;
    await this.#host.run({ op: 'update_schedule', id: scheduleId, patch: set });
  }

  deleteSchedule(scheduleId: string): Promise<boolean> {
    return this.#host.run({ op: 'delete_schedule', id: scheduleId });
  }

  async dueSchedules(now: number, limit: number): Promise<ScheduleRecord[]> {
    return records(
      await this.#rows(
        `SELECT record FROM ${this.#s}.schedules
         WHERE status = 'active' AND next_at IS NOT NULL AND next_at <= $1
         ORDER BY next_at LIMIT $2`,
        [now, limit],
      ),
    );
  }

  async nextScheduleAt(): Promise<number | null> {
    return soonest(
      await this.#rows(
        `SELECT min(next_at) AS at FROM ${this.#s}.schedules
         WHERE status = 'active' AND next_at IS NOT NULL`,
      ),
    );
  }
}
