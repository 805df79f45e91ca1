/** @module An actor as API.md shows it (`GET /v1/agents/{name}/{key}`; issue 46). */
import { isoTime } from '../context/clock.js';
import type { ActorStore } from '../store/actor-store.js';
import type { Activation } from './activation.js';

/** An actor as API.md shows it. */
export interface ActorView {
  readonly name: string;
  readonly key: string;
  readonly version: number;
  /**
   * `waiting` (on a timer or an event), `busy` (a message being handled or queued), `awake`
   * (in memory here, idle), `asleep` (only in the store).
   */
  readonly status: 'asleep' | 'awake' | 'busy' | 'waiting';
  /** The state every message that succeeded left, and no other. */
  readonly state: unknown;
  readonly mailbox_depth: number;
  /** The soonest pending timer (a sleep, a wait's timeout, a reminder), ISO; or `null`. */
  readonly next_timer_at: string | null;
  readonly run_id: string;
  readonly created_at: string;
  readonly updated_at: string;
}

/** The actor `actorId` as stored, seen from here (`awake`: its activation, if any). */
export async function viewActor(
  actors: ActorStore,
  actorId: string,
  awake: Activation | undefined,
): Promise<ActorView | null> {
  const actor = await actors.getActor(actorId);
  if (!actor) return null;
  const [depth, wakes] = await Promise.all([
    actors.mailboxDepth(actorId),
    actors.actorWakes(actorId),
  ]);
  let next: number | null = null;
  for (const w of wakes) {
    if (w.status === 'pending' && w.due_at !== null && (next === null || w.due_at < next)) {
      next = w.due_at;
    }
  }
  return {
    name: actor.name,
    key: actor.key,
    version: actor.version,
    status:
      actor.status === 'waiting'
        ? 'waiting'
        : awake?.turn || actor.status === 'live'
          ? 'busy'
          : awake
            ? 'awake'
            : 'asleep',
    state: actor.state,
    mailbox_depth: depth,
    next_timer_at: next === null ? null : isoTime(next),
    run_id: actor.run_id,
    created_at: actor.created_at,
    updated_at: actor.updated_at,
  };
}
