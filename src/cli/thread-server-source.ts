/**
 * @module The {@link ThreadSource} of a running server (`--url`): docs/http-api.md's
 * "Workflows and threads" over `fetch` — `GET /v1/workflows[/{name}]`,
 * `POST /v1/workflows/{name}/threads`, `GET /v1/threads[/{id}]`, `POST /v1/threads/{id}/kill`
 * and the SSE stream `GET /v1/threads/{id}/stream`, followed to its `thread_end` frame.
 */
import { z } from 'zod';
import { CliError } from './cli-error.js';
import { baseUrl, errorSchema, networkReason } from './server-source.js';
import type {
  ThreadInfo,
  ThreadProgress,
  ThreadQuery,
  ThreadSource,
  WorkflowSummary,
} from './thread-source.js';

/** How many times a thread's stream that drops is opened again (after its last frame). */
const FOLLOW_RETRIES = 5;
/** The wait before the n-th reopening: n times this, in ms. */
const FOLLOW_RETRY_MS = 200;

/** Resolves after `ms`, or at once when `signal` aborts. */
function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

/** Options of {@link createThreadServerSource}. */
export interface ThreadServerSourceOptions {
  readonly url: string;
  readonly apiKey?: string | undefined;
  readonly signal?: AbortSignal | undefined;
  /** How long one request (not a stream) may take; default 30 000 ms. */
  readonly timeoutMs?: number;
}

/** What the CLI checks of a Workflow body (the rest is kept as it came). */
const workflowSchema = z.looseObject({
  name: z.string(),
  roles: z.array(z.object({ name: z.string() }).loose()),
  max_rounds: z.number(),
  concurrency: z.object({ max: z.number() }).loose(),
  running: z.number(),
  queued: z.number(),
});
/** What the CLI checks of a Thread body. */
const threadSchema = z.looseObject({
  thread_id: z.string(),
  workflow: z.string(),
  status: z.string(),
  turns: z.array(z.object({ n: z.number(), role: z.string() }).loose()),
});

/**
 * A source over the server at `options.url`. `CliError` `USAGE` for a URL that is not
 * http(s); nothing is sent until a method is called.
 */
