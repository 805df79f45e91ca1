/**
 * @module What a stopped runtime left of its durable agents' work (issue 46): the `live` actors
 * (a message queued, or left being handled), found through the store's index of them, and the
 * messages whose wake fired while nothing ran them.
 */
import type { ActorRecord } from '../store/actor-records.js';
import type { ActorStore } from '../store/actor-store.js';

/** Actors read per page of the index. */
const PAGE = 500;
/** Fired wakes read at most (each is a message to go on with). */
const MAX_FIRED = 100_000;

/**
 * Calls `resume` for every actor with work left — each `live` one (with its record) and each
 * whose message's wake fired — and resolves how many of each it found.
 */
export async function findLeftWork(
  actors: ActorStore,
  resume: (actorId: string, record?: ActorRecord) => void,
): Promise<{ readonly actors: number; readonly wakes: number }> {
  let after: string | null = null;
  let found = 0;
  for (;;) {
    const page: ActorRecord[] = await actors.actorsWith(['live'], after, PAGE);
    if (page.length === 0) break;
    for (const actor of page) {
      found++;
      resume(actor.actor_id, actor);
    }
    after = page.at(-1)?.actor_id ?? null;
  }
  const fired = await actors.firedWakes(MAX_FIRED);
  for (const wake of fired) resume(wake.actor_id);
  return { actors: found, wakes: fired.length };
}
