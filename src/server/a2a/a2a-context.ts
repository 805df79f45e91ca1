/**
 * @module The A2A SDK's call context for one JSON-RPC request to `axon serve`: the caller its
 * API key names (the SDK's `User`, and axon's `Caller` with its permissions in the context's
 * state, where the task store and the executor read it), the protocol version asked, the
 * extensions asked, and the route a message was given before its task was made.
 */
import { Extensions } from '@a2a-js/sdk';
import { ServerCallContext, type User } from '@a2a-js/sdk/server';
import { InternalError } from '../../errors/internal-error.js';
import type { Caller } from '../auth.js';
import type { A2aRoute } from './a2a-route-choice.js';

/** Where the caller is kept in the context's state. */
const CALLER_KEY = 'axon.caller';
/** Where the route of a message is kept in the context's state. */
const ROUTE_KEY = 'axon.route';

/** An axon caller as the SDK's `User`: authenticated by its key (or the keyless `anonymous`). */
class CallerUser implements User {
  readonly #caller: Caller;

  constructor(caller: Caller) {
    this.#caller = caller;
  }

  get isAuthenticated(): boolean {
    return true;
  }

  get userName(): string {
    return this.#caller.userId;
  }
}

/** What {@link a2aCallContext} builds a context from. */
export interface A2aCallInput {
  readonly caller: Caller;
  /** The request's headers (kept in the state under `headers`, as the SDK's builder does). */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The `A2A-Version` header; absent means 0.3 to the SDK. */
  readonly version: string | undefined;
  /** The `A2A-Extensions` header (or v0.3's `X-A2A-Extensions`). */
  readonly extensions: string | undefined;
}

/** The SDK's context of one request by `input.caller`. */
export function a2aCallContext(input: A2aCallInput): ServerCallContext {
  return new ServerCallContext({
    user: new CallerUser(input.caller),
    requestedExtensions: Extensions.parseServiceParameter(input.extensions),
    ...(input.version === undefined ? {} : { requestedVersion: input.version }),
    state: new Map<string, unknown>([
      ['headers', input.headers],
      [CALLER_KEY, input.caller],
    ]),
  });
}

/** The caller of a context made by {@link a2aCallContext}; `InternalError` for any other. */
export function callerIn(context: ServerCallContext): Caller {
  const caller = context.state.get(CALLER_KEY) as Caller | undefined;
  if (!caller) throw new InternalError('an A2A call context without its caller');
  return caller;
}

/** Keeps the route chosen for the message of this request. */
export function keepRoute(context: ServerCallContext, route: A2aRoute): void {
  context.state.set(ROUTE_KEY, route);
}

/** The route kept by {@link keepRoute}; `InternalError` when none was. */
export function routeIn(context: ServerCallContext): A2aRoute {
  const route = context.state.get(ROUTE_KEY) as A2aRoute | undefined;
  if (!route) throw new InternalError('an A2A message reached the executor without its route');
  return route;
}
