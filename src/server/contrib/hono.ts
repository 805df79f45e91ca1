/**
 * @module `axon/hono`: a Hono middleware that gives each request the `ExecContext` to call
 * the runtime with (`c.get('axon').ctx`), built by the bridges' core (`request-context.ts`).
 * It imports Hono's types only: the package does not need Hono to load.
 */
import type { Context, MiddlewareHandler } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Runtime } from '../../runtime/runtime.js';
import { refusal } from './bridge-support.js';
import {
  CORRELATION_HEADER,
  correlationIdOf,
  createRequestContexts,
  type AxonRequest,
  type HeaderLookup,
  type RequestContextOptions,
} from './request-context.js';

export type { AxonRequest, Identity, ContextExtras } from './request-context.js';

/** The Hono environment the middleware adds to: `c.get('axon')`. */
export interface AxonHonoEnv {
  Variables: { axon: AxonRequest };
}

/** Options of {@link axonHono}; `identify` gets the Hono context. */
export type AxonHonoOptions = RequestContextOptions<Context>;

/**
 * A Hono middleware setting `c.set('axon', { ctx, correlationId, caller, traceparent })`. It
 * sets `X-Correlation-Id` on the response and answers a refused request itself with API.md's
 * error body: 401 without a valid key (or when `identify` names nobody), 400 for a malformed
 * deadline header. The context is cancelled when the request's `signal` aborts — on
 * `@hono/node-server`, when the client disconnects before the response is finished. Throws
 * `TypeError` / `RangeError` naming a bad option.
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
    await next();
    // After the handler, so it lands on whatever response it made (a raw `Response` too).
    c.header(CORRELATION_HEADER, correlationId);
    return undefined;
  };
}
