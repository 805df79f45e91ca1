/**
 * @module An actor's address: a durable agent's name, a caller's key and the user it belongs
 * to (API.md, "Durable agents"), checked before anything is looked up or stored.
 */
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { actorIdOf } from '../store/actor-records.js';

/** The form of an actor's key (API.md): 1 to 128 of `A-Z a-z 0-9 . _ ~ -`. */
export const ACTOR_KEY = /^[A-Za-z0-9._~-]{1,128}$/;

/** Which actor: a durable agent's name and a key, of a user (`null`: of nobody). */
export interface ActorAddress {
  readonly name: string;
  readonly key: string;
  readonly userId: string | null;
}

/** The address checked: `InvalidParamsError` (param `key`) for a key of the wrong form. */
export function checkAddress(address: ActorAddress): ActorAddress {
  const key: unknown = address.key;
  if (typeof key !== 'string' || !ACTOR_KEY.test(key)) {
    throw new InvalidParamsError(
      `an actor's key must match ${ACTOR_KEY.source} (1 to 128 letters, digits, ".", "_", "~" or "-"), got ${typeof key === 'string' ? JSON.stringify(key.slice(0, 160)) : typeof key}`,
      { param: 'key' },
    );
  }
  return address;
}

/** The id of the actor at `address` (the same in every process and store). */
export function actorIdAt(address: ActorAddress): string {
  return actorIdOf(address.userId, address.name, address.key);
}
