/**
 * @module A durable actor's message that waits for an approval (issues 6 and 46) is held by
 * its actor: a decision does not submit it again as a step of its own (which would run the
 * handler outside its actor: no state kept, the mailbox stuck) but wakes the actor, which runs
 * the message again from its log — its calls served from the run's recording, the approved
 * call going on, a rejected one refused where the handler made it.
 */
import { isoTime, type Clock } from '../context/clock.js';
import type { HeldSteps } from '../runs/approvals.js';
import { ACTOR_ENTRY_PREFIX, actorIdOf } from '../store/actor-records.js';
import type { ActorStore } from '../store/actor-store.js';
import type { StepRecord } from '../store/records.js';
import type { RunStore } from '../store/run-store.js';

/** What holding messages needs of the durable agents: their store, and waking an actor. */
export interface HeldMessagesHost {
  readonly actors: ActorStore;
  resume(actorId: string): Promise<void>;
}

/** The {@link HeldSteps} of durable actors (`host`'s): their messages' approvals. */
export function heldMessages(store: RunStore, host: HeldMessagesHost, clock: Clock): HeldSteps {
  /** The actor whose message `step` is, or `null` for any other step. */
  const actorOf = async (step: StepRecord): Promise<string | null> => {
    const run = await store.getRun(step.run_id);
    if (!run?.entry.startsWith(ACTOR_ENTRY_PREFIX)) return null;
    // `actor:<name>/<key>`: a key has no `/`.
    const address = run.entry.slice(ACTOR_ENTRY_PREFIX.length);
    const slash = address.lastIndexOf('/');
    const actorId = actorIdOf(run.user_id, address.slice(0, slash), address.slice(slash + 1));
    const actor = await host.actors.getActor(actorId);
    return actor?.run_id === step.run_id ? actorId : null;
  };
  return {
    async hold(step) {
      const actorId = await actorOf(step);
      if (actorId === null) return false;
      // Marked as having work before the decision is stored: a runtime stopped in between
      // finds it (`live`), and finds its message still waiting when nothing was decided.
      await host.actors.setActorStatus(actorId, 'live', isoTime(clock.now()));
      return true;
    },
    async decided(step) {
      const actorId = await actorOf(step);
      if (actorId !== null) await host.resume(actorId);
    },
  };
}
