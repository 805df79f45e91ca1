/**
 * @module The API as the trace UI calls it: the API key of the tab, JSON reads and posts with
 * it, and the event streams of a step and of a thread read with `fetch` — `EventSource`
 * cannot send the `Authorization` header a server with keys needs, so the page parses the SSE
 * frames itself and resumes a dropped stream with `Last-Event-ID` as `EventSource` would.
 */
import type { StepEventData, Thread } from './api-types.js';

const KEY_ITEM = 'axon.apiKey';
// The server's root, from where this module is served (<root>/ui/app-<hash>.js): a proxy
// that puts the server under a path prefix keeps working.
const ROOT = new URL('..', import.meta.url);

/** A failed request: the HTTP status and API.md's error code and message. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Whether `err` is an {@link ApiError} (a refusal of the API, with its status and code). */
export function isApiError(err: unknown): err is ApiError {
  return err instanceof ApiError;
}

function readStoredKey(): string | null {
  try {
    return sessionStorage.getItem(KEY_ITEM);
  } catch {
    return null;
  }
}

let key = readStoredKey();
const unauthorizedListeners = new Set<(err: ApiError) => void>();

/** Whether the tab has an API key. */
export function hasKey(): boolean {
  return key !== null && key !== '';
}

/** Sets the tab's API key (null forgets it); kept in sessionStorage, for this tab only. */
export function setKey(value: string | null): void {
  key = value === null || value.trim() === '' ? null : value.trim();
  try {
    if (key === null) sessionStorage.removeItem(KEY_ITEM);
    else sessionStorage.setItem(KEY_ITEM, key);
  } catch {
    // Storage refused (a private window): the key lives as long as the page.
  }
}

/** Calls `fn(error)` whenever the server answers 401 (no key, or a key it does not know). */
export function onUnauthorized(fn: (err: ApiError) => void): void {
  unauthorizedListeners.add(fn);
}

function headersWith(extra: Readonly<Record<string, string>>): Record<string, string> {
  const headers: Record<string, string> = { ...extra };
  if (key !== null && key !== '') headers['authorization'] = `Bearer ${key}`;
  return headers;
}

/** The absolute URL of an API path such as `/v1/runs`. */
export function apiUrl(path: string): string {
  return new URL(path.replace(/^\/+/, ''), ROOT).toString();
}

interface ErrorBody {
  readonly error?: { readonly code?: string; readonly message?: string } | null;
}

async function failure(res: Response): Promise<ApiError> {
  let body: ErrorBody | null = null;
  try {
    body = (await res.json()) as ErrorBody | null;
  } catch {
    body = null;
  }
  const error = body?.error ?? null;
  const err = new ApiError(
    res.status,
    error?.code ?? `HTTP_${res.status}`,
    error?.message ?? (res.statusText || 'request failed'),
  );
  if (res.status === 401) for (const fn of unauthorizedListeners) fn(err);
  return err;
}

/**
 * POST `body` as JSON to `path`: the answer's status and JSON (a 202 and a 200 may mean two
 * things, as a message's first acceptance and its client token seen), or rejects with an
 * {@link ApiError}.
 */
export async function postJsonAnswer(
  path: string,
  body?: unknown,
): Promise<{ readonly status: number; readonly body: unknown }> {
  const res = await fetch(apiUrl(path), {
    method: 'POST',
    headers: headersWith({ accept: 'application/json', 'content-type': 'application/json' }),
    body: JSON.stringify(body ?? {}),
    cache: 'no-store',
  });
  if (!res.ok) throw await failure(res);
  return { status: res.status, body: (await res.json()) as unknown };
}

/** POST `body` as JSON to `path`: the answer's JSON, or rejects with an {@link ApiError}. */
export async function postJson<T>(path: string, body?: unknown): Promise<T> {
  return (await postJsonAnswer(path, body)).body as T;
}

/** GET `path` as JSON; rejects with an {@link ApiError} for an error answer. */
export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const init: RequestInit = {
    headers: headersWith({ accept: 'application/json' }),
    cache: 'no-store',
  };
  if (signal) init.signal = signal;
  const res = await fetch(apiUrl(path), init);
  if (!res.ok) throw await failure(res);
  return (await res.json()) as T;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done);
  });
}

/** One frame of an SSE stream. */
export interface SseFrame {
  readonly id: string | null;
  readonly event: string;
  readonly data: string;
}

/**
 * Reads SSE frames from a response body; calls `onFrame` for each, and stops when it returns
 * true. Resolves true when stopped so, false when the body ended.
 */
async function readFrames(
  body: ReadableStream<BufferSource>,
  onFrame: (frame: SseFrame) => boolean,
): Promise<boolean> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let id: string | null = null;
  let event: string | null = null;
  let data: string[] = [];
  try {
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) return false;
      buffer += chunk.value;
      let nl = buffer.indexOf('\n');
      while (nl >= 0) {
        let line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        nl = buffer.indexOf('\n');
        if (line.endsWith('\r')) line = line.slice(0, -1);
        if (line === '') {
          const done =
            data.length > 0 && onFrame({ id, event: event ?? 'message', data: data.join('\n') });
          id = null;
          event = null;
          data = [];
          if (done) return true;
          continue;
        }
        if (line.startsWith(':')) continue; // a comment: ": keep-alive"
        const colon = line.indexOf(':');
        const name = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (name === 'id') id = value;
        else if (name === 'event') event = value;
        else if (name === 'data') data.push(value);
      }
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
}

