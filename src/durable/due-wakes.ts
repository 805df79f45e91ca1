/**
 * @module What the durable agents' clock does with a due wake (issue 46): a timer — a sleep,
 * an event wait's timeout — fires once (of two replicas, one fires it) and its actor goes on;
 * a reminder sends its message (once: its client token is the reminder's and its due time)
 * and is set for its next period, or removed.
 */
import type { Logger } from '../observability/logger.js';
import type { DurableAgentDefinition } from '../actors/durable-agent.js';
import type { WakeRecord } from '../store/actor-records.js';
import type { ActorStore } from '../store/actor-store.js';
import { flushed, type RunStore } from '../store/run-store.js';
import type { ActorAddress } from './actor-address.js';
import type { WakeSource } from './wake-clock.js';

/** Wakes handled per read of the index. */
const PAGE = 256;

/** What firing wakes needs. */
export interface DueWakesHost {
  readonly store: RunStore;
  readonly actors: ActorStore;
  readonly logger: Logger;
  definitionOf(name: string): DurableAgentDefinition | undefined;
  /** Accepts a checked message under its token. */
  accept(
    def: DurableAgentDefinition,
    address: ActorAddress,
    message: unknown,
    token: string,
  ): Promise<unknown>;
  /** Wakes the actor whose wait fired. */
  resume(actorId: string): Promise<void>;
  /** Told of a wake set again for later. */
  wakeAdded(at: number): void;
}

/** The clock's source of due wakes: the store's index, and {@link fireDueWakes}. */
export function dueWakesSource(host: DueWakesHost): WakeSource {
  return {
    next: () => host.actors.nextWakeAt(),
    fire: (now: number) => fireDueWakes(host, now),
  };
}

/** Handles every wake due at `now`; see the module. */
export async function fireDueWakes(host: DueWakesHost, now: number): Promise<void> {
  for (;;) {
    const due = await host.actors.dueWakes(now, PAGE);
    for (const wake of due) {
      try {
        if (wake.kind === 'reminder') await remind(host, wake, now);
        else await fire(host, wake, now);
      } catch (err) {
        host.logger.error({ err, wake_id: wake.wake_id }, 'a wake could not fire');
      }
    }
    if (due.length < PAGE) return;
  }
}

async function fire(host: DueWakesHost, wake: WakeRecord, now: number): Promise<void> {
  const fired = await host.actors.fireWake(wake.wake_id, null, now, wake.kind === 'event');
  await flushed(host.store);
  if (fired) await host.resume(wake.actor_id);
}

async function remind(host: DueWakesHost, wake: WakeRecord, now: number): Promise<void> {
  const actor = await host.actors.getActor(wake.actor_id);
  const def = actor ? host.definitionOf(actor.name) : undefined;
  if (!actor || !def) return;
  const due = wake.due_at ?? now;
  try {
    await host.accept(
      def,
      { name: actor.name, key: actor.key, userId: actor.user_id },
      wake.message,
      `reminder:${wake.wake_id}:${due}`,
    );
  } catch (err) {
    host.logger.warn({ err, wake_id: wake.wake_id }, "a reminder's message was refused");
  }
  if (wake.every_ms !== null && wake.every_ms > 0) {
    // The next time after now: periods missed while nothing ran are not sent one by one.
    const periods = Math.max(1, Math.ceil((now - due + 1) / wake.every_ms));
    const next = due + periods * wake.every_ms;
    await host.actors.rearmWake(wake.wake_id, next);
    await flushed(host.store);
    host.wakeAdded(next);
  } else {
    await host.actors.deleteWakes([wake.wake_id]);
    await flushed(host.store);
  }
}
