/**
 * @module The HTTP side every `--url` source of the CLI shares (`server-source.ts` for runs,
 * `thread-server-source.ts` for workflows and threads): the base URL checked, the request
 * headers (`accept`, the API key as `Authorization: Bearer <key>`), one request with its
 * timeout, and each failure as a `CliError` whose code says whether to fix the request
 * (`NOT_FOUND`, `REQUEST_FAILED`) or the connection (`UNREACHABLE`). It imports no
 * validation library, and sends its JSON requests with `node:http` rather than `fetch`
 * (whose HTTP client Node loads on first use, 50 ms): `axon runs list --url` starts fast.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { CliError } from '../cli-error.js';

/** Where a source's server is, and how to reach it. */
export interface ServerClientOptions {
  /** The server's base URL, `http://127.0.0.1:7070` (a path prefix is kept). */
  readonly url: string;
  /** Sent as `Authorization: Bearer <key>` when given. */
  readonly apiKey?: string | undefined;
  /** Aborting it abandons the request in flight. */
  readonly signal?: AbortSignal | undefined;
  /** How long one request (not a stream) may take; default 30 000 ms. */
  readonly timeoutMs?: number;
}

/** An API error body's `error` (API.md): its code, message and details. */
export interface ApiError {
  readonly code: string;
  readonly message: string;
  /** `{}` when the body has none. */
  readonly details: Readonly<Record<string, unknown>>;
}

/** An API error body's `error` (API.md), or `null` when `body` is not one. */
export function apiError(body: unknown): ApiError | null {
  if (typeof body !== 'object' || body === null) return null;
  const error = (body as { error?: unknown }).error;
  if (typeof error !== 'object' || error === null) return null;
  const { code, message, details } = error as {
    code?: unknown;
    message?: unknown;
    details?: unknown;
  };
  if (typeof code !== 'string' || typeof message !== 'string') return null;
  const fields =
    typeof details === 'object' && details !== null && !Array.isArray(details)
      ? (details as Record<string, unknown>)
      : {};
  return { code, message, details: fields };
}

/** The HTTP methods the CLI sends. */
export type RequestMethod = 'GET' | 'POST' | 'DELETE';

/**
 * What an API 404 `NOT_FOUND` means where it was asked (`no run "…" at …`), given the error
 * (its `details.kind` says what was not found: `agent`, `actor`, …).
 */
export type NotFoundOf = (error: ApiError) => CliError;

/**
 * A refusal a request names itself (`422 SCHEMA_VIOLATION`: the message does not fit), before
 * the usual mapping; `null` leaves it to that.
 */
export type RefusalOf = (status: number, error: ApiError) => CliError | null;

/** `url` checked (`CliError` `USAGE` otherwise), ending in `/` so paths join under it. */
export function baseUrl(url: string): URL {
  let base: URL;
  try {
    base = new URL(url);
  } catch {
    throw new CliError('USAGE', `--url must be an http:// or https:// URL, got "${url}"`);
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') {
    throw new CliError('USAGE', `--url must be an http:// or https:// URL, got "${url}"`);
  }
  if (!base.pathname.endsWith('/')) base.pathname += '/';
  base.search = '';
  base.hash = '';
  return base;
}

/** Why a request failed, from the error `fetch` throws. */
export function networkReason(err: unknown): string {
  const cause = err instanceof Error ? err.cause : undefined;
  if (cause instanceof Error && cause.message !== '') return cause.message;
  if (typeof cause === 'object' && cause !== null && 'code' in cause) return String(cause.code);
  return err instanceof Error ? err.message : String(err);
}

