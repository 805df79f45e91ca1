/**
 * @module Schedules (issue 46): a message to an actor at each time of a cron expression (five
 * fields, or six with seconds first; parsed by croner), read in an IANA time zone. They are
 * store records with an index of next times, which the durable agents' one clock watches. Each
 * firing is a message whose client token is `schedule:<id>:<due ms>`, so that no firing is
 * delivered twice — by two replicas, or after a restart. A firing that finds the actor busy
 * with the one before does what `overlap` says: `skip` it, `queue` it, or `cancel_previous`.
 * Firings missed while no runtime ran are skipped, or — with `catchup` — delivered, oldest
 * first, each queued behind the one before (`overlap` applies to the first of them, against
 * what was open before: a catch-up is never skipped or cancelled by its own firings).
 */
import { randomBytes } from 'node:crypto';
import { Cron } from 'croner';
import { isoTime } from '../context/clock.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import {
  SCHEDULE_OVERLAPS,
  type ScheduleOverlap,
  type ScheduleRecord,
} from '../store/actor-records.js';
import type { ActorStore } from '../store/actor-store.js';
import { flushed, type RunStore } from '../store/run-store.js';
import type { Clock } from '../context/clock.js';
import type { Logger } from '../observability/logger.js';
import { checkAddress, type ActorAddress } from './actor-address.js';

/** What a schedule is made from (`runtime.schedule`, `POST /v1/schedules`, `axon.yaml`). */
export interface ScheduleInput {
  readonly agent: string;
  readonly key: string;
  readonly message: unknown;
  readonly cron: string;
  /** Default `UTC`. */
  readonly timezone?: string;
  /** Default `skip`. */
  readonly overlap?: ScheduleOverlap;
  /** Default false: firings missed while no runtime ran are skipped. */
  readonly catchup?: boolean;
}

/** A firing later than this after its time (a downtime) is missed, unless `catchup`. */
export const LATE_MS = 60_000;
/** Missed firings delivered at most, with `catchup`. */
export const MAX_CATCHUP = 1_000;

/** What schedules need of the durable agents. */
export interface SchedulesHost {
  readonly store: RunStore;
  readonly actors: ActorStore;
  readonly clock: Clock;
  readonly logger: Logger;
  /** `message` checked against agent `agent`'s input (`NOT_FOUND`, `SCHEMA_VIOLATION`). */
  checkMessage(agent: string, message: unknown): unknown;
  /** Whether the actor is busy with a message (being handled or queued). */
  busy(address: ActorAddress): Promise<boolean>;
  /** Cancels the actor's open messages (overlap `cancel_previous`). */
  cancelOpen(address: ActorAddress): Promise<void>;
  /** Sends a checked message under its token. */
  deliver(address: ActorAddress, message: unknown, token: string): Promise<void>;
  /** Told of a schedule whose next time is sooner than anything else. */
  wakeAdded(at: number): void;
}

/** The cron expression checked and compiled, in its time zone. */
export function compileCron(cron: unknown, timezone: unknown): Cron {
  if (typeof cron !== 'string' || cron.length > 256) {
    throw new InvalidParamsError('cron must be a string of five or six fields', { param: 'cron' });
  }
  const fields = cron.trim().split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) {
    throw new InvalidParamsError(
      `cron "${cron}" does not parse: it has ${fields.length} fields, not five (or six with seconds first)`,
      { param: 'cron' },
    );
  }
  const zone = checkZone(timezone);
  try {
    return new Cron(cron, { timezone: zone, paused: true });
  } catch (err) {
    throw new InvalidParamsError(
      `cron "${cron}" does not parse: ${err instanceof Error ? err.message : String(err)}`,
      { param: 'cron', cause: err },
    );
  }
}

/** An IANA time zone checked (default `UTC`). */
function checkZone(timezone: unknown): string {
  if (timezone === undefined) return 'UTC';
  if (typeof timezone !== 'string' || timezone.length === 0 || timezone.length > 64) {
    throw new InvalidParamsError('timezone must be an IANA time zone name', { param: 'timezone' });
  }
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch {
    throw new InvalidParamsError(`timezone "${timezone}" is not an IANA time zone`, {
      param: 'timezone',
    });
  }
  return timezone;
}

