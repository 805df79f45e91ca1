/**
 * @module `axon/fastify`: a Fastify plugin that gives each request the `ExecContext` to call
 * the runtime with (`request.axon.ctx`), built by the bridges' core (`request-context.ts`).
 * Registered like a `fastify-plugin` plugin (encapsulation skipped), without depending on it.
 */
import type { FastifyPluginCallback, FastifyRequest } from 'fastify';
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

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by `axonFastify`: the request's context, correlation id and caller. */
    axon: AxonRequest;
  }
}

/** Options of {@link axonFastify}; `identify` gets the Fastify request. */
export type AxonFastifyOptions = RequestContextOptions<FastifyRequest>;

/**
 * A Fastify plugin decorating `request.axon = { ctx, correlationId, caller, traceparent }` in
 * an `onRequest` hook, on every route of the instance it is registered on and of the
 * instance's parent (it skips encapsulation, as `fastify-plugin` would). It sets
 * `X-Correlation-Id` on the reply and answers a refused request itself with API.md's error
 * body: 401 without a valid key (or when `identify` names nobody), 400 for a malformed
 * deadline header. The context is cancelled when the client disconnects before the reply is
 * finished. Throws `TypeError` / `RangeError` naming a bad option.
 *
 * Gotcha: `onRequest` runs before the body is parsed, so `identify` sees no `request.body`.
 *
 * @example
 * const app = Fastify();
 * await app.register(axonFastify(runtime, { identify: (req) => ({ userId: req.headers['x-user']! }) }));
 * app.post('/plan', async (request) => {
 *   const result = await runtime.invoke('planner', 'Plan a trip', request.axon.ctx);
 *   return { status: result.status, output: result.output };
 * });
 */
export function axonFastify(
  runtime: Pick<Runtime, 'createContext' | 'logger'>,
  options: AxonFastifyOptions = {},
): FastifyPluginCallback {
  const contexts = createRequestContexts<FastifyRequest>(runtime, options, 'axonFastify');
  const plugin: FastifyPluginCallback = (app, _opts, done) => {
    try {
      // A reference type is decorated as null and set per request (Fastify's rule).
      app.decorateRequest('axon', null as unknown as AxonRequest);
    } catch (err) {
      // Registered twice on one instance: refuse the second registration, not the process.
      done(err as Error);
      return;
    }
    app.addHook('onRequest', async (request, reply) => {
      const headers = headerLookup(request.headers);
      const correlationId = correlationIdOf(headers);
      void reply.header(CORRELATION_HEADER, correlationId);
      try {
        request.axon = await contexts(request, {
          headers,
          correlationId,
          signal: disconnectSignal(reply.raw),
        });
      } catch (err) {
        const { status, body, retryAfterS } = refusal(err, correlationId, runtime.logger);
        if (retryAfterS !== null) void reply.header('retry-after', String(retryAfterS));
        return reply.code(status).send(body);
      }
    });
    done();
  };
  // What `fastify-plugin` sets: the hook and decorator reach the parent instance's routes.
  return Object.assign(plugin, {
    [Symbol.for('skip-override')]: true,
    [Symbol.for('fastify.display-name')]: 'axon',
  });
}
