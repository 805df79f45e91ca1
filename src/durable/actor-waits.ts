/**
 * @module A durable agent's waits (issue 46): `sleep`, `waitFor`, `remind`. Each is a stored
 * wake, named by the message and the wait's place among the message's waits (`<step>.<n>`),
 * so that the handler, run again from its start after the wake, finds the waits it passed
 * fired and goes on. A wait not fired yet suspends the message: its context is cancelled
 * with an {@link ActorWaitError}, and nothing of it stays in memory.
 */
import { z } from 'zod';
import type { Clock } from '../context/clock.js';
import type { ExecContext } from '../context/exec-context.js';
import { ActorWaitError } from '../errors/actor-wait-error.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { SchemaViolationError } from '../errors/schema-violation-error.js';
import type { RemindOptions, WaitForOptions } from '../actors/durable-agent.js';
import type { ActorRecord, WakeRecord } from '../store/actor-records.js';
import type { ActorStore } from '../store/actor-store.js';
import { zodIssues } from '../tools/zod-issues.js';

/** The longest a single wait may last (about 24.8 days is JS's timer limit; a wait is not a timer). */
const MAX_WAIT_MS = 10 * 365 * 24 * 3600 * 1000;
/** An event name's form. */
export const EVENT_NAME = /^[A-Za-z0-9._:~/-]{1,128}$/;
/** A reminder name's form. */
const REMINDER_NAME = /^[A-Za-z0-9._:~-]{1,64}$/;

/** What the waits of one message need. */
export interface WaitsHost {
  readonly actors: ActorStore;
  readonly clock: Clock;
  /**
   * Told of a wake due at `dueAt`, once it is durable: the clock reads the store's index when
   * it rings, and must find it there.
   */
  wakeAdded(dueAt: number): void;
  /** Makes the store's writes so far durable (`RunStore.flush`). */
  flush(): Promise<void>;
  /** Checks a reminder's message against the agent's `input`; throws `SchemaViolationError`. */
  checkMessage(message: unknown): unknown;
}

/** The waits of one message of one actor; see the module. */
export class MessageWaits {
  readonly #host: WaitsHost;
  readonly #actor: ActorRecord;
  readonly #stepId: string;
  readonly #ctx: ExecContext;
  /** How many waits (and reminders set) the handler has made so far in this run of it. */
  #n = 0;

  constructor(host: WaitsHost, actor: ActorRecord, stepId: string, ctx: ExecContext) {
    this.#host = host;
    this.#actor = actor;
    this.#stepId = stepId;
    this.#ctx = ctx;
  }

  /** See {@link ActorContext.sleep}. */
  async sleep(duration: number | Date): Promise<void> {
    const n = ++this.#n;
    const now = this.#host.clock.now();
    const due = duration instanceof Date ? duration.getTime() : now + checkMs(duration, 'sleep');
    if (!Number.isFinite(due))
      throw new InvalidParamsError('sleep: an invalid Date', { param: 'until' });
    await this.#wait(n, () => ({ kind: 'sleep', due_at: due }));
  }