/** The first time of `cron` after `after` (ms), or `null` when it has none left. */
export function nextTime(cron: Cron, after: number): number | null {
  return cron.nextRun(new Date(after))?.getTime() ?? null;
}

/** The schedules of a runtime; see the module. */
export class ActorSchedules {
  readonly #host: SchedulesHost;

  constructor(host: SchedulesHost) {
    this.#host = host;
  }

  /**
   * A new schedule of `userId` (or, with `scheduleId`, the one of that id made again as
   * `input` says — how `axon.yaml`'s schedules are kept, paused or not). Refused, nothing
   * stored: an unknown agent (`NOT_FOUND`), a bad key, cron, time zone, overlap or catchup
   * (`INVALID_PARAMS` naming it), a message that fails the agent's input (`SCHEMA_VIOLATION`).
   */
  async create(
    userId: string | null,
    input: ScheduleInput,
    scheduleId?: string,
  ): Promise<ScheduleRecord> {
    const record = this.#record(userId, input, scheduleId);
    const actors = this.#host.actors;
    if (scheduleId !== undefined) {
      const found = await actors.getSchedule(scheduleId);
      if (found && sameSchedule(found, record)) return found;
      if (found) {
        await actors.deleteSchedule(scheduleId);
        (record as { status: ScheduleRecord['status'] }).status = found.status;
      }
    }
    const { schedule } = await actors.putSchedule(record);
    await flushed(this.#host.store);
    if (schedule.next_at !== null && schedule.status === 'active') {
      this.#host.wakeAdded(schedule.next_at);
    }
    return schedule;
  }

  #record(userId: string | null, input: ScheduleInput, scheduleId?: string): ScheduleRecord {
    if (typeof input !== 'object' || (input as ScheduleInput | null) === null) {
      throw new InvalidParamsError('a schedule must be an object', { param: 'schedule' });
    }
    const cron = compileCron(input.cron, input.timezone);
    const overlap = input.overlap ?? 'skip';
    if (!SCHEDULE_OVERLAPS.includes(overlap)) {
      throw new InvalidParamsError(
        `overlap must be one of ${SCHEDULE_OVERLAPS.join(', ')}, got ${JSON.stringify(overlap)}`,
        { param: 'overlap' },
      );
    }
    if (input.catchup !== undefined && typeof input.catchup !== 'boolean') {
      throw new InvalidParamsError('catchup must be true or false', { param: 'catchup' });
    }
    const address = checkAddress({ name: input.agent, key: input.key, userId });
    const message = this.#host.checkMessage(address.name, input.message);
    const now = this.#host.clock.now();
    return {
      schedule_id: scheduleId ?? `sched_${randomBytes(12).toString('hex')}`,
      user_id: userId,
      agent: address.name,
      key: address.key,
      message,
      cron: input.cron,
      timezone: cron.options.timezone ?? 'UTC',
      overlap,
      catchup: input.catchup ?? false,
      status: 'active',
      next_at: nextTime(cron, now),
      created_at: isoTime(now),
      updated_at: isoTime(now),
    };
  }

  /** The schedules of `userId` (every user's when `undefined`: an admin). */
  list(userId?: string | null): Promise<ScheduleRecord[]> {
    return this.#host.actors.listSchedules(userId);
  }

  /** Schedule `scheduleId` of `userId` (any user's when `undefined`); `NOT_FOUND` otherwise. */
  async get(scheduleId: string, userId?: string | null): Promise<ScheduleRecord> {
    const found = await this.#host.actors.getSchedule(scheduleId);
    if (!found || (userId !== undefined && found.user_id !== userId)) {
      throw new NotFoundError('schedule', scheduleId);
    }
    return found;
  }

  /** Pauses a schedule: it fires no more until resumed. */
  async pause(scheduleId: string, userId?: string | null): Promise<ScheduleRecord> {
    await this.get(scheduleId, userId);
    await this.#host.actors.updateSchedule(scheduleId, {
      status: 'paused',
      updated_at: isoTime(this.#host.clock.now()),
    });
    await flushed(this.#host.store);
    return this.get(scheduleId, userId);
  }

