/**
 * @module The trace UI's `ui/api.js` (a browser module, kept as a string so it ships in
 * `dist/` with no build step): the API key of the tab, JSON reads and posts of the API with
 * it, and the event streams of a step and of a thread read with `fetch` — `EventSource`
 * cannot send the `Authorization` header a server with keys needs, so the page parses the SSE
 * frames itself and resumes a dropped stream with `Last-Event-ID` as `EventSource` would.
 */

/** `ui/api.js`. */
export const API_JS = String.raw`// axon trace UI: the API as the page calls it.
const KEY_ITEM = 'axon.apiKey';
// The server's root, from where this module is served (<root>/ui/api.js): a proxy that puts
// the server under a path prefix keeps working.
const ROOT = new URL('..', import.meta.url);

/** A failed request: the HTTP status and API.md's error code and message. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function readStoredKey() {
  try {
    return sessionStorage.getItem(KEY_ITEM);
  } catch {
    return null;
  }
}

let key = readStoredKey();
const unauthorizedListeners = new Set();

/** Whether the tab has an API key. */
export function hasKey() {
  return key !== null && key !== '';
}

/** Sets the tab's API key (null forgets it); kept in sessionStorage, for this tab only. */
export function setKey(value) {
  key = value === null || value.trim() === '' ? null : value.trim();
  try {
    if (key === null) sessionStorage.removeItem(KEY_ITEM);
    else sessionStorage.setItem(KEY_ITEM, key);
  } catch {
    // Storage refused (a private window): the key lives as long as the page.
  }
}

/** Calls fn(error) whenever the server answers 401 (no key, or a key it does not know). */
export function onUnauthorized(fn) {
  unauthorizedListeners.add(fn);
}

function headersWith(extra) {
  const headers = Object.assign({}, extra);
  if (hasKey()) headers.authorization = 'Bearer ' + key;
  return headers;
}

/** The absolute URL of an API path such as '/v1/runs'. */
export function apiUrl(path) {
  return new URL(path.replace(/^\/+/, ''), ROOT).toString();
}

async function failure(res) {
  let body = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  const error = body && body.error ? body.error : null;
  const err = new ApiError(
    res.status,
    error ? error.code : 'HTTP_' + res.status,
    error ? error.message : res.statusText || 'request failed',
  );
  if (res.status === 401) for (const fn of unauthorizedListeners) fn(err);
  return err;
}

/** POST body as JSON to path; the answer's JSON, or rejects with an ApiError. */
export async function postJson(path, body) {
  const res = await fetch(apiUrl(path), {
    method: 'POST',
    headers: headersWith({ accept: 'application/json', 'content-type': 'application/json' }),
    body: JSON.stringify(body),
    cache: 'no-store',
  });
  if (!res.ok) throw await failure(res);
  return res.json();
}

/** GET path as JSON; rejects with an ApiError for an error answer. */
export async function getJson(path, signal) {
  const res = await fetch(apiUrl(path), {
    headers: headersWith({ accept: 'application/json' }),
    cache: 'no-store',
    signal,
  });
  if (!res.ok) throw await failure(res);
  return res.json();
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done);
  });
}

/**
 * Reads SSE frames from a response body; calls onFrame({ id, event, data }) for each, and
 * stops when it returns true. Resolves true when stopped so, false when the body ended.
 */
async function readFrames(body, onFrame) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let frame = { id: null, event: null, data: [] };
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
          const done = frame.data.length > 0 && onFrame({
            id: frame.id,
            event: frame.event || 'message',
            data: frame.data.join('\n'),
          });
          frame = { id: null, event: null, data: [] };
          if (done) return true;
          continue;
        }
        if (line.startsWith(':')) continue; // a comment: ": keep-alive"
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'id') frame.id = value;
        else if (field === 'event') frame.event = value;
        else if (field === 'data') frame.data.push(value);
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

/**
 * Reads the SSE stream at path until handle(frame) says it is done, reconnecting when the
 * connection drops: handle returns 'skip' (a frame seen before a reconnect), 'next' or
 * 'done'; the id of the last frame not skipped goes back as Last-Event-ID. Resolves 'ended'
 * or 'aborted'; rejects with an ApiError the server gave for good (404, 401, ...).
 */
async function followSse(path, handle, signal) {
  const url = apiUrl(path);
  let last = null;
  let delay = 250;
  while (!signal.aborted) {
    try {
      const extra = { accept: 'text/event-stream' };
      if (last !== null) extra['last-event-id'] = last;
      const res = await fetch(url, { headers: headersWith(extra), cache: 'no-store', signal });
      if (!res.ok) throw await failure(res);
      const ended = await readFrames(res.body, (frame) => {
        const verdict = handle(frame);
        if (verdict === 'skip') return false;
        last = frame.id;
        delay = 250;
        return verdict === 'done';
      });
      if (ended) return 'ended';
      // The server closed before the last event (a restart, a proxy): resume.
    } catch (err) {
      if (signal.aborted) return 'aborted';
      if (err instanceof ApiError && err.status < 500 && err.status !== 429) throw err;
    }
    await sleep(delay, signal);
    delay = Math.min(delay * 2, 5000);
  }
  return 'aborted';
}

/**
 * Follows a step's events (GET /v1/steps/{id}/stream): onEvent(type, data) once per seq, in
 * order, from the first; a dropped connection is resumed with Last-Event-ID. Resolves
 * 'ended' after the step's end or error event, 'aborted' when signal aborts; rejects with
 * an ApiError the server gave for good (404, 401, ...).
 */
export function followStep(stepId, onEvent, signal) {
  let last = 0;
  return followSse('/v1/steps/' + encodeURIComponent(stepId) + '/stream', (frame) => {
    const seq = Number(frame.id);
    if (!(seq > last)) return 'skip'; // seen before a reconnect
    last = seq;
    onEvent(frame.event, JSON.parse(frame.data));
    return frame.event === 'end' || frame.event === 'error' ? 'done' : 'next';
  }, signal);
}

/**
 * Follows a thread (GET /v1/threads/{id}/stream): onFrame(type, data) for each of its turns'
 * step events in order (data has turn and role), then once for 'thread_end' (data: the
 * Thread). Frame ids are '<turn>.<seq>'; a dropped connection resumes after the last one
 * (the server skips what was seen, a turn run again after a crash included). Resolves as
 * followStep does.
 */
export function followThread(threadId, onFrame, signal) {
  return followSse('/v1/threads/' + encodeURIComponent(threadId) + '/stream', (frame) => {
    onFrame(frame.event, JSON.parse(frame.data));
    return frame.event === 'thread_end' ? 'done' : 'next';
  }, signal);
}
`;
