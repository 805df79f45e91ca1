/**
 * @module The framework-neutral core of the bridges (`axon/express`, `axon/fastify`,
 * `axon/hono`): from an HTTP request's headers, the `ExecContext` a team's own route calls the
 * runtime with — the caller's identity (an API key, the team's own `identify`, or anonymous),
 * the `X-Correlation-Id`, a deadline from a header, the W3C trace id, and a signal that
 * cancels the context when the client goes away. Failures are typed `HttpError`s, which each
 * bridge answers with API.md's error body.
 */
import { randomUUID } from 'node:crypto';
import type { CreateContextOptions, ExecContext } from '../../context/exec-context.js';
import { parseTraceparent, type TraceParent } from '../../context/traceparent.js';
import type { Runtime } from '../../runtime/runtime.js';
import { KeyRing, type ApiKey, type Caller, type Permission } from '../auth.js';
import { HttpError } from '../http-errors.js';

// What a team's routes and `identify` need with the bridges: `axon/request-context` exports them.
export { errorReply, HttpError, type ErrorBody, type ErrorReply } from '../http-errors.js';
export type { ApiKey, Caller, Permission } from '../auth.js';

/** Reads a request header by its lower-case name; `undefined` when absent. */
export type HeaderLookup = (name: string) => string | undefined;

/** Request headers as Node (`IncomingHttpHeaders`) or the fetch API (`Headers`) hold them. */
export type HeaderSource =
  Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

/** Who a team's `identify` says the caller is. */
export interface Identity {
  readonly userId: string;
  /** What the caller may do (`read`, `write`, `admin`); default `read` and `write`. */
  readonly permissions?: readonly Permission[];
}

/** What a bridge may add to the request's context beyond identity and deadline. */
export type ContextExtras = Pick<
  CreateContextOptions,
  'name' | 'sessionId' | 'permissions' | 'memoryScope' | 'budgets' | 'metadata' | 'tap' | 'logger'
>;

/** What a bridge attaches to a request (`req.axon`, `request.axon`, `c.get('axon')`). */
export interface AxonRequest {
  /** The context to call the runtime with: `runtime.invoke('agent', msg, req.axon.ctx)`. */
  readonly ctx: ExecContext;
  /** The request's `X-Correlation-Id`, echoed or made; also `ctx.metadata.correlation_id`. */
  readonly correlationId: string;
  /** Who called: from the key, from `identify`, or `anonymous`. */
  readonly caller: Caller;
  /** The request's W3C `traceparent`, when it carried a valid one (its trace is `ctx.traceId`). */
  readonly traceparent: TraceParent | null;
}

/**
 * The caller of a request that names nobody, when a bridge allows one (`anonymous: 'allow'`):
 * it may read and write what is `anonymous`'s, never `admin`.
 */
export const ANONYMOUS_CALLER: Caller = {
  userId: 'anonymous',
  permissions: new Set<Permission>(['read', 'write']),
};

/**
 * Options of every bridge. Identity comes from `keys` (API.md's `Authorization: Bearer`), or
 * from `identify`; a request that names nobody is refused (401) unless `anonymous: 'allow'`
 * says so by name. A bridge with none of the three is a `TypeError` when it is made.
 */
export interface RequestContextOptions<TRequest> {
  /**
   * API keys, as `axon serve` takes them; a request without a valid one gets 401 (one with
   * no `Authorization` at all is anonymous under `anonymous: 'allow'`).
   */
  readonly keys?: readonly ApiKey[];
  /**
   * Callers that name nobody: `'refuse'` (the default) answers them 401; `'allow'` lets them
   * in as `anonymous` with `read` and `write` only (never `admin`) — every such caller shares
   * the one identity, its runs and memory. With neither `keys` nor `identify`, every caller
   * is such a one, so `'allow'` must be said.
   */
  readonly anonymous?: 'allow' | 'refuse';
  /**
   * The team's own auth: the caller of `request`, or `null` / `undefined` for a caller it
   * does not know (401, or `anonymous` under `anonymous: 'allow'`). May throw an `HttpError`
   * (say a 403) to answer with it. Not with `keys`.
   */
  readonly identify?: (
    request: TRequest,
  ) => Identity | null | undefined | PromiseLike<Identity | null | undefined>;
  /** The header holding the request's deadline in whole milliseconds; default `x-request-timeout-ms`. */
  readonly timeoutHeader?: string;
  /** The longest deadline a request may ask for, ms; a longer one is cut to it. Default none. */
  readonly maxTimeoutMs?: number;
  /** The deadline of a request that names none, ms; default none. */
  readonly defaultTimeoutMs?: number;
  /**
   * Cancel the context when the client closes the connection before the response is
   * finished (so running steps end `cancelled`); default `true`.
   */
  readonly cancelOnDisconnect?: boolean;
  /** More of the context, per caller: session, permissions, budgets, metadata, … */
  readonly contextOptions?: (
    caller: Caller,
    request: TRequest,
  ) => ContextExtras | PromiseLike<ContextExtras>;
}

