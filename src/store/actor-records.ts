/**
 * @module The stored shapes of durable agents (issue 46): an actor (a durable agent under a
 * key, with its state and its run), the wakes that bring a waiting actor back (a timer, an
 * event it waits for, a reminder) and the schedules that message actors on a cron. API.md
 * field names, snake_case, as the other records.
 */
import { createHash } from 'node:crypto';
import { QueueFullError } from '../errors/queue-full-error.js';
import type { StepPatch } from './records.js';

/**
 * What an actor is doing, as the store knows it: `idle` (no message unfinished), `live` (a
 * message queued or being handled: a runtime starting on the store picks it up), `waiting`
 * (its message waits on a wake: nothing to do until one fires).
 */
export type ActorStatus = 'idle' | 'live' | 'waiting';

/**
 * A durable agent under one key: the actor (`name`, `key`) of one user. Its messages are the
 * steps of its run `run_id`, in the order accepted; its `state` is the one every succeeded
 * message left, at the definition's `version`.
 */
export interface ActorRecord {
  /** Derived from (user, name, key): see {@link actorIdOf}. */
  readonly actor_id: string;
  readonly user_id: string | null;
  /** The durable agent's registered name. */
  readonly name: string;
  readonly key: string;
  readonly run_id: string;
  /** The version of the definition its `state` is at. */
  readonly version: number;
  readonly state: unknown;
  readonly status: ActorStatus;
  readonly created_at: string;
  readonly updated_at: string;
}

/**
 * The id of the actor (`name`, `key`) of `userId`: the same in every process and store, so
 * that finding an actor and creating it race on one key.
 */
export function actorIdOf(userId: string | null, name: string, key: string): string {
  const hash = createHash('sha256')
    .update(`${userId ?? ''}\u0000${name}\u0000${key}`)
    .digest('hex');
  return `actor_${hash.slice(0, 32)}`;
}

/** The run entry of an actor's run: `actor:<name>/<key>`. */
export function actorEntry(name: string, key: string): string {
  return `${ACTOR_ENTRY_PREFIX}${name}/${key}`;
}

/** How the entry of every actor's run begins. */
export const ACTOR_ENTRY_PREFIX = 'actor:';

/**
 * What brings a waiting actor back: `sleep` (its message sleeps until `due_at`), `event` (its
 * message waits for the event `event` whose data fits `match` and `schema`, until `due_at` if
 * it has one), `reminder` (a message to the actor at `due_at`, then every `every_ms`).
 */
export type WakeKind = 'sleep' | 'event' | 'reminder';

/** `pending` until it fires; `fired` once its time came or its event did (sleeps and events). */
export type WakeStatus = 'pending' | 'fired';

/** A stored wake: see {@link WakeKind}. Nothing of it is kept in memory. */
export interface WakeRecord {
  /**
   * A sleep's or an event wait's: `<step_id>.<n>`, its message's `n`-th wait; a reminder's:
   * `<actor_id>.<name>`.
   */
  readonly wake_id: string;
  readonly actor_id: string;
  readonly user_id: string | null;
  readonly kind: WakeKind;
  /** The message that waits (sleep, event); `null` for a reminder. */
  readonly step_id: string | null;
  /** When it fires, in ms since the epoch; an event wait's timeout (`null`: none). */
  readonly due_at: number | null;
  /** The event waited for (kind `event`); `null` otherwise. */
  readonly event: string | null;
  /** A reminder's name; `null` otherwise. */
  readonly name: string | null;
  /** Fields the event's data must have, each equal (kind `event`); `null`: any data. */
  readonly match: Readonly<Record<string, unknown>> | null;
  /** The JSON Schema (2020-12) the event's data must meet (kind `event`); `null`: any. */
  readonly schema: Readonly<Record<string, unknown>> | null;
  /** A reminder's message to the actor; `null` otherwise. */
  readonly message: unknown;
  /** A reminder's period in ms (`null`: once). */
  readonly every_ms: number | null;
  readonly status: WakeStatus;
  /** What it fired with: the event's data; `null` for a timer (or an event wait that timed out). */
  readonly data: unknown;
  /** Whether an event wait fired on its timeout rather than its event. */
  readonly timed_out: boolean;
  readonly fired_at: number | null;
  readonly created_at: number;
}

