/**
 * @module `axon/hono`: a Hono middleware that gives each request the `ExecContext` to call
 * the runtime with (`c.get('axon').ctx`), built by the bridges' core (`request-context.ts`),
 * and with an orchestrator serves the front door's chat routes (`chat-routes.ts`).
 * It imports Hono's types only: the package does not need Hono to load.
 */
import type { Context, MiddlewareHandler } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Runtime } from '../../runtime/runtime.js';
import { refusal } from './bridge-support.js';
import {
  chatAnswer,
  chatOrchestratorOf,
  chatRouteOf,
  chatStreamHeaders,
  readChatBody,
  type ChatOrchestrator,
  type ChatRoute,
  type ChatRouteOptions,
} from './chat-routes.js';
import {
  CORRELATION_HEADER,
  correlationIdOf,
  createRequestContexts,
  type AxonRequest,
  type HeaderLookup,
  type RequestContextOptions,
} from './request-context.js';

export type { AxonRequest, Identity, ContextExtras } from './request-context.js';
export type { ChatOrchestrator, ChatReply } from './chat-routes.js';

/** The Hono environment the middleware adds to: `c.get('axon')`. */
export interface AxonHonoEnv {
  Variables: { axon: AxonRequest };
}

/** Options of {@link axonHono}; `identify` gets the Hono context. */
export type AxonHonoOptions = RequestContextOptions<Context> & ChatRouteOptions;

/**
 * A Hono middleware setting `c.set('axon', { ctx, correlationId, caller, traceparent })`. It
 * sets `X-Correlation-Id` on the response and answers a refused request itself with API.md's
 * error body: 401 without a valid key (or when `identify` names nobody), 400 for a malformed
 * deadline header. The context is cancelled when the request's `signal` aborts — on
 * `@hono/node-server`, when the client disconnects before the response is finished. Throws
 * `TypeError` / `RangeError` naming a bad option.
 *
 * With `orchestrator`, the middleware answers `POST /v1/chat` (JSON) and
 * `POST /v1/chat/stream` (SSE) below the path it is mounted on (`app.use('/api/*', …)`
 * serves `/api/v1/chat`) itself, with the orchestrator; see docs/front-door-http.md.
 *
 * @example
 * const app = new Hono<AxonHonoEnv>();
 * app.use('/api/*', axonHono(runtime, { keys }));
 * app.post('/api/plan', async (c) => {
 *   const result = await runtime.invoke('planner', 'Plan a trip', c.get('axon').ctx);
 *   return c.json({ status: result.status, output: result.output });
 * });
 */
export function axonHono(
  runtime: Pick<Runtime, 'createContext' | 'logger'>,
  options: AxonHonoOptions = {},
): MiddlewareHandler<AxonHonoEnv> {
  const contexts = createRequestContexts<Context>(runtime, options, 'axonHono');
  const orchestrator = chatOrchestratorOf(options, 'axonHono');
  return async (c, next) => {
    const headers: HeaderLookup = (name) => c.req.header(name);
    const correlationId = correlationIdOf(headers);
    let axon: AxonRequest;
    try {
      axon = await contexts(c, { headers, correlationId, signal: c.req.raw.signal });
    } catch (err) {
      const { status, body, retryAfterS } = refusal(err, correlationId, runtime.logger);
      c.header(CORRELATION_HEADER, correlationId);
      if (retryAfterS !== null) c.header('retry-after', String(retryAfterS));
      return c.json(body, status as ContentfulStatusCode);
    }
    c.set('axon', axon);
    const route =
      orchestrator === null
        ? null
        : // `hono/route`'s helper would load Hono from here; the getter is the same path.
          // eslint-disable-next-line @typescript-eslint/no-deprecated
          chatRouteOf(c.req.method, mountedPath(c.req.routePath, c.req.path));
    if (orchestrator !== null && route !== null) {
      c.header(CORRELATION_HEADER, correlationId);
      return serveChat(route, orchestrator, runtime, c, headers);
    }
    await next();
    // After the handler, so it lands on whatever response it made (a raw `Response` too).
    c.header(CORRELATION_HEADER, correlationId);
    return undefined;
  };
}

/**
 * `path` below the mount path of the middleware, whose pattern is `routePath` (`/api/*` for
 * `app.use('/api/*', …)`, `/*` for `app.use(…)`): as many segments dropped as the pattern has
 * before its final wildcard.
 */
function mountedPath(routePath: string, path: string): string {
  const depth = routePath
    .replace(/\/?\*$/, '')
    .split('/')
    .filter((s) => s !== '').length;
  return `/${path
    .split('/')
    .filter((s) => s !== '')
    .slice(depth)
    .join('/')}`;
}

/** Answers a chat route of {@link axonHono}. */
async function serveChat(
  route: ChatRoute,
  orchestrator: ChatOrchestrator,
  runtime: Pick<Runtime, 'createContext' | 'logger'>,
  c: Context<AxonHonoEnv>,
  headers: HeaderLookup,
): Promise<Response> {
  const raw = c.req.raw;
  const answer = await chatAnswer(route, {
    orchestrator,
    runtime,
    axon: c.get('axon'),
    headers,
    // On `@hono/node-server` the request's signal aborts when the client goes away.
    closed: raw.signal,
    body: () => readChatBody(raw.body, headers),
  });
  if (answer.type === 'json') {
    if (answer.retryAfterS !== null) c.header('retry-after', String(answer.retryAfterS));
    return c.json(answer.body, answer.status as ContentfulStatusCode);
  }
  const frames = answer.frames;
  const encoder = new TextEncoder();
  // Pulled a frame at a time as the server writes them: the client's pace is the stream's.
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const next = await frames.next();
        if (next.done === true) controller.close();
        else controller.enqueue(encoder.encode(next.value));
      },
      async cancel() {
        await frames.return(undefined);
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, {
    status: 200,
    headers: chatStreamHeaders(c.get('axon').correlationId),
  });
}