/** What {@link RequestContexts} needs of one request besides the request itself. */
export interface RequestFacts {
  readonly headers: HeaderLookup;
  /** From {@link correlationIdOf}, so a refusal can carry it too. */
  readonly correlationId: string;
  /** Aborts when the client goes away (each bridge makes it); omit for none. */
  readonly signal?: AbortSignal;
}

/** Builds the {@link AxonRequest} of a request; rejects with an `HttpError` to refuse it. */
export type RequestContexts<TRequest> = (
  request: TRequest,
  facts: RequestFacts,
) => Promise<AxonRequest>;

/** Header of API.md's correlation id. */
export const CORRELATION_HEADER = 'x-correlation-id';
// As `axon serve` accepts them (src/server/create-server.ts): anything else is replaced.
const CORRELATION = /^[\w.:@/+=-]{1,128}$/;
const WHOLE_MS = /^\d{1,15}$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;

/** A {@link HeaderLookup} over Node's or the fetch API's headers (first value of a list). */
export function headerLookup(source: HeaderSource): HeaderLookup {
  if (typeof (source as Headers).get === 'function') {
    const headers = source as Headers;
    return (name) => headers.get(name) ?? undefined;
  }
  const record = source as Readonly<Record<string, string | readonly string[] | undefined>>;
  return (name) => {
    const v = record[name];
    return typeof v === 'string' ? v : v?.[0];
  };
}

/** The request's `X-Correlation-Id` when it is well formed, else a new one. */
export function correlationIdOf(headers: HeaderLookup): string {
  const given = headers(CORRELATION_HEADER)?.trim();
  return given !== undefined && CORRELATION.test(given) ? given : randomUUID();
}

function wholeMs(where: string, name: string, value: number | undefined): void {
  if (value !== undefined && !(Number.isSafeInteger(value) && value > 0)) {
    throw new RangeError(`${where}: ${name} must be a whole number > 0, got ${String(value)}`);
  }
}

/**
 * Checks `options` once and gives the function that builds each request's context. Throws
 * `TypeError` / `RangeError` naming a bad option. The bridges call it; use it directly to
 * bridge another framework.
 *
 * @example
 * const contexts = createRequestContexts<IncomingMessage>(runtime, { keys });
 * const headers = headerLookup(req.headers);
 * const axon = await contexts(req, { headers, correlationId: correlationIdOf(headers) });
 */
