/**
 * @module Where durable agents' records live in the Redis store (issue 46), every key under
 * the store's prefix (so in its one slot on a cluster). An actor is one hash; its mailbox and
 * its wakes' index exist only while it has some. Indexes are sorted sets: by creation (a
 * counter's value), by due or fired time, by id (all scores 0: read by `BYLEX`). The Lua of
 * `redis-actor-scripts.ts` builds the wakes' keys from the prefix as {@link RedisActorKeys}
 * does: change both together.
 */
import type { ActorStatus } from '../actor-records.js';

/** Every status, in the order the script's status indexes are given. */
export const ACTOR_STATUSES: readonly ActorStatus[] = ['idle', 'live', 'waiting'];

/** The keys of durable agents' records under one store prefix; see the module. */
export class RedisActorKeys {
  readonly prefix: string;

  constructor(prefix: string) {
    this.prefix = prefix;
  }

  /** An actor's hash: its record's fields, each as JSON. */
  actor(id: string): string {
    return `${this.prefix}actor:${id}`;
  }

  /** An actor's messages not ended: step ids by their place in its run (taken ones below 0). */
  mailbox(id: string): string {
    return `${this.prefix}actor:${id}:mail`;
  }

  /** An actor's wakes by due time (`+inf` for none). */
  actorWakes(id: string): string {
    return `${this.prefix}actor:${id}:wakes`;
  }

  /** The counter that orders actors by creation. */
  get actorSeq(): string {
    return `${this.prefix}actors:seq`;
  }

  /** Every actor, scored by creation. */
  get actors(): string {
    return `${this.prefix}actors:i`;
  }

  /** A user's actors, scored by creation. */
  byUser(userId: string | null): string {
    return `${this.prefix}actors:i:u:${JSON.stringify(userId)}`;
  }

  /** An agent's actors, scored by creation. */
  byName(name: string): string {
    return `${this.prefix}actors:i:n:${JSON.stringify(name)}`;
  }

  /** Every actor as `<key>\0<actor id>`, all scored 0: a key prefix is a `BYLEX` range. */
  get keys(): string {
    return `${this.prefix}actors:k`;
  }

  /** The actors of one status, by id (all scored 0). */
  status(status: ActorStatus): string {
    return `${this.prefix}actors:s:${status}`;
  }

  /** The status indexes in {@link ACTOR_STATUSES}' order. */
  get statuses(): string[] {
    return ACTOR_STATUSES.map((s) => this.status(s));
  }

  /** A wake's hash: its record's fields, each as JSON. */
  wake(id: string): string {
    return `${this.prefix}wake:${id}`;
  }

  /** Pending wakes with a due time, scored by it. */
  get dueWakes(): string {
    return `${this.prefix}wakes:due`;
  }

  /** Fired sleeps and event waits, scored by when they fired. */
  get firedWakes(): string {
    return `${this.prefix}wakes:fired`;
  }

  /** A user's pending waits for one event, scored by their creation. */
  eventWaits(userId: string | null, event: string): string {
    return `${this.prefix}wakes:ev:${JSON.stringify(userId)}:${JSON.stringify(event)}`;
  }

  /** A schedule's hash: its record's fields, each as JSON. */
  schedule(id: string): string {
    return `${this.prefix}schedule:${id}`;
  }

  /** The counter that orders schedules by creation. */
  get scheduleSeq(): string {
    return `${this.prefix}schedules:seq`;
  }

  /** Every schedule, scored by creation. */
  get schedules(): string {
    return `${this.prefix}schedules:i`;
  }

  /** How the key of a user's schedules begins (the user as JSON follows). */
  get schedulesOfUser(): string {
    return `${this.prefix}schedules:i:u:`;
  }

  /** A user's schedules, scored by creation. */
  userSchedules(userId: string | null): string {
    return `${this.schedulesOfUser}${JSON.stringify(userId)}`;
  }

  /** Active schedules with a next firing, scored by it. */
  get dueSchedules(): string {
    return `${this.prefix}schedules:due`;
  }
}
