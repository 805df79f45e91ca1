/**
 * @module The {@link ThreadSource} of a running server (`--url`): docs/http-api.md's
 * "Workflows and threads" over `fetch` — `GET /v1/workflows[/{name}]`,
 * `POST /v1/workflows/{name}/threads`, `GET /v1/threads[/{id}]`, `POST /v1/threads/{id}/kill`
 * and the SSE stream `GET /v1/threads/{id}/stream`, followed to its `thread_end` frame.
 */
import { z } from 'zod';
import { CliError } from '../cli-error.js';
import { createServerClient, type ServerClientOptions } from './server-client.js';
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
export type ThreadServerSourceOptions = ServerClientOptions;

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
  const client = createServerClient(options);
  const { shown } = client;

  /** `method path`'s answer, checked with `schema` (`UNREACHABLE` when it is not API.md's). */
  async function request<T>(
    method: 'GET' | 'POST',
    path: string,
    what: string,
    schema: z.ZodType<T>,
    notFound: () => CliError,
    body?: unknown,
  ): Promise<T> {
    const checked = schema.safeParse(await client.request(method, path, what, notFound, body));
    if (!checked.success) throw client.notAxon(what);
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
          res = await fetch(client.url(`v1/threads/${enc(id)}/stream`), {
            headers: client.headers({
              accept: 'text/event-stream',
              ...(lastId === null ? {} : { 'last-event-id': lastId }),
            }),
            ...(options.signal ? { signal: options.signal } : {}),
          });
        } catch (err) {
          // Never reached: unreachable. Reached before, then gone: try again.
          if (lastId === null || options.signal?.aborted) throw client.unreachable(err, null);
          continue;
        }
        if (!res.ok || !res.body) {
          const text = await res.text().catch(() => '');
          throw client.failure(res, text, what, noThread(id));
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
          if (options.signal?.aborted) throw client.unreachable(err, null);
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
