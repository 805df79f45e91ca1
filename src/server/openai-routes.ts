/**
 * @module The OpenAI API in front of the agents (docs/openai-api.md; issue 48):
 * `GET /v1/models` (and `GET /v1/models/{model}`) and `POST /v1/chat/completions`, so any
 * OpenAI client or chat UI talks to axon's agents. Behind the server's keys like every other
 * route (a completion needs `write`, the models `read`); each completion is a run of its
 * own with one agent step (or the front door's), owned by the caller and shown in the trace
 * UI, cancelled when the client goes away. Every failure answers OpenAI's error body
 * (`openai-errors.ts`): the routes live in a Fastify context of their own, whose error
 * handler the server's auth hook and body parser throw to as well.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AgentInput } from '../actors/agent-result.js';
import type { CreateContextOptions } from '../context/context-options.js';
import type { Logger } from '../observability/logger.js';
import { RUN_SEED_KEY } from '../runs/run-records.js';
import type { Runtime } from '../runtime/runtime.js';
import type { Caller } from './auth.js';
import { HttpError } from './http-errors.js';
import {
  chatCompletion,
  completionId,
  completionUsage,
  NO_USAGE,
  type CompletionHead,
  type CompletionUsage,
} from './openai-completion.js';
import { openAIErrorReply } from './openai-errors.js';
import { modelIds, modelObject, resolveModel, type OpenAIModel } from './openai-models.js';
import { parseCompletionRequest, type CompletionRequest } from './openai-request.js';
import {
  beginAgentStream,
  beginFrontDoorStream,
  outcomeOf,
  writeCompletionStream,
  type CompletionSource,
  type FrontDoor,
} from './openai-stream.js';
import { callerOf } from './routes.js';
import type { ServerMetrics } from './server-metrics.js';
import { sseHeaders, whileOpen, type OpenStreams } from './sse.js';
import { takeStreamSlot, type StreamSlots } from './stream-slots.js';

export type { FrontDoor } from './openai-stream.js';

/** What the OpenAI routes need of the server. */
export interface OpenAIRouteDeps {
  readonly runtime: Runtime;
  /** The front door served as the model `axon`, or `null` for none. */
  readonly frontDoor: FrontDoor | null;
  readonly logger: Logger;
  /** Whether the server drains: completions are refused (503). */
  readonly draining: () => boolean;
  readonly streams: OpenStreams;
  readonly slots: StreamSlots;
  readonly metrics: ServerMetrics;
  /** `: keep-alive` interval of a streamed completion, ms. */
  readonly keepAliveMs: number;
  /** A Fastify error (a body too large, malformed JSON) as the server's error it is. */
  readonly mapError: (err: unknown) => unknown;
  /** Reads on a body the request was refused before reading (see `unread-body.ts`). */
  readonly keepReading: (req: FastifyRequest, reply: FastifyReply) => void;
}

/** The header naming the step that answered a completion. */
export const STEP_HEADER = 'x-axon-step-id';

/** What a non-streamed completion answered, and the step that answered it. */
interface Answered {
  readonly stepId: string | null;
  readonly content: string;
  readonly usage: CompletionUsage;
}

