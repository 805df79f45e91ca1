/**
 * @module Where a fleet keeps its state in Redis, by name: each pool's BullMQ queue, the
 * replicas' heartbeats, each step's event stream, the cancel channel and recorded cancels. Every key starts with
 * the fleet's prefix (the Redis store's, `axon:` by default), so fleets with different
 * prefixes share a Redis without meeting.
 */

/** What a pool id may be: it names a BullMQ queue and Redis keys. */
export const POOL_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** Checks a pool id; `TypeError` naming `what` when it is not one. */
export function checkPoolId(poolId: unknown, what: string): string {
  if (typeof poolId !== 'string' || !POOL_ID.test(poolId)) {
    throw new TypeError(
      `${what} must be 1 to 64 letters, digits, '_', '.' or '-' (starting with a letter or digit), got ${JSON.stringify(poolId)}`,
    );
  }
  return poolId;
}

/** The names of a fleet's keys under one prefix. */
export class FleetKeys {
  readonly prefix: string;

  constructor(prefix = 'axon:') {
    this.prefix = prefix;
  }

  /** The BullMQ prefix of the pools' queues (BullMQ adds `:<queue>:...`). */
  get bullPrefix(): string {
    return `${this.prefix}bull`;
  }

  /** The BullMQ queue of a pool. */
  queue(poolId: string): string {
    return `pool.${poolId}`;
  }

  /** The set of every replica's heartbeat key (a key past its TTL is dropped from it). */
  get replicas(): string {
    return `${this.prefix}fleet:replicas`;
  }

  /** A replica's heartbeat: its state as JSON, expiring with its TTL. */
  replica(poolId: string, replicaId: string): string {
    return `${this.prefix}fleet:replica:${poolId}:${replicaId}`;
  }

  /** A step's event stream (bounded; the store's log holds every event). */
  events(stepId: string): string {
    return `${this.prefix}fleet:events:${stepId}`;
  }

  /**
   * An API process's wake stream: an entry ends its relay's blocked read, so that the read
   * starts again with the steps followed now (`fleet-relay.ts`).
   */
  wake(relayId: string): string {
    return `${this.prefix}fleet:wake:${relayId}`;
  }

  /** The stream of every step's end: entries `<step_id> <status>`. */
  get ended(): string {
    return `${this.prefix}fleet:ended`;
  }

  /**
   * The fleet's open steps: a sorted set of the step ids queued on a pool and not yet said to
   * have ended, scored by when they were queued (ms) — where a sweep finds steps nobody
   * watches whose job is gone.
   */
  get open(): string {
    return `${this.prefix}fleet:open`;
  }

  /** The channel cancels travel on: the message is a step id. */
  get cancel(): string {
    return `${this.prefix}fleet:cancel`;
  }

  /**
   * A step's cancel, recorded before it is announced on {@link cancel}: a replica that takes
   * the step later, or missed the message, finds it here.
   */
  cancelled(stepId: string): string {
    return `${this.prefix}fleet:cancelled:${stepId}`;
  }

  /**
   * The lock of a step's job (BullMQ's key): it holds the token of the replica whose turn at
   * the step is the current one — set when a replica takes the job, gone when it finishes or
   * goes back to the queue. It is the step's fence: every write of a replica for the step
   * checks it (one script).
   */
  jobLock(poolId: string, jobId: string): string {
    return `${this.bullPrefix}:${this.queue(poolId)}:${jobId}:lock`;
  }
}