/** What a stream's reader says of a frame: seen before a reconnect, the next one, the last. */
export type FrameVerdict = 'skip' | 'next' | 'done';
/** How a followed stream ended: its last event came, or it was aborted. */
export type FollowEnd = 'ended' | 'aborted';

/**
 * Reads the SSE stream at `path` until `handle(frame)` says it is done, reconnecting when the
 * connection drops; the id of the last frame not skipped goes back as `Last-Event-ID`.
 * Resolves `'ended'` or `'aborted'`; rejects with an {@link ApiError} the server gave for
 * good (404, 401, …).
 */
export async function followSse(
  path: string,
  handle: (frame: SseFrame) => FrameVerdict,
  signal: AbortSignal,
): Promise<FollowEnd> {
  const url = apiUrl(path);
  // Written by the frame callback, read by the next connection.
  const seen: { last: string | null; delay: number } = { last: null, delay: 250 };
  const aborted = (): boolean => signal.aborted;
  while (!aborted()) {
    try {
      const extra: Record<string, string> = { accept: 'text/event-stream' };
      if (seen.last !== null) extra['last-event-id'] = seen.last;
      const res = await fetch(url, { headers: headersWith(extra), cache: 'no-store', signal });
      if (!res.ok) throw await failure(res);
      if (res.body === null) throw new ApiError(res.status, 'INTERNAL', 'a stream without a body');
      const ended = await readFrames(res.body, (frame) => {
        const verdict = handle(frame);
        if (verdict === 'skip') return false;
        seen.last = frame.id;
        seen.delay = 250;
        return verdict === 'done';
      });
      if (ended) return 'ended';
      // The server closed before the last event (a restart, a proxy): resume.
    } catch (err) {
      if (aborted()) return 'aborted';
      if (err instanceof ApiError && err.status < 500 && err.status !== 429) throw err;
    }
    await sleep(seen.delay, signal);
    seen.delay = Math.min(seen.delay * 2, 5000);
  }
  return 'aborted';
}

/**
 * Follows a step's events (`GET /v1/steps/{id}/stream`): `onEvent(type, data)` once per seq,
 * in order, from the first; a dropped connection is resumed with `Last-Event-ID`. Resolves
 * `'ended'` after the step's `end` or `error` event, `'aborted'` when `signal` aborts;
 * rejects with an {@link ApiError} the server gave for good (404, 401, …).
 */
export function followStep(
  stepId: string,
  onEvent: (type: string, data: StepEventData) => void,
  signal: AbortSignal,
): Promise<FollowEnd> {
  let last = 0;
  return followSse(
    `/v1/steps/${encodeURIComponent(stepId)}/stream`,
    (frame) => {
      const seq = Number(frame.id);
      if (!(seq > last)) return 'skip'; // seen before a reconnect
      last = seq;
      onEvent(frame.event, JSON.parse(frame.data) as StepEventData);
      return frame.event === 'end' || frame.event === 'error' ? 'done' : 'next';
    },
    signal,
  );
}

/** A turn's step event on a thread's stream: the event's data, with its turn and role. */
export interface TurnEventData extends StepEventData {
  readonly step_id: string;
  readonly turn: number;
  readonly role: string;
}

/** A frame of a thread's stream: a turn's step event, or the thread's end. */
export type ThreadFrame =
  | { readonly kind: 'end'; readonly thread: Thread }
  | { readonly kind: 'event'; readonly type: string; readonly data: TurnEventData };

/**
 * Follows a thread (`GET /v1/threads/{id}/stream`): `onFrame` for each of its turns' step
 * events in order (their data has `turn` and `role`), then once for `thread_end` (data: the
 * Thread). Frame ids are `<turn>.<seq>`; a dropped connection resumes after the last one (the
 * server skips what was seen, a turn run again after a crash included). Resolves as
 * {@link followStep} does.
 */
export function followThread(
  threadId: string,
  onFrame: (frame: ThreadFrame) => void,
  signal: AbortSignal,
): Promise<FollowEnd> {
  return followSse(
    `/v1/threads/${encodeURIComponent(threadId)}/stream`,
    (frame) => {
      const data: unknown = JSON.parse(frame.data);
      onFrame(
        frame.event === 'thread_end'
          ? { kind: 'end', thread: data as Thread }
          : { kind: 'event', type: frame.event, data: data as TurnEventData },
      );
      return frame.event === 'thread_end' ? 'done' : 'next';
    },
    signal,
  );
}

/** The HTTP status of a refusal of the API, or null for any other failure. */
export function httpStatus(err: unknown): number | null {
  return err instanceof ApiError ? err.status : null;
}

/** Whether a failure is one the API gave for good (4xx but 429): reading again won't help. */
export function isFinalRefusal(err: unknown): boolean {
  const status = httpStatus(err);
  return status !== null && status >= 400 && status < 500 && status !== 429;
}
