/**
 * @module The ActorStore interface: durable agents' records in a store (issue 46) — actors,
 * their mailboxes (the queued steps of their runs), their wakes and the schedules — each
 * found through an index, so that an asleep actor costs nothing in memory. One conformance
 * suite (`test/store/actor-store.conformance.ts`) runs against every implementation.
 */
import type {
  ActorPageQuery,
  ActorRecord,
  ActorStatus,
  ScheduleRecord,
  SchedulePatch,
  WakeRecord,
} from './actor-records.js';
import type { RunRecord, StepRecord } from './records.js';

/** What {@link ActorStore.acceptMessage} did. */
export interface AcceptedMessage {
  /** The message's step: the new one, or the one accepted before under the same token. */
  readonly step: StepRecord;
  /** False when the actor's run had a step with this client token: nothing was accepted. */
  readonly created: boolean;
}

/**
 * Where durable agents live: a `RunStore`'s `actors`. Lookups of unknown ids resolve `null`;
 * writes resolve once held in the store's current commit (`RunStore.flush` makes them
 * durable, as every other write).
 */
export interface ActorStore {
  /**
   * The actor `actor.actor_id`, or, when there is none, `actor` created with its run `run`
   * (both in one write; of two processes opening one actor at once, one creates it).
   */
  openActor(
    actor: ActorRecord,
    run: RunRecord,
  ): Promise<{ readonly actor: ActorRecord; readonly created: boolean }>;
  getActor(actorId: string): Promise<ActorRecord | null>;
  /** A page of actors, newest first (see {@link ActorPageQuery}); its cost grows with `limit`. */
  pageActors(query: ActorPageQuery): Promise<ActorRecord[]>;
  /**
   * Accepts a message to actor `actorId`: `step` (`queued`, in the actor's run) is claimed by
   * its client token (NERVE-4003: the same token finds the first, and nothing is accepted),
   * and the actor becomes `live` unless it waits. `QueueFullError` when `maxQueue` messages
   * are queued already (none is accepted); `NotFoundError` for an unknown actor.
   */
  acceptMessage(actorId: string, step: StepRecord, maxQueue: number): Promise<AcceptedMessage>;
  /**
   * The actor's messages not ended — `running` or `waiting` first if one is, then the
   * `queued` ones — in the order accepted; at most `limit`.
   */
  openMessages(actorId: string, limit: number): Promise<StepRecord[]>;
  /**
   * Marks the actor's queued message `stepId` taken (being handled): it counts no more in
   * its mailbox's depth. Nothing for a message that is not queued.
   */
  takeMessage(actorId: string, stepId: string): Promise<void>;
  /** How many of the actor's messages are `queued` (not taken). */
  mailboxDepth(actorId: string): Promise<number>;
  /** Sets an actor's status (a message that waits, or goes on); `NotFoundError` if unknown. */
  setActorStatus(actorId: string, status: ActorStatus, updatedAt: string): Promise<void>;
  /**
   * Actors whose status is one of `statuses`, in id order after `after` (`null`: from the
   * start); at most `limit`. How a runtime starting on the store finds the `live` ones.
   */
  actorsWith(
    statuses: readonly ActorStatus[],
    after: string | null,
    limit: number,
  ): Promise<ActorRecord[]>;

  /** Stores `wake`, or finds the wake with its id: then `created` is false, nothing written. */
  putWake(wake: WakeRecord): Promise<{ readonly wake: WakeRecord; readonly created: boolean }>;
  getWake(wakeId: string): Promise<WakeRecord | null>;
  /** Actor `actorId`'s wakes (pending and fired), the soonest first. */
  actorWakes(actorId: string): Promise<WakeRecord[]>;
  /** Pending wakes due at `now` or before, the soonest first; at most `limit`. */
  dueWakes(now: number, limit: number): Promise<WakeRecord[]>;
  /** The soonest due time of a pending wake, or `null`: one index, not a timer per sleeper. */
  nextWakeAt(): Promise<number | null>;
  /**
   * Fires a pending wake with `data` (an event's; `null` for a timer): `fired`, once — of two
   * firings (a timer and its event, two replicas) one wins. Resolves the wake fired, or
   * `null` when it was not pending (fired already, or gone).
   */
  fireWake(
    wakeId: string,
    data: unknown,
    firedAt: number,
    timedOut: boolean,
  ): Promise<WakeRecord | null>;
  /** Fired wakes, oldest first, at most `limit`: messages to go on with after a restart. */
  firedWakes(limit: number): Promise<WakeRecord[]>;
  /** Sets a pending or fired reminder pending again, due at `dueAt` (its next period). */
  rearmWake(wakeId: string, dueAt: number): Promise<void>;
  /** Removes wakes (a message ended, a reminder cancelled); unknown ids are ignored. */
  deleteWakes(wakeIds: readonly string[]): Promise<void>;
  /** Pending waits for event `event` of user `userId`, oldest first; at most `limit`. */
  eventWaiters(userId: string | null, event: string, limit: number): Promise<WakeRecord[]>;

  /** Stores a schedule, or finds the one with its id (then nothing is written). */
  putSchedule(
    schedule: ScheduleRecord,
  ): Promise<{ readonly schedule: ScheduleRecord; readonly created: boolean }>;
  getSchedule(scheduleId: string): Promise<ScheduleRecord | null>;
  /** Schedules in creation order: of user `userId` (`null`: of nobody), or all when absent. */
  listSchedules(userId?: string | null): Promise<ScheduleRecord[]>;
  /** Applies `patch`; `NotFoundError` for an unknown schedule. */
  updateSchedule(scheduleId: string, patch: SchedulePatch): Promise<void>;
  /** Removes a schedule; false when there was none. */
  deleteSchedule(scheduleId: string): Promise<boolean>;
  /** Active schedules due at `now` or before, the soonest first; at most `limit`. */
  dueSchedules(now: number, limit: number): Promise<ScheduleRecord[]>;
  /** The soonest `next_at` of an active schedule, or `null`. */
  nextScheduleAt(): Promise<number | null>;
}
