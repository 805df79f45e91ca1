/**
 * @module `axon/fastify`: a Fastify plugin that gives each request the `ExecContext` to call
 * the runtime with (`request.axon.ctx`), built by the bridges' core (`request-context.ts`),
 * and with an orchestrator serves the front door's chat routes (`chat-routes.ts`).
 * Registered like a `fastify-plugin` plugin (encapsulation skipped), without depending on it.
 */
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyPluginCallback, FastifyReply, FastifyRequest } from 'fastify';
import type { Runtime } from '../../runtime/runtime.js';
import { HttpError } from '../http-errors.js';
import { disconnectSignal, refusal } from './bridge-support.js';
import {
  CHAT_PATH,
  CHAT_STREAM_PATH,
  chatAnswer,
  chatOrchestratorOf,
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
  type RequestContextOptions,
} from './request-context.js';

export type { AxonRequest, Identity, ContextExtras } from './request-context.js';
export type { ChatOrchestrator, ChatReply } from './chat-routes.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by `axonFastify`: the request's context, correlation id and caller. */
    axon: AxonRequest;
  }
}

/** Options of {@link axonFastify}; `identify` gets the Fastify request. */
export type AxonFastifyOptions = RequestContextOptions<FastifyRequest> & ChatRouteOptions;

/**
 * A Fastify plugin decorating `request.axon = { ctx, correlationId, caller, traceparent }` in
 * an `onRequest` hook, on every route of the instance it is registered on and of the
 * instance's parent (it skips encapsulation, as `fastify-plugin` would). It sets
 * `X-Correlation-Id` on the reply and answers a refused request itself with API.md's error
 * body: 401 without a valid key (or when `identify` names nobody), 400 for a malformed
 * deadline header. The context is cancelled when the client disconnects before the reply is
 * finished. Throws `TypeError` / `RangeError` naming a bad option.
 *
 * With `orchestrator`, the plugin adds the routes `POST /v1/chat` (JSON) and
 * `POST /v1/chat/stream` (SSE), answered by the orchestrator, under the prefix of the
 * instance it is registered on; see docs/front-door-http.md. They sit in a context of their
 * own that reads their body as `axon serve` does and answers errors with API.md's body.
 *
 * Gotchas: `onRequest` runs before the body is parsed, so `identify` sees no `request.body`.
 * Fastify ignores `register`'s `prefix` for a plugin that skips encapsulation: to serve the
 * chat routes under `/api`, register the plugin inside a plugin registered with that prefix.
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
  const orchestrator = chatOrchestratorOf(options, 'axonFastify');
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
    if (orchestrator !== null) {
      // Encapsulated: its body parser and error handler stay off the team's own routes.
      void app.register((chat: FastifyInstance, _o, registered) => {
        chatRoutes(chat, orchestrator, runtime);
        registered();
      });
    }
    done();
  };
  // What `fastify-plugin` sets: the hook and decorator reach the parent instance's routes.
  return Object.assign(plugin, {
    [Symbol.for('skip-override')]: true,
    [Symbol.for('fastify.display-name')]: 'axon',
  });
}

/** The chat routes of {@link axonFastify} on `app`, an encapsulated context of their own. */
function chatRoutes(
  app: FastifyInstance,
  orchestrator: ChatOrchestrator,
  runtime: Pick<Runtime, 'createContext' | 'logger'>,
): void {
  // The body is read and parsed by the chat routes (`readChatBody`, `parseChatBody`), as
  // the other bridges do: the same limit, the same 400s and 415 whatever the framework.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => {
    done(null, payload);
  });
  app.setErrorHandler((err, request, reply) => {
    // `axon` is null when the refusal came before the bridge's hook set it.
    const axon = request.axon as AxonRequest | null;
    const correlationId = axon?.correlationId ?? correlationIdOf(headerLookup(request.headers));
    const e = err as { code?: string; statusCode?: number; message?: string };
    // What Fastify refuses before a route runs (a malformed Content-Length, say) is the
    // caller's 400; anything else is the bridge's refusal.
    const known =
      typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500
        ? new HttpError(400, 'INVALID_PARAMS', e.message ?? 'bad request')
        : err;
    const { status, body, retryAfterS } = refusal(known, correlationId, runtime.logger);
    if (retryAfterS !== null) void reply.header('retry-after', String(retryAfterS));
    return reply.code(status).send(body);
  });
  const serve = (route: ChatRoute) => async (request: FastifyRequest, reply: FastifyReply) => {
    const headers = headerLookup(request.headers);
    const closed = disconnectSignal(reply.raw);
    const payload = request.body as Readable | undefined;
    const answer = await chatAnswer(route, {
      orchestrator,
      runtime,
      axon: request.axon,
      headers,
      closed,
      body: () => readChatBody(payload ?? null, headers),
    });
    if (answer.type === 'stream') {
      // Written to the socket directly, a frame as each chunk comes: Fastify lets go.
      reply.hijack();
      await writeChatStream(
        reply.raw,
        answer.frames,
        closed,
        chatStreamHeaders(request.axon.correlationId),
      );
      return reply;
    }
    if (answer.retryAfterS !== null) void reply.header('retry-after', String(answer.retryAfterS));
    return reply.code(answer.status).send(answer.body);
  };
  app.post(CHAT_PATH, serve('chat'));
  app.post(CHAT_STREAM_PATH, serve('stream'));
}
