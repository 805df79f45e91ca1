/**
 * @module Events for actors that wait (issue 46): `runtime.signal(event, data)` and
 * `POST /v1/events` fire every pending wait of the user's for `event` whose `match` fits the
 * data, and whose schema the data meets; a wait whose schema the data fails is not fired, and
 * the answer names it. Each wait fires once (of two signals at once, one fires it).
 */

import { InvalidParamsError } from '../errors/invalid-params-error.js';
import type { SchemaIssue } from '../errors/schema-violation-error.js';
import type { ActorStore } from '../store/actor-store.js';
import { flushed, type RunStore } from '../store/run-store.js';
import { ajvIssues, compileJsonSchema } from '../tools/json-schema.js';
import { EVENT_NAME } from './actor-waits.js';

/** A wait an event did not fire because its data failed the wait's schema. */
export interface RefusedWait {
  readonly agent: string;
  readonly key: string;
  readonly wake_id: string;
  readonly issues: readonly SchemaIssue[];
}

/** What a signal did (API.md: `POST /v1/events` → 202). */
export interface SignalResult {
  /** Waits it fired. */
  readonly woken: number;
  readonly refused: readonly RefusedWait[];
}

/** The waits a signal looks at, at most (the oldest first). */
const MAX_WAITERS = 10_000;

/** What signalling needs. */
export interface SignalHost {
  readonly store: RunStore;
  readonly actors: ActorStore;
  now(): number;
  /** Wakes the actor whose wait fired. */
  resume(actorId: string): Promise<void>;
}

/** Fires the waits of `userId` for `event` that `data` fits; see the module. */
export async function signalEvent(
  host: SignalHost,
  userId: string | null,
  event: string,
  data: unknown,
): Promise<SignalResult> {
  if (typeof event !== 'string' || !EVENT_NAME.test(event)) {
    throw new InvalidParamsError(`an event name must match ${EVENT_NAME.source}`, {
      param: 'name',
    });
  }
  let plain: unknown;
  try {
    plain = JSON.parse(JSON.stringify(data ?? null)) as unknown;
  } catch (err) {
    throw new InvalidParamsError("an event's data must be JSON data", {
      param: 'data',
      cause: err,
    });
  }
  const waiters = await host.actors.eventWaiters(userId, event, MAX_WAITERS);
  const refused: RefusedWait[] = [];
  const fired: string[] = [];
  for (const wait of waiters) {
    if (wait.match !== null && !fits(wait.match, plain)) continue;
    if (wait.schema !== null) {
      const validate = compileJsonSchema(`the wait ${wait.wake_id}`, wait.schema);
      if (!validate(plain)) {
        const actor = await host.actors.getActor(wait.actor_id);
        refused.push({
          agent: actor?.name ?? '',
          key: actor?.key ?? '',
          wake_id: wait.wake_id,
          issues: ajvIssues(validate.errors),
        });
        continue;
      }
    }
    const done = await host.actors.fireWake(wait.wake_id, plain, host.now(), false);
    if (done) fired.push(done.actor_id);
  }
  await flushed(host.store);
  for (const actorId of fired) void host.resume(actorId);
  return { woken: fired.length, refused };
}

/** Whether `data` has every field of `match`, each equal (as JSON). */
function fits(match: Readonly<Record<string, unknown>>, data: unknown): boolean {
  if (typeof data !== 'object' || data === null) return false;
  const fields = data as Record<string, unknown>;
  return Object.entries(match).every(([k, v]) => JSON.stringify(fields[k]) === JSON.stringify(v));
}