export function createThreadServerSource(options: ThreadServerSourceOptions): ThreadSource {
  const base = baseUrl(options.url);
  const shown = options.url.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 30_000;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.apiKey !== undefined) headers['authorization'] = `Bearer ${options.apiKey}`;

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

  /** The error of a response that is not ok; `notFound` says what a 404 means there. */
  function failure(res: Response, body: unknown, what: string, notFound: () => CliError): CliError {
    const error = errorSchema.safeParse(body);
    const detail = error.success
      ? `${res.status} ${error.data.error.code}: ${error.data.error.message}`
      : `${res.status} ${res.statusText}`;
    if (res.status === 404 && error.success && error.data.error.code === 'NOT_FOUND') {
      return notFound();
    }
    if (res.status === 404 && !error.success) {
      return new CliError(
        'UNREACHABLE',
        `the server at ${shown} has no ${what}: is it axon serve?`,
      );
    }
    if (res.status === 401 || res.status === 403) {
      const hint = options.apiKey === undefined ? ' (give --api-key or set AXON_API_KEY)' : '';
      return new CliError('REQUEST_FAILED', `the server refused ${what}: ${detail}${hint}`);
    }
    if (res.status === 502 || res.status === 503 || res.status === 504 || !error.success) {
      return new CliError(
        'UNREACHABLE',
        `the server at ${shown} could not answer ${what}: ${detail}`,
      );
    }
    if (res.status === 409) {
      return new CliError('REQUEST_FAILED', error.data.error.message);
    }
    return new CliError('REQUEST_FAILED', `${what} failed: ${detail}`);
  }

  async function request<T>(
    method: 'GET' | 'POST',
    path: string,
    what: string,
    schema: z.ZodType<T>,
    notFound: () => CliError,
    body?: unknown,
  ): Promise<T> {
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    let res: Response;
    let text: string;
    try {
      res = await fetch(new URL(path, base), {
        method,
        headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal,
      });
      text = await res.text();
    } catch (err) {
      throw unreachable(err, timeout);
    }
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (!res.ok) throw failure(res, parsed, what, notFound);
    const checked = schema.safeParse(parsed);
    if (!checked.success) {
      throw new CliError(
        'UNREACHABLE',
        `the server at ${shown} answered ${what} with something other than docs/http-api.md's bodies: is it axon serve?`,
      );
    }
    return checked.data;
  }

  const noWorkflow = (name: string) => (): CliError =>
    new CliError('NOT_FOUND', `no workflow "${name}" at ${shown}`);
  const noThread = (id: string) => (): CliError =>
    new CliError('NOT_FOUND', `no thread "${id}" at ${shown} (or not one this key may see)`);
  const asThread = threadSchema as unknown as z.ZodType<ThreadInfo>;
  const asWorkflow = workflowSchema as unknown as z.ZodType<WorkflowSummary>;
  const enc = encodeURIComponent;

  async function getThread(id: string): Promise<ThreadInfo> {
    return request('GET', `v1/threads/${enc(id)}`, 'GET /v1/threads/{id}', asThread, noThread(id));
  }

  return {
    description: shown,
    listWorkflows: () =>
      request(
        'GET',
        'v1/workflows',
        'GET /v1/workflows',
        z.array(asWorkflow),
        () => new CliError('UNREACHABLE', `the server at ${shown} serves no workflows`),
      ),
    getWorkflow: (name) =>
      request(
        'GET',
        `v1/workflows/${enc(name)}`,
        'GET /v1/workflows/{name}',
        asWorkflow,
        noWorkflow(name),
      ),
    listThreads: (query: ThreadQuery) => {
      const params = new URLSearchParams({ limit: String(query.limit) });
      if (query.workflow !== undefined) params.set('workflow', query.workflow);
      if (query.status) params.set('status', query.status.join(','));
      return request(
        'GET',
        `v1/threads?${params.toString()}`,
        'GET /v1/threads',
        z.array(asThread),
        () => new CliError('UNREACHABLE', `the server at ${shown} serves no threads`),
      );
    },
    getThread,
    trigger: (name, input) =>
      request(
        'POST',
        `v1/workflows/${enc(name)}/threads`,
        'POST /v1/workflows/{name}/threads',
        asThread,
        noWorkflow(name),
        { input },
      ),
    kill: (id) =>
      request(
        'POST',
        `v1/threads/${enc(id)}/kill`,
        'POST /v1/threads/{id}/kill',
        asThread,
        noThread(id),
      ),
    async follow(id: string, onProgress: (p: ThreadProgress) => void): Promise<ThreadInfo> {
      const what = 'GET /v1/threads/{id}/stream';
      // The id of the last frame read: a stream that drops is opened again after it.
      let lastId: string | null = null;
      for (let attempt = 0; attempt <= FOLLOW_RETRIES; attempt++) {
        if (attempt > 0) await delay(FOLLOW_RETRY_MS * attempt, options.signal);
        let res: Response;
        try {
          res = await fetch(new URL(`v1/threads/${enc(id)}/stream`, base), {
            headers: {
              ...headers,
              accept: 'text/event-stream',
              ...(lastId === null ? {} : { 'last-event-id': lastId }),
            },
            ...(options.signal ? { signal: options.signal } : {}),
          });
        } catch (err) {
          // Never reached: unreachable. Reached before, then gone: try again.
          if (lastId === null || options.signal?.aborted) throw unreachable(err, null);
          continue;
        }
        if (!res.ok || !res.body) {
          const text = await res.text().catch(() => '');
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = undefined;
          }
          throw failure(res, parsed, what, noThread(id));
        }
        const decoder = new TextDecoder();
        let buffered = '';
        try {
          for await (const chunk of res.body) {
            buffered += decoder.decode(chunk as Uint8Array, { stream: true });
            let at: number;
            while ((at = buffered.indexOf('\n\n')) >= 0) {
              const frame = buffered.slice(0, at);
              buffered = buffered.slice(at + 2);
              let event = 'message';
              let data = '';
              let frameId: string | null = null;
              for (const line of frame.split('\n')) {
                if (line.startsWith('event: ')) event = line.slice(7);
                else if (line.startsWith('data: ')) data += line.slice(6);
                else if (line.startsWith('id: ')) frameId = line.slice(4);
              }
              if (data === '') continue;
              const body = JSON.parse(data) as { turn?: number; role?: string };
              if (event === 'thread_end') return asThread.parse(body);
              if (frameId !== null) lastId = frameId;
              onProgress({ turn: body.turn ?? 0, role: body.role ?? '', type: event });
            }
          }
        } catch (err) {
          if (err instanceof CliError) throw err;
          if (options.signal?.aborted) throw unreachable(err, null);
          // The connection dropped mid-stream: opened again after the last frame read.
        }
      }
      // The stream kept closing before the thread ended (a draining server): what is stored now.
      const t = await getThread(id);
      if (['queued', 'started'].includes(t.status)) {
        throw new CliError(
          'UNREACHABLE',
          `the server at ${shown} closed the stream of thread ${id} before it ended (it is ${t.status})`,
        );
      }
      return t;
    },
    close: () => Promise.resolve(),
  };
}
