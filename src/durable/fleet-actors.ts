/**
 * @module Durable agents on a fleet (issue 46). An API process (`axon serve --redis`) queues
 * an actor's messages as `actor` jobs on a pool, and every due time as a delayed `tick` job
 * (`placement/fleet/actor-jobs.ts`); the replicas (`axon worker`) run the actors.
 *
 * One activation per actor across the fleet: a replica handles an actor's messages only
 * while it holds the actor's lease in the fleet's Redis (renewed every third of its time), and
 * every write about the messages it handles — their logs, their ends with the actor's next
 * state — is fenced by that lease: a replica frozen past its lease (SIGSTOP) that thaws writes
 * nothing for an actor another took over. Leaving, it lets the lease go and looks at the
 * mailbox once more, so a message accepted while it was leaving is not left behind (the job
 * of that message, finding the lease held, is put off and looks again). A replica killed
 * holding a lease: the lease runs out, its job goes back to the queue (BullMQ's stall check)
 * or the message's own job comes back, and another replica goes on with the message from
 * its log — in order, none twice.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { ActorDispatch } from '../placement/fleet/actor-jobs.js';
import type { ActorRecord } from '../store/actor-records.js';
import type { ActorStore } from '../store/actor-store.js';
import type { Leases } from '../store/store-leases.js';

/** The fences a replica's store puts on the writes of the messages it handles. */
export interface ActorFences {
  /**
   * From now on, writes about message `stepId` (and the steps under it, and its run `runId`)
   * hold only while the lease `key` is `owner`'s.
   */
  hold(stepId: string, runId: string, key: string, owner: string): void;
  /** The message's writes are fenced no more (it ended, or waits). */
  drop(stepId: string, runId: string): void;
}

/** A runtime's place in a fleet, for its durable agents. */
export interface DurableFleet {
  /** Where the actors' work goes: the pools' queues. */
  readonly dispatch: ActorDispatch;
  /** A replica runs the actors; an API process only queues their work. */
  readonly runsActors: boolean;
  /** The fleet's leases (its Redis); an actor's is `actor:<actor id>`. */
  readonly leases: Leases;
  /** The lease's full key in Redis, for a fence: `leaseKey("actor:<id>")`. */
  leaseKey(key: string): string;
  /** A replica's fences; absent on an API process. */
  readonly fences?: ActorFences;
  /** How long an actor's lease lives without renewal, ms (default 10 000). */
  readonly leaseMs?: number;
}

/**
 * The place of a fleet's API process: it queues the actors' work on the fleet's pools
 * (`link.actorDispatch()`), whose replicas run them under leases in `leases`.
 */
export function apiSide(
  link: { actorDispatch(): ActorDispatch; readonly leasePrefix: string },
  leases: Leases,
): DurableFleet {
  return {
    dispatch: link.actorDispatch(),
    runsActors: false,
    leases,
    leaseKey: (key) => `${link.leasePrefix}${key}`,
  };
}

/** The default of {@link DurableFleet.leaseMs}. */
export const ACTOR_LEASE_MS = 10_000;

/** The lease key of an actor. */
export function actorLeaseKey(actorId: string): string {
  return `actor:${actorId}`;
}

/** A new owner name for one hold of a lease by this process. */
export function leaseOwner(): string {
  return `${hostname()}-${process.pid}-${randomBytes(6).toString('hex')}`;
}

/**
 * An actor's lease held by this process, renewed every third of its time until released. A
 * renewal only extends a lease still surely held: once its whole time has passed since the
 * last renewal was sent (this process froze, or its event loop stalled past the lease), it is
 * lost for good and never taken again — it may have lapsed, been taken by another replica
 * and let go meanwhile, and taking it again would make the fences of a message that replica
 * has already handled hold again for this one's late writes.
 */
export class HeldLease {
  readonly key: string;
  readonly owner = leaseOwner();
  readonly #leases: Leases;
  #timer: NodeJS.Timeout | null = null;
  #lost = false;
  /** Until when the lease is surely ours: its time counted from before the last renewal sent. */
  #until = 0;

  private constructor(leases: Leases, key: string) {
    this.#leases = leases;
    this.key = key;
  }

  /** The lease of actor `actorId`, taken; `null` while another holds it. */
  static async take(leases: Leases, actorId: string, ttlMs: number): Promise<HeldLease | null> {
    const held = new HeldLease(leases, actorLeaseKey(actorId));
    const sent = Date.now();
    if (!(await leases.acquire(held.key, held.owner, ttlMs))) return null;
    held.#until = sent + ttlMs;
    held.#timer = setInterval(
      () => {
        held.#renew(ttlMs);
      },
      Math.max(1, Math.floor(ttlMs / 3)),
    );
    held.#timer.unref();
    return held;
  }

  #renew(ttlMs: number): void {
    if (this.#lost) return;
    const sent = Date.now();
    if (sent >= this.#until) {
      this.#lose();
      return;
    }
    this.#leases.acquire(this.key, this.owner, ttlMs).then(
      (kept) => {
        if (kept && !this.#lost) this.#until = Math.max(this.#until, sent + ttlMs);
        else this.#lose();
      },
      () => undefined,
    );
  }

  #lose(): void {
    this.#lost = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** Whether a renewal found the lease another's (this process was too slow). */
  get lost(): boolean {
    return this.#lost;
  }

  /** Stops renewing and lets the lease go. */
  async release(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#leases.release(this.key, this.owner).catch(() => undefined);
  }
}

/** An activation, as the leased drain uses it. */
interface LeasedActivation {
  readonly actor: { readonly actor_id: string };
  drain(): Promise<void>;
}

/** What handling an actor under its lease needs. */
export interface LeasedDrainHost {
  readonly actors: ActorStore;
  /** The leases held here, by actor id (a message's writes are fenced by its actor's). */
  readonly held: Map<string, HeldLease>;
  /** Wakes the actor from `record`, read under the lease. */
  wake(record: ActorRecord): Promise<LeasedActivation | null>;
  /** Takes its activation out of memory. */
  passivate(activation: { readonly actor: { readonly actor_id: string } }): void;
}

/**
 * Handles actor `actorId`'s messages under its lease (see the module): `held` while another
 * replica holds it, `done` once nothing is left to do here. After letting the lease go it
 * looks at the mailbox once more, and goes on while a message was left there meanwhile.
 */
export async function drainLeased(
  host: LeasedDrainHost,
  fleet: DurableFleet,
  actorId: string,
): Promise<'done' | 'held'> {
  for (;;) {
    const lease = await HeldLease.take(fleet.leases, actorId, fleet.leaseMs ?? ACTOR_LEASE_MS);
    if (!lease) return 'held';
    host.held.set(actorId, lease);
    try {
      // Read under the lease: what another replica wrote before is seen.
      const record = await host.actors.getActor(actorId);
      const activation = record ? await host.wake(record) : null;
      await activation?.drain();
      // On a fleet an actor is awake only while its lease is held.
      if (activation) host.passivate(activation);
    } finally {
      host.held.delete(actorId);
      await lease.release();
    }
    const [first] = await host.actors.openMessages(actorId, 1);
    if (!first) return 'done';
    if (first.status === 'waiting') {
      const wakes = await host.actors.actorWakes(actorId);
      if (!wakes.some((w) => w.step_id === first.step_id && w.status === 'fired')) return 'done';
    }
  }
}
