/**
 * @module `axon/express`: an Express middleware that gives each request the `ExecContext` to
 * call the runtime with (`req.axon.ctx`), built by the bridges' core (`request-context.ts`).
 * It imports Express's types only: the package does not need Express to load.
 */
import type { Request, RequestHandler } from 'express';
import type { Runtime } from '../../runtime/runtime.js';
import { disconnectSignal, refusal } from './bridge-support.js';
import {
  CORRELATION_HEADER,
  correlationIdOf,
  createRequestContexts,
  headerLookup,
  type AxonRequest,
  type RequestContextOptions,
} from './request-context.js';

export type { AxonRequest, Identity, ContextExtras } from './request-context.js';

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
export type AxonExpressOptions = RequestContextOptions<Request>;

/**
 * An Express middleware setting `req.axon = { ctx, correlationId, caller, traceparent }`.
 * It sets `X-Correlation-Id` on the response and answers a refused request itself with
 * API.md's error body: 401 without a valid key (or when `identify` names nobody), 400 for a
 * malformed deadline header. The context is cancelled when the client disconnects before the
 * response is finished. Throws `TypeError` / `RangeError` naming a bad option.
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
  return (req, res, next) => {
    const headers = headerLookup(req.headers);
    const correlationId = correlationIdOf(headers);
    res.setHeader(CORRELATION_HEADER, correlationId);
    void contexts(req, { headers, correlationId, signal: disconnectSignal(res) }).then(
      (axon) => {
        req.axon = axon;
        next();
      },
      (err: unknown) => {
        const { status, body, retryAfterS } = refusal(err, correlationId, runtime.logger);
        if (retryAfterS !== null) res.setHeader('retry-after', String(retryAfterS));
        res.status(status).json(body);
      },
    );
  };
}