  /** Resumes a paused schedule from its next time after now (what it missed is not sent). */
  async resume(scheduleId: string, userId?: string | null): Promise<ScheduleRecord> {
    const found = await this.get(scheduleId, userId);
    const now = this.#host.clock.now();
    const next = nextTime(compileCron(found.cron, found.timezone), now);
    await this.#host.actors.updateSchedule(scheduleId, {
      status: 'active',
      next_at: next,
      updated_at: isoTime(now),
    });
    await flushed(this.#host.store);
    if (next !== null) this.#host.wakeAdded(next);
    return this.get(scheduleId, userId);
  }

  /** Removes a schedule; `NOT_FOUND` for one that is not there (or not the user's). */
  async delete(scheduleId: string, userId?: string | null): Promise<void> {
    await this.get(scheduleId, userId);
    await this.#host.actors.deleteSchedule(scheduleId);
    await flushed(this.#host.store);
  }

  /** The soonest next time of an active schedule (the clock's source). */
  next(): Promise<number | null> {
    return this.#host.actors.nextScheduleAt();
  }

  /** Fires every schedule due at `now` (the clock's source). */
  async fire(now: number): Promise<void> {
    for (;;) {
      const due = await this.#host.actors.dueSchedules(now, 256);
      for (const schedule of due) {
        try {
          await this.#fire(schedule, now);
        } catch (err) {
          this.#host.logger.error(
            { err, schedule_id: schedule.schedule_id },
            'a schedule could not fire',
          );
        }
      }
      if (due.length < 256) return;
    }
  }

  async #fire(schedule: ScheduleRecord, now: number): Promise<void> {
    const cron = compileCron(schedule.cron, schedule.timezone);
    const times: number[] = [];
    for (let t = schedule.next_at; t !== null && t <= now; t = nextTime(cron, t)) {
      times.push(t);
      if (times.length > MAX_CATCHUP) times.shift();
    }
    const deliver = schedule.catchup ? times : times.filter((t) => now - t <= LATE_MS).slice(-1);
    if (deliver.length < times.length) {
      this.#host.logger.warn(
        { schedule_id: schedule.schedule_id, missed: times.length - deliver.length },
        'a schedule missed firings while no runtime ran (catchup is off)',
      );
    }
    const address: ActorAddress = {
      name: schedule.agent,
      key: schedule.key,
      userId: schedule.user_id,
    };
    // A round's firings (more than one only with catchup) go in order, each queued behind the
    // one before: the overlap is with what was open before the round, not among them.
    for (const [i, t] of deliver.entries()) await this.#deliver(schedule, address, t, i === 0);
    await this.#host.actors.updateSchedule(schedule.schedule_id, {
      next_at: nextTime(cron, Math.max(now, times.at(-1) ?? now)),
      updated_at: isoTime(now),
    });
    await flushed(this.#host.store);
  }

  /** Delivers the firing at `at`; `first` of its round: only then does `overlap` apply. */
  async #deliver(
    schedule: ScheduleRecord,
    address: ActorAddress,
    at: number,
    first: boolean,
  ): Promise<void> {
    if (first && schedule.overlap === 'skip' && (await this.#host.busy(address))) {
      this.#host.logger.info(
        { schedule_id: schedule.schedule_id, at: isoTime(at) },
        'a schedule firing skipped: its actor is busy with the one before (overlap skip)',
      );
      return;
    }
    if (first && schedule.overlap === 'cancel_previous') await this.#host.cancelOpen(address);
    try {
      await this.#host.deliver(address, schedule.message, `schedule:${schedule.schedule_id}:${at}`);
    } catch (err) {
      this.#host.logger.warn(
        { err, schedule_id: schedule.schedule_id },
        "a schedule's message was refused",
      );
    }
  }
}

/** Whether two schedules say the same (their status and times aside). */
function sameSchedule(a: ScheduleRecord, b: ScheduleRecord): boolean {
  const fields = ['user_id', 'agent', 'key', 'cron', 'timezone', 'overlap', 'catchup'] as const;
  return (
    fields.every((f) => a[f] === b[f]) && JSON.stringify(a.message) === JSON.stringify(b.message)
  );
}