/** Registers the routes of the module on `app`, in a context of their own (see the module). */
export function registerOpenAIRoutes(app: FastifyInstance, deps: OpenAIRouteDeps): void {
  const { runtime, frontDoor } = deps;
  const started = Math.floor(runtime.system.clock.now() / 1_000);

  void app.register((api, _opts, done) => {
    api.setErrorHandler((err, req, reply) => {
      const correlationId = String(reply.getHeader('x-correlation-id') ?? randomUUID());
      const { status, body, retryAfterS } = openAIErrorReply(deps.mapError(err), correlationId);
      if (status >= 500 && status !== 501 && status !== 503) {
        deps.logger.error({ err, correlation_id: correlationId, url: req.url }, 'request failed');
      }
      if (retryAfterS !== null) void reply.header('retry-after', String(retryAfterS));
      deps.keepReading(req, reply);
      void reply.header('x-correlation-id', correlationId).code(status).send(body);
    });

    api.get('/v1/models', () => ({
      object: 'list',
      data: modelIds(runtime, frontDoor !== null).map((id) => modelObject(id, started)),
    }));

    api.get('/v1/models/:model', (req) => {
      const { model = '' } = req.params as Record<string, string>;
      return modelObject(resolveModel(runtime, frontDoor !== null, model).id, started);
    });

    api.post('/v1/chat/completions', async (req, reply) => {
      if (deps.draining()) {
        throw new HttpError(503, 'POOL_UNAVAILABLE', 'the server is shutting down');
      }
      const request = parseCompletionRequest(req.body);
      const model = resolveModel(runtime, frontDoor !== null, request.model);
      const correlationId = String(reply.getHeader('x-correlation-id'));
      const caller = callerOf(req);
      const open = whileOpen(reply.raw);
      const context: CreateContextOptions = {
        name: 'openai',
        userId: caller.userId,
        signal: open.signal,
        metadata: {
          correlation_id: correlationId,
          ...(request.seed === null ? {} : { [RUN_SEED_KEY]: request.seed }),
        },
      };
      const head = (stepId: string | null): CompletionHead => ({
        id: completionId(stepId ?? randomUUID().replaceAll('-', '')),
        created: Math.floor(runtime.system.clock.now() / 1_000),
        model: model.id,
      });
      if (request.stream) {
        try {
          await stream(reply, { request, model, context, caller, head, open });
        } finally {
          open.stop();
        }
        return reply;
      }
      try {
        const { stepId, content, usage } = await answer(request, model, context, reply);
        if (stepId !== null) void reply.header(STEP_HEADER, stepId);
        return chatCompletion(head(stepId), content, usage);
      } finally {
        open.stop();
      }
    });
    done();
  });

  /** A completion answered whole: the agent invoked, or the front door's response. */
  async function answer(
    request: CompletionRequest,
    model: OpenAIModel,
    context: CreateContextOptions,
    reply: FastifyReply,
  ): Promise<Answered> {
    if (model.kind === 'front_door') {
      const handled = await (frontDoor as FrontDoor).handle(request.message, {
        context,
        history: request.history,
      });
      const { result } = handled;
      return {
        stepId: result?.stepId ?? null,
        content: handled.response.text,
        usage: result ? completionUsage(result.usage) : NO_USAGE,
      };
    }
    const ctx = runtime.createContext(context);
    try {
      const result = await runtime.invoke(model.agent, inputOf(request), ctx);
      const outcome = outcomeOf(result);
      if (outcome.kind === 'failed') {
        // The step that failed is named, to find it in the trace UI.
        void reply.header(STEP_HEADER, result.stepId);
        throw outcome.error;
      }
      return { stepId: result.stepId, content: outcome.text, usage: outcome.usage };
    } finally {
      ctx.dispose();
    }
  }

  /** A streamed completion: begun (a refusal is still the request's status), then written. */
  async function stream(
    reply: FastifyReply,
    s: {
      readonly request: CompletionRequest;
      readonly model: OpenAIModel;
      readonly context: CreateContextOptions;
      readonly caller: Caller;
      readonly head: (stepId: string | null) => CompletionHead;
      readonly open: { readonly signal: AbortSignal };
    },
  ): Promise<void> {
    const free = takeStreamSlot(deps, s.caller);
    const ctx = s.model.kind === 'agent' ? runtime.createContext(s.context) : null;
    try {
      let source: CompletionSource;
      if (s.model.kind === 'agent' && ctx !== null) {
        source = await beginAgentStream(runtime, s.model.agent, inputOf(s.request), ctx);
      } else {
        source = await beginFrontDoorStream(frontDoor as FrontDoor, s.request.message, {
          context: s.context,
          history: s.request.history,
        });
      }
      const correlationId = String(reply.getHeader('x-correlation-id'));
      const { stepId } = source;
      // Written to the socket directly, a frame as each piece comes: Fastify lets go.
      reply.hijack();
      const ended = writeCompletionStream(reply.raw, source, {
        head: s.head(stepId),
        includeUsage: s.request.includeUsage,
        headers: sseHeaders({
          'x-correlation-id': correlationId,
          ...(stepId === null ? {} : { [STEP_HEADER]: stepId }),
        }),
        closed: s.open.signal,
        keepAliveMs: deps.keepAliveMs,
        correlationId,
        logger: deps.logger,
      });
      deps.streams.add(reply.raw, ended);
      await ended;
    } finally {
      ctx?.dispose();
      free();
    }
  }
}

/** An agent's input of a request: the last message, and the ones before it as history. */
function inputOf(request: CompletionRequest): AgentInput {
  return {
    message: request.message,
    ...(request.history.length === 0 ? {} : { history: request.history }),
  };
}