export function createRequestContexts<TRequest>(
  runtime: Pick<Runtime, 'createContext'>,
  options: RequestContextOptions<TRequest> = {},
  where = 'createRequestContexts',
): RequestContexts<TRequest> {
  const { identify, contextOptions, maxTimeoutMs, defaultTimeoutMs } = options;
  if (options.keys !== undefined && identify !== undefined) {
    throw new TypeError(`${where}: give keys or identify, not both`);
  }
  if (identify !== undefined && typeof identify !== 'function') {
    throw new TypeError(`${where}: identify must be a function`);
  }
  const anonymous = options.anonymous ?? 'refuse';
  if (!(['allow', 'refuse'] as unknown[]).includes(anonymous)) {
    throw new TypeError(
      `${where}: anonymous must be 'allow' or 'refuse', got ${JSON.stringify(anonymous)}`,
    );
  }
  if ((options.keys ?? []).length === 0 && identify === undefined && anonymous !== 'allow') {
    throw new TypeError(
      `${where}: give keys or identify to say who calls, or anonymous: 'allow' to let every caller in as anonymous (read and write)`,
    );
  }
  if (contextOptions !== undefined && typeof contextOptions !== 'function') {
    throw new TypeError(`${where}: contextOptions must be a function`);
  }
  let keys: KeyRing;
  try {
    keys = new KeyRing(options.keys ?? []);
  } catch (err) {
    throw new TypeError(
      `${where}: keys must be { key (16 characters or more), user_id, permissions? } items`,
      { cause: err },
    );
  }
  const timeoutHeader = options.timeoutHeader ?? 'x-request-timeout-ms';
  if (typeof timeoutHeader !== 'string' || !HEADER_NAME.test(timeoutHeader)) {
    throw new TypeError(
      `${where}: timeoutHeader must be a lower-case header name, got ${JSON.stringify(timeoutHeader)}`,
    );
  }
  wholeMs(where, 'maxTimeoutMs', maxTimeoutMs);
  wholeMs(where, 'defaultTimeoutMs', defaultTimeoutMs);
  if (
    maxTimeoutMs !== undefined &&
    defaultTimeoutMs !== undefined &&
    defaultTimeoutMs > maxTimeoutMs
  ) {
    throw new RangeError(
      `${where}: defaultTimeoutMs (${defaultTimeoutMs}) is past maxTimeoutMs (${maxTimeoutMs})`,
    );
  }

  async function callerOf(request: TRequest, headers: HeaderLookup): Promise<Caller> {
    if (keys.enabled) {
      const authorization = headers('authorization');
      if (authorization === undefined && anonymous === 'allow') return ANONYMOUS_CALLER;
      return keys.caller(authorization);
    }
    if (identify === undefined) return ANONYMOUS_CALLER;
    const who = await identify(request);
    if (who === null || who === undefined) {
      if (anonymous === 'allow') return ANONYMOUS_CALLER;
      throw new HttpError(401, 'UNAUTHORIZED', 'the request does not say who is calling');
    }
    if (typeof who.userId !== 'string' || who.userId.length === 0) {
      throw new TypeError(`${where}: identify must return { userId: a non-empty string }`);
    }
    return { userId: who.userId, permissions: new Set(who.permissions ?? ['read', 'write']) };
  }

  function timeoutOf(headers: HeaderLookup): number | undefined {
    const given = headers(timeoutHeader)?.trim();
    if (given === undefined || given === '') return defaultTimeoutMs;
    const ms = WHOLE_MS.test(given) ? Number(given) : 0;
    if (ms <= 0) {
      throw new HttpError(
        400,
        'INVALID_PARAMS',
        `${timeoutHeader} must be a whole number of milliseconds > 0`,
        { header: timeoutHeader },
      );
    }
    return maxTimeoutMs === undefined ? ms : Math.min(ms, maxTimeoutMs);
  }

  return async (request, { headers, correlationId, signal }) => {
    // The deadline first: a malformed header is the caller's 400 whoever they are.
    const timeoutMs = timeoutOf(headers);
    const caller = await callerOf(request, headers);
    const extras = contextOptions ? await contextOptions(caller, request) : {};
    const tp = headers('traceparent');
    const traceparent = tp === undefined ? null : parseTraceparent(tp);
    const ctx = runtime.createContext({
      ...extras,
      userId: caller.userId,
      metadata: { ...extras.metadata, correlation_id: correlationId },
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      ...(traceparent === null ? {} : { traceId: traceparent.traceId }),
      ...(signal === undefined || options.cancelOnDisconnect === false ? {} : { signal }),
    });
    return { ctx, correlationId, caller, traceparent };
  };
}

/**
 * The {@link AxonRequest} of one request from its headers alone — for a framework without a
 * bridge. Build the function once with {@link createRequestContexts} when serving many.
 * Rejects with an `HttpError` (401, 400) to refuse the request.
 *
 * @example
 * const { ctx, correlationId } = await contextFromRequest(runtime, req.headers, { keys });
 * const result = await runtime.invoke('planner', 'Plan a trip', ctx);
 */
export async function contextFromRequest(
  runtime: Pick<Runtime, 'createContext'>,
  headers: HeaderSource,
  options: RequestContextOptions<HeaderSource> & { readonly signal?: AbortSignal } = {},
): Promise<AxonRequest> {
  const lookup = headerLookup(headers);
  const { signal, ...rest } = options;
  return createRequestContexts(
    runtime,
    rest,
    'contextFromRequest',
  )(headers, {
    headers: lookup,
    correlationId: correlationIdOf(lookup),
    ...(signal === undefined ? {} : { signal }),
  });
}