/** `text` as JSON, or `undefined` when it is empty or not JSON. */
function jsonOf(text: string): unknown {
  try {
    return text === '' ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** What {@link ServerClient.failure} reads of an answer: a `fetch` `Response` is one. */
export interface Answer {
  readonly status: number;
  readonly statusText: string;
}

/** One request over `node:http(s)`: its answer and its whole text. */
function send(
  url: URL,
  init: {
    readonly method: string;
    readonly headers: Record<string, string>;
    readonly body?: string;
    readonly signal: AbortSignal;
  },
): Promise<{ readonly answer: Answer & { readonly ok: boolean }; readonly text: string }> {
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(
      url,
      { method: init.method, headers: init.headers, signal: init.signal },
      (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          resolve({
            answer: {
              status,
              statusText: res.statusMessage ?? '',
              ok: status >= 200 && status < 300,
            },
            text: Buffer.concat(chunks).toString('utf8'),
          });
        });
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

/** The client {@link createServerClient} makes. */
export interface ServerClient {
  /** The URL as the user gave it, without trailing slashes: what messages show. */
  readonly shown: string;
  /** `path` (below the base URL) as a URL. */
  url(path: string): URL;
  /** The headers of every request: `accept` (default JSON) and the key, plus `extra`. */
  headers(extra?: Readonly<Record<string, string>>): Record<string, string>;
  /**
   * `method path`'s JSON answer (`what` names it in messages, `GET /v1/runs`; `notFound`
   * says what an API 404 means there); a JSON `body` is sent when given.
   */
  request(
    method: RequestMethod,
    path: string,
    what: string,
    notFound: NotFoundOf,
    body?: unknown,
  ): Promise<unknown>;
  /**
   * As {@link request}, with the answer's status, and `refused` asked first about an error
   * answer; an answer with no body (`204`) is `undefined`.
   */
  exchange(
    method: RequestMethod,
    path: string,
    what: string,
    notFound: NotFoundOf,
    options?: { readonly body?: unknown; readonly refused?: RefusalOf },
  ): Promise<{ readonly status: number; readonly body: unknown }>;
  /** The `UNREACHABLE` error of a request that got no answer (`timeout`: its own, if any). */
  unreachable(err: unknown, timeout: AbortSignal | null): CliError;
  /** The error of an answer `res` that is not ok, its text `text`. */
  failure(
    res: Answer,
    text: string,
    what: string,
    notFound: NotFoundOf,
    refused?: RefusalOf,
  ): CliError;
  /** The `UNREACHABLE` error of an answer that is not API.md's body for `what`. */
  notAxon(what: string): CliError;
}

/** A client of the server at `options.url`; `CliError` `USAGE` for a URL that is not http(s). */
export function createServerClient(options: ServerClientOptions): ServerClient {
  const base = baseUrl(options.url);
  const shown = options.url.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 30_000;
  const key: Record<string, string> =
    options.apiKey === undefined ? {} : { authorization: `Bearer ${options.apiKey}` };
  const headers = (extra: Readonly<Record<string, string>> = {}): Record<string, string> => ({
    accept: 'application/json',
    ...key,
    ...extra,
  });

  const unreachable = (err: unknown, timeout: AbortSignal | null): CliError => {
    const why = options.signal?.aborted
      ? 'interrupted'
      : timeout?.aborted === true
        ? `no answer within ${timeoutMs.toLocaleString('en-US')} ms`
        : networkReason(err);
    return new CliError('UNREACHABLE', `cannot reach the server at ${shown}: ${why}`, {
      cause: err,
    });
  };

  function failure(
    res: Answer,
    text: string,
    what: string,
    notFound: NotFoundOf,
    refused?: RefusalOf,
  ): CliError {
    const error = apiError(jsonOf(text));
    const detail = error
      ? `${res.status} ${error.code}: ${error.message}`
      : `${res.status} ${res.statusText}`;
    if (res.status === 404 && error?.code === 'NOT_FOUND') return notFound(error);
    const own = error && refused ? refused(res.status, error) : null;
    if (own) return own;
    if (res.status === 401 || res.status === 403) {
      const hint = options.apiKey === undefined ? ' (give --api-key or set AXON_API_KEY)' : '';
      return new CliError('REQUEST_FAILED', `the server refused ${what}: ${detail}${hint}`);
    }
    // A proxy in front of a stopped server, or a draining one: ask again later.
    if (res.status === 502 || res.status === 503 || res.status === 504 || !error) {
      return new CliError(
        'UNREACHABLE',
        `the server at ${shown} could not answer ${what}: ${detail}`,
      );
    }
    if (res.status === 409) return new CliError('REQUEST_FAILED', error.message);
    return new CliError('REQUEST_FAILED', `${what} failed: ${detail}`);
  }

  async function exchange(
    method: RequestMethod,
    path: string,
    what: string,
    notFound: NotFoundOf,
    sending: { readonly body?: unknown; readonly refused?: RefusalOf } = {},
  ): Promise<{ readonly status: number; readonly body: unknown }> {
    const { body, refused } = sending;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    let res: Answer & { readonly ok: boolean };
    let text: string;
    try {
      ({ answer: res, text } = await send(new URL(path, base), {
        method,
        headers: body === undefined ? headers() : headers({ 'content-type': 'application/json' }),
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal,
      }));
    } catch (err) {
      throw unreachable(err, timeout);
    }
    if (!res.ok) throw failure(res, text, what, notFound, refused);
    if (res.status === 204 && text === '') return { status: res.status, body: undefined };
    const parsed = jsonOf(text);
    if (parsed === undefined) {
      throw new CliError(
        'UNREACHABLE',
        `the server at ${shown} answered ${what} with no JSON: is it axon serve?`,
      );
    }
    return { status: res.status, body: parsed };
  }

  async function request(
    method: RequestMethod,
    path: string,
    what: string,
    notFound: NotFoundOf,
    body?: unknown,
  ): Promise<unknown> {
    const answer = await exchange(method, path, what, notFound, { body });
    if (answer.body === undefined) {
      throw new CliError(
        'UNREACHABLE',
        `the server at ${shown} answered ${what} with no JSON: is it axon serve?`,
      );
    }
    return answer.body;
  }

  return {
    shown,
    url: (path) => new URL(path, base),
    headers,
    request,
    exchange,
    unreachable,
    failure,
    notAxon: (what) =>
      new CliError(
        'UNREACHABLE',
        `the server at ${shown} answered ${what} with something other than API.md's bodies: is it axon serve?`,
      ),
  };
}
