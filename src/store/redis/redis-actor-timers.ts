/**
 * @module The wakes and schedules of durable agents in the Redis store (issue 46): a hash
 * each, found through sorted sets (`redis-actor-keys.ts`) — pending wakes by due time, fired
 * ones by when they fired, a user's waits for an event by creation, an actor's by due time;
 * schedules by creation and, active ones, by their next firing. A firing, a rearm or a
 * removal moves the wake between its indexes in the same operation of the store's script
 * (`redis-actor-scripts.ts`), so of two firings one wins. `RedisActors` extends it.
 */
import { NotFoundError } from '../../errors/not-found-error.js';
import type { ScheduleRecord, SchedulePatch, WakeRecord } from '../actor-records.js';
import type { WriteTarget } from './redis-batch.js';
import type { RedisClient } from './redis-connection.js';
import { RedisActorKeys } from './redis-actor-keys.js';
import { fromFlat, keyPart, toFields } from './redis-fields.js';
import { Op, type OpCode } from './redis-scripts.js';

/** What the durable agents need of the Redis store they belong to. */
export interface RedisActorsHost {
  /** The store's key prefix. */
  readonly prefix: string;
  /** The connection, for a read: the turn's writes are sent first, so it sees them. */
  read(): RedisClient;
  /** Queues one operation of the store's script (a read one too: it sees the turn's writes). */
  write(
    code: OpCode,
    keys: readonly string[],
    args: readonly string[],
    target?: WriteTarget,
  ): Promise<unknown>;
}

export { fromFlat } from './redis-fields.js';

/** A score argument: `+inf`/`-inf` for infinities; `RangeError` naming `what` for NaN. */
export function scoreArg(n: number, what: string): string {
  if (Number.isNaN(n)) throw new RangeError(`${what} must be a number, got NaN`);
  return n === Infinity ? '+inf' : n === -Infinity ? '-inf' : String(n);
}

/** A time kept in a record (JSON and a score both): `RangeError` naming `what` unless finite. */
export function timeArg(n: number, what: string): string {
  if (!Number.isFinite(n)) throw new RangeError(`${what} must be a finite number, got ${n}`);
  return JSON.stringify(n);
}

/** A count: a whole number ≥ 0, or Infinity (all, as `-1`); `RangeError` naming `what`. */
export function countArg(n: number, what: string): number {
  if (n === Infinity) return -1;
  if (!Number.isInteger(n) || n < 0) {
    throw new RangeError(`${what} must be a whole number >= 0, got ${String(n)}`);
  }
  return n;
}

/** The wakes and schedules of a Redis store; see the module. */
export class RedisActorTimers {
  protected readonly host: RedisActorsHost;
  protected readonly keys: RedisActorKeys;

  constructor(host: RedisActorsHost) {
    this.host = host;
    this.keys = new RedisActorKeys(host.prefix);
  }

  /** A hash, read in the turn's call of the script (after its writes); `null` when absent. */
  protected async hash(key: string): Promise<Record<string, unknown> | null> {
    return fromFlat(await this.host.write(Op.read, [key], []));
  }

  /**
   * The hashes under `hashPrefix` of the members of sorted set `set`, in its order: by rank
   * (`from`, `to`) or by score (`from`, `to`, at most `count`; -1 all), in one operation;
   * of `steps`, each one's record fields only.
   */
  protected async range<T>(
    set: string,
    hashPrefix: string,
    by: 'rank' | 'score',
    from: string,
    to: string,
    count = -1,
    steps = false,
  ): Promise<T[]> {
    const flats = (await this.host.write(
      Op.range,
      [set],
      [hashPrefix, by, from, to, String(count), steps ? '1' : '0'],
    )) as unknown[];
    return flats.map(fromFlat).filter((r): r is Record<string, unknown> => r !== null) as T[];
  }