/** What a schedule does when a firing finds its actor still busy with the one before. */
export type ScheduleOverlap = 'skip' | 'queue' | 'cancel_previous';

/** Every overlap policy. */
export const SCHEDULE_OVERLAPS: readonly ScheduleOverlap[] = ['skip', 'queue', 'cancel_previous'];

/** A schedule: `message` to the actor (`agent`, `key`) of its user at each time of `cron`. */
export interface ScheduleRecord {
  readonly schedule_id: string;
  readonly user_id: string | null;
  readonly agent: string;
  readonly key: string;
  readonly message: unknown;
  /** Five fields, or six with seconds first. */
  readonly cron: string;
  /** The IANA time zone `cron` is read in. */
  readonly timezone: string;
  readonly overlap: ScheduleOverlap;
  /** Whether firings missed while no runtime ran are delivered late (each), or skipped. */
  readonly catchup: boolean;
  readonly status: 'active' | 'paused';
  /** Its next firing, in ms since the epoch; `null` when the cron has none left. */
  readonly next_at: number | null;
  readonly created_at: string;
  readonly updated_at: string;
}

/** The fields of a schedule that change after creation. */
export type SchedulePatch = Partial<Pick<ScheduleRecord, 'status' | 'next_at' | 'updated_at'>>;

/**
 * What a message's end writes to its actor, with the step's end in the same write
 * (`StepEnd.actor`): the state the message left, the wakes it is done with, the messages
 * merged into it. The actor's status becomes `live` when messages are still queued, else
 * `idle`.
 */
export interface ActorEndWrite {
  readonly actor_id: string;
  /** The actor's new state and its version; absent, the state stays as it was. */
  readonly state?: { readonly value: unknown; readonly version: number };
  readonly updated_at: string;
  /**
   * Queued messages folded into this one (a `merge` mailbox), each ended with it: its
   * record's end (their `started` and `end` ride in the step end's `events`).
   */
  readonly merged?: readonly { readonly stepId: string; readonly patch: StepPatch }[];
}

/** A page of actors: newest first, from the store's indexes. */
export interface ActorPageQuery {
  /** Only the actors of this user (`null`: of nobody); absent, every user's. */
  readonly userId?: string | null;
  /** Only the actors of this agent. */
  readonly name?: string;
  /** Only actors with one of these statuses. */
  readonly status?: readonly ActorStatus[];
  /** Only actors whose key begins with this. */
  readonly keyPrefix?: string;
  /** Only actors created before this one (the last of the page before). */
  readonly before?: string;
  /** How many at most, ≥ 1. */
  readonly limit: number;
}

/** Whether `actor` belongs on a page of `query` (its `before` aside). */
export function ofActorPage(actor: ActorRecord, query: ActorPageQuery): boolean {
  return (
    (query.userId === undefined || actor.user_id === query.userId) &&
    (query.name === undefined || actor.name === query.name) &&
    (query.status === undefined || query.status.includes(actor.status)) &&
    (query.keyPrefix === undefined || actor.key.startsWith(query.keyPrefix))
  );
}

/** The refusal of a message to a full mailbox: `QUEUE_FULL`, retriable. */
export function mailboxFull(actor: Pick<ActorRecord, 'name' | 'key'>, maxQueue: number): Error {
  return new QueueFullError(
    `the mailbox of ${actor.name}/${actor.key} holds ${maxQueue} messages already (maxQueue): try again later`,
    { details: { agent: actor.name, key: actor.key, max_queue: maxQueue } },
  );
}