  /** See {@link ActorContext.waitFor}. */
  async waitFor<TData>(event: string, options: WaitForOptions<TData> = {}): Promise<TData | null> {
    const n = ++this.#n;
    if (typeof event !== 'string' || !EVENT_NAME.test(event)) {
      throw new InvalidParamsError(`waitFor: an event name must match ${EVENT_NAME.source}`, {
        param: 'event',
      });
    }
    const match = options.match ?? null;
    if (match !== null && (typeof match !== 'object' || Array.isArray(match))) {
      throw new InvalidParamsError('waitFor: match must be an object of fields', {
        param: 'match',
      });
    }
    const timeout =
      options.timeoutMs === undefined ? null : checkMs(options.timeoutMs, 'waitFor timeoutMs');
    const fired = await this.#wait(n, () => ({
      kind: 'event',
      event,
      match: match === null ? null : (JSON.parse(JSON.stringify(match)) as Record<string, unknown>),
      schema: options.schema ? jsonSchemaOf(options.schema) : null,
      due_at: timeout === null ? null : this.#host.clock.now() + timeout,
    }));
    if (fired.timed_out) return null;
    if (!options.schema) return fired.data as TData;
    // The data met the stored JSON Schema; the zod schema gives it its parsed form.
    const parsed = options.schema.safeParse(fired.data);
    if (!parsed.success) throw new SchemaViolationError(`event ${event}`, zodIssues(parsed.error));
    return parsed.data;
  }

  /** See {@link ActorContext.remind}. */
  async remind<TInput>(name: string, options: RemindOptions<TInput>): Promise<void> {
    const n = ++this.#n;
    const wakeId = reminderId(this.#actor.actor_id, checkReminderName(name));
    const setBy = `${this.#stepId}.${n}`;
    const found = await this.#host.actors.getWake(wakeId);
    // Run again after a wait, the handler sets what it set before: nothing changes.
    if ((found?.data as { set_by?: unknown } | null)?.set_by === setBy) return;
    const every = options.every === undefined ? null : checkMs(options.every, 'remind every');
    const now = this.#host.clock.now();
    const at = options.at instanceof Date ? options.at.getTime() : options.at;
    if (at !== undefined && !Number.isFinite(at)) {
      throw new InvalidParamsError('remind: at must be a Date or ms since the epoch', {
        param: 'at',
      });
    }
    if (at === undefined && every === null) {
      throw new InvalidParamsError('remind: give at, every, or both', { param: 'at' });
    }
    const message = this.#host.checkMessage(options.message);
    const due = at ?? now + (every ?? 0);
    if (found) await this.#host.actors.deleteWakes([wakeId]);
    await this.#host.actors.putWake({
      ...this.#base(wakeId, now),
      kind: 'reminder',
      step_id: null,
      name,
      due_at: due,
      every_ms: every,
      message,
      data: { set_by: setBy },
    });
    await this.#host.flush();
    this.#host.wakeAdded(due);
  }

  /** See {@link ActorContext.cancelReminder}. */
  async cancelReminder(name: string): Promise<void> {
    ++this.#n;
    await this.#host.actors.deleteWakes([
      reminderId(this.#actor.actor_id, checkReminderName(name)),
    ]);
  }

  /**
   * The wait `n` of this message: fired already (run again after its wake), it resolves at
   * once; else it is stored (the first time) and the message suspended.
   */
  async #wait(n: number, make: () => Partial<WakeRecord>): Promise<WakeRecord> {
    const wakeId = `${this.#stepId}.${n}`;
    const found = await this.#host.actors.getWake(wakeId);
    if (found?.status === 'fired') return found;
    if (!found) {
      const wake: WakeRecord = { ...this.#base(wakeId, this.#host.clock.now()), ...make() };
      await this.#host.actors.putWake(wake);
      await this.#host.flush();
      if (wake.due_at !== null) this.#host.wakeAdded(wake.due_at);
    }
    const reason = new ActorWaitError(
      wakeId,
      this.#stepId,
      `message ${this.#stepId} of ${this.#actor.name}/${this.#actor.key} waits (wake ${wakeId})`,
    );
    this.#ctx.cancel(reason);
    throw reason;
  }

  #base(wakeId: string, now: number): WakeRecord {
    return {
      wake_id: wakeId,
      actor_id: this.#actor.actor_id,
      user_id: this.#actor.user_id,
      kind: 'sleep',
      step_id: this.#stepId,
      due_at: null,
      event: null,
      name: null,
      match: null,
      schema: null,
      message: null,
      every_ms: null,
      status: 'pending',
      data: null,
      timed_out: false,
      fired_at: null,
      created_at: now,
    };
  }
}

/** The wake id of an actor's reminder `name`. */
export function reminderId(actorId: string, name: string): string {
  return `${actorId}.r.${name}`;
}

function checkReminderName(name: string): string {
  if (typeof name !== 'string' || !REMINDER_NAME.test(name)) {
    throw new InvalidParamsError(`remind: a reminder's name must match ${REMINDER_NAME.source}`, {
      param: 'name',
    });
  }
  return name;
}

/** `ms` checked: a number of milliseconds ≥ 0 and no more than ten years. */
function checkMs(ms: unknown, what: string): number {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0 || ms > MAX_WAIT_MS) {
    throw new InvalidParamsError(
      `${what}: expected milliseconds from 0 to ${MAX_WAIT_MS}, got ${String(ms)}`,
      {
        param: 'ms',
      },
    );
  }
  return ms;
}

/** A zod schema as the JSON Schema a stored wait keeps. */
function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  try {
    return z.toJSONSchema(schema, { io: 'input' });
  } catch (err) {
    throw new InvalidParamsError(
      `waitFor: the schema cannot be kept as JSON Schema (${err instanceof Error ? err.message : String(err)})`,
      { param: 'schema', cause: err },
    );
  }
}