  /** The members' hashes of `set` by rank, the first `limit` (Infinity: all). */
  #first<T>(set: string, hashPrefix: string, limit: number, what: string): Promise<T[]> {
    const n = countArg(limit, what);
    if (n === 0) return Promise.resolve([]);
    return this.range<T>(set, hashPrefix, 'rank', '0', n === -1 ? '-1' : String(n - 1));
  }

  async putWake(wake: WakeRecord): Promise<{ wake: WakeRecord; created: boolean }> {
    // Its actor's id is part of a key (the actor's wakes): one that cannot be names no actor.
    if (!keyPart(wake.actor_id)) throw new NotFoundError('actor', wake.actor_id);
    const body = toFields(wake);
    const r = (await this.host.write(
      Op.putWake,
      [this.keys.wake(wake.wake_id)],
      [this.host.prefix, wake.wake_id, ...body],
    )) as unknown[];
    if (r[0] === 'created') return { wake: fromFlat(body) as unknown as WakeRecord, created: true };
    return { wake: fromFlat(r[1]) as unknown as WakeRecord, created: false };
  }

  async getWake(wakeId: string): Promise<WakeRecord | null> {
    return (await this.hash(this.keys.wake(wakeId))) as WakeRecord | null;
  }

  async actorWakes(actorId: string): Promise<WakeRecord[]> {
    if (!keyPart(actorId)) return [];
    return this.range<WakeRecord>(
      this.keys.actorWakes(actorId),
      this.keys.wake(''),
      'rank',
      '0',
      '-1',
    );
  }

  async dueWakes(now: number, limit: number): Promise<WakeRecord[]> {
    const n = countArg(limit, 'dueWakes: limit');
    if (n === 0) return [];
    const to = scoreArg(now, 'dueWakes: now');
    return this.range<WakeRecord>(this.keys.dueWakes, this.keys.wake(''), 'score', '-inf', to, n);
  }

  async nextWakeAt(): Promise<number | null> {
    return this.#lowest(this.keys.dueWakes);
  }

  /** The lowest score of a sorted set, or `null` when it is empty. */
  async #lowest(set: string): Promise<number | null> {
    const [, score] = await this.host.read().zrange(set, 0, 0, 'WITHSCORES');
    return score === undefined ? null : Number(score);
  }

  async fireWake(
    wakeId: string,
    data: unknown,
    firedAt: number,
    timedOut: boolean,
  ): Promise<WakeRecord | null> {
    const r = await this.host.write(
      Op.fireWake,
      [this.keys.wake(wakeId)],
      [
        this.host.prefix,
        wakeId,
        JSON.stringify(data ?? null),
        timeArg(firedAt, 'fireWake: firedAt'),
        JSON.stringify(timedOut),
      ],
    );
    return r === 0 ? null : (fromFlat(r) as WakeRecord | null);
  }

  async firedWakes(limit: number): Promise<WakeRecord[]> {
    return this.#first(this.keys.firedWakes, this.keys.wake(''), limit, 'firedWakes: limit');
  }

  async rearmWake(wakeId: string, dueAt: number): Promise<void> {
    await this.host.write(
      Op.rearmWake,
      [this.keys.wake(wakeId)],
      [this.host.prefix, wakeId, timeArg(dueAt, 'rearmWake: dueAt')],
    );
  }

  async deleteWakes(wakeIds: readonly string[]): Promise<void> {
    if (wakeIds.length === 0) return;
    await this.host.write(Op.deleteWakes, [this.keys.dueWakes], [this.host.prefix, ...wakeIds]);
  }

  async eventWaiters(userId: string | null, event: string, limit: number): Promise<WakeRecord[]> {
    const set = this.keys.eventWaits(userId, event);
    return this.#first(set, this.keys.wake(''), limit, 'eventWaiters: limit');
  }

  async putSchedule(
    schedule: ScheduleRecord,
  ): Promise<{ schedule: ScheduleRecord; created: boolean }> {
    const id = schedule.schedule_id;
    const body = toFields(schedule);
    const k = this.keys;
    const r = (await this.host.write(
      Op.putSchedule,
      [
        k.schedule(id),
        k.scheduleSeq,
        k.schedules,
        k.userSchedules(schedule.user_id),
        k.dueSchedules,
      ],
      [id, ...body],
    )) as unknown[];
    const stored = r[0] === 'created' ? body : r[1];
    return { schedule: fromFlat(stored) as unknown as ScheduleRecord, created: r[0] === 'created' };
  }

  async getSchedule(scheduleId: string): Promise<ScheduleRecord | null> {
    return (await this.hash(this.keys.schedule(scheduleId))) as ScheduleRecord | null;
  }

  async listSchedules(userId?: string | null): Promise<ScheduleRecord[]> {
    const set = userId === undefined ? this.keys.schedules : this.keys.userSchedules(userId);
    return this.range<ScheduleRecord>(set, this.keys.schedule(''), 'rank', '0', '-1');
  }

  async updateSchedule(scheduleId: string, patch: SchedulePatch): Promise<void> {
    const r = await this.host.write(
      Op.updateSchedule,
      [this.keys.schedule(scheduleId), this.keys.dueSchedules],
      [scheduleId, ...toFields(patch)],
    );
    if (r !== 1) throw new NotFoundError('schedule', scheduleId);
  }

  async deleteSchedule(scheduleId: string): Promise<boolean> {
    const k = this.keys;
    const r = await this.host.write(
      Op.deleteSchedule,
      [k.schedule(scheduleId), k.schedules, k.dueSchedules],
      [scheduleId, k.schedulesOfUser],
    );
    return r === 1;
  }

  async dueSchedules(now: number, limit: number): Promise<ScheduleRecord[]> {
    const n = countArg(limit, 'dueSchedules: limit');
    if (n === 0) return [];
    const to = scoreArg(now, 'dueSchedules: now');
    return this.range(this.keys.dueSchedules, this.keys.schedule(''), 'score', '-inf', to, n);
  }

  async nextScheduleAt(): Promise<number | null> {
    return this.#lowest(this.keys.dueSchedules);
  }
}
