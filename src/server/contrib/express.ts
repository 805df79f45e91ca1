/**
 * @module `axon/express`: an Express middleware that gives each request the `ExecContext` to
 * call the runtime with (`req.axon.ctx`), built by the bridges' core (`request-context.ts`),
 * and with an orchestrator serves the front door's chat routes (`chat-routes.ts`).
 * It imports Express's types only: the package does not need Express to load.
 */
import type { Request, RequestHandler, Response } from 'express';
import type { Runtime } from '../../runtime/runtime.js';
import { disconnectSignal, refusal } from './bridge-support.js';
import {
  chatAnswer,
  chatOrchestratorOf,
  chatRouteOf,
  chatStreamHeaders,
  readChatBody,
  writeChatStream,
  type ChatOrchestrator,
  type ChatRoute,
  type ChatRouteOptions,
} from './chat-routes.js';
import {
  CORRELATION_HEADER,
  correlationIdOf,
  createRequestContexts,
  headerLookup,
  type AxonRequest,
  type HeaderLookup,
  type RequestContextOptions,
} from './request-context.js';

export type { AxonRequest, Identity, ContextExtras } from './request-context.js';
export type { ChatOrchestrator, ChatReply } from './chat-routes.js';

declare global {
  // Express's own way to add to its request type (`@types/express`).
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by `axonExpress`: the request's context, correlation id and caller. */
      axon: AxonRequest;
    }
  }
}

/** Options of {@link axonExpress}; `identify` gets the Express request. */
export type AxonExpressOptions = RequestContextOptions<Request> & ChatRouteOptions;

/**
 * An Express middleware setting `req.axon = { ctx, correlationId, caller, traceparent }`.
 * It sets `X-Correlation-Id` on the response and answers a refused request itself with
 * API.md's error body: 401 without a valid key (or when `identify` names nobody), 400 for a
 * malformed deadline header. The context is cancelled when the client disconnects before the
 * response is finished. Throws `TypeError` / `RangeError` naming a bad option.
 *
 * With `orchestrator`, the middleware answers `POST /v1/chat` (JSON) and
 * `POST /v1/chat/stream` (SSE) below the path it is mounted on (`app.use('/api', …)` serves
 * `/api/v1/chat`) itself, with the orchestrator; see docs/front-door-http.md. It reads the
 * body itself unless a parser before it (`express.json()`) already has.
 *
 * Gotcha: `req.axon` is typed on every Express request, but is only set on the routes after
 * the middleware.
 *
 * @example
 * const app = express();
 * app.use(axonExpress(runtime, { keys: [{ key: process.env.KEY!, user_id: 'ops' }] }));
 * app.post('/plan', async (req, res) => {
 *   const result = await runtime.invoke('planner', String(req.query.q), req.axon.ctx);
 *   res.json({ status: result.status, output: result.output });
 * });
 */
export function axonExpress(
  runtime: Pick<Runtime, 'createContext' | 'logger'>,
  options: AxonExpressOptions = {},
): RequestHandler {
  const contexts = createRequestContexts<Request>(runtime, options, 'axonExpress');
  const orchestrator = chatOrchestratorOf(options, 'axonExpress');
  return (req, res, next) => {
    const headers = headerLookup(req.headers);
    const correlationId = correlationIdOf(headers);
    res.setHeader(CORRELATION_HEADER, correlationId);
    const closed = disconnectSignal(res);
    void contexts(req, { headers, correlationId, signal: closed }).then(
      (axon) => {
        req.axon = axon;
        // `req.path` is relative to where the middleware is mounted.
        const route = orchestrator === null ? null : chatRouteOf(req.method, req.path);
        if (orchestrator === null || route === null) {
          next();
          return;
        }
        void serveChat(route, { orchestrator, runtime, req, res, headers, closed });
      },
      (err: unknown) => {
        const { status, body, retryAfterS } = refusal(err, correlationId, runtime.logger);
        if (retryAfterS !== null) res.setHeader('retry-after', String(retryAfterS));
        res.status(status).json(body);
      },
    );
  };
}

/** Answers a chat route of {@link axonExpress}. Never rejects. */
async function serveChat(
  route: ChatRoute,
  on: {
    orchestrator: ChatOrchestrator;
    runtime: Pick<Runtime, 'createContext' | 'logger'>;
    req: Request;
    res: Response;
    headers: HeaderLookup;
    closed: AbortSignal;
  },
): Promise<void> {
  const { req, res, closed } = on;
  const answer = await chatAnswer(route, {
    ...on,
    axon: req.axon,
    // Express 5 leaves `req.body` undefined until a body parser sets it.
    body: () =>
      req.body === undefined ? readChatBody(req, on.headers) : Promise.resolve<unknown>(req.body),
  });
  if (answer.type === 'stream') {
    await writeChatStream(res, answer.frames, closed, chatStreamHeaders(req.axon.correlationId));
    return;
  }
  if (answer.retryAfterS !== null) res.setHeader('retry-after', String(answer.retryAfterS));
  res.status(answer.status).json(answer.body);
}
