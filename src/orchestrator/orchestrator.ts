/**
 * @module The front door (seed 000's request flow): a message comes in, is admitted by the
 * policy, recalled against memory, routed, invoked on the runtime's actors, stored in memory
 * and formatted for its channel — with middleware at five stages and a span per stage.
 */
import {
  context as otelContext,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
} from '@opentelemetry/api';
import type { AgentInput, AgentResult } from '../actors/agent-result.js';
import type { ExecContext } from '../context/exec-context.js';
import { toAxonError } from '../errors/to-error-payload.js';
import type { MemoryContext } from '../memory/memory-types.js';
import type { Runtime } from '../runtime/runtime.js';
import type { StreamItem } from '../streams/events.js';
import { defineMiddleware, type Middleware } from './middleware.js';
import {
  checkRequest,
  openRequest,
  type HandleOptions,
  type Request,
} from './front-door-request.js';

export { RUN_CONTEXT_KEYS, type HandleOptions } from './front-door-request.js';
import { failedRequest, historyOf, textForMemory, unroutable } from './front-door-results.js';
import { MiddlewarePipeline, MiddlewareFailure } from './middleware-pipeline.js';
import { RegistryFeed } from './registry-feed.js';
import { TokenFeed } from './token-feed.js';
import { createPassthroughResponder } from './passthrough-responder.js';
import type { Registry } from './registry.js';
import {
  DEFAULT_CHANNEL,
  type Channel,
  type Responder,
  type Response,
  type ResponseChunk,
} from './responder.js';
import { UNKNOWN_INTENT, type RouteResult, type Router } from './route-result.js';
import { chunksOfText } from './stream-chunks.js';

/** Options of {@link createOrchestrator}. */
export interface OrchestratorOptions {
  /** Where handlers run. */
  readonly runtime: Runtime;
  /** Picks the handler of each message. */
  readonly router: Router;
  /** Formats results; default the passthrough responder. */
  readonly responder?: Responder;
  /**
   * Kept current with the runtime's agents and the outcome of each call (statistics, and
   * health from the agent's circuit breaker); default none.
   */
  readonly registry?: Registry;
  /** Middleware, in any order (each runs at its stage by priority). */
  readonly middleware?: readonly Middleware[];
  /**
   * Whether to recall the conversation from the runtime's memory before routing and store
   * the exchange after; default `true`.
   */
  readonly memory?: boolean;
}

/** What `handle` answers. */
export interface Handled {
  /** The formatted response (from the responder, or from a middleware that ended the request). */
  readonly response: Response;
  /** The route taken, or `null` when the request ended before routing. */
  readonly route: RouteResult | null;
  /** The handler's result, or `null` when nothing was invoked. */
  readonly result: AgentResult | null;
  /** What memory recalled for the message, or `null`. */
  readonly recalled: MemoryContext | null;
  /** The error that sent the request to `on_error`, or `null`. */
  readonly error: unknown;
  /**
   * What went wrong with memory, if anything (a recall or store that failed, a context
   * without the user or session its memory scope needs): the request went on without it.
   */
  readonly memoryErrors: readonly unknown[];
  /** The stages that ran, in order, with their durations and what they found. */
  readonly stages: readonly StageTiming[];
}

/** A request's outcome but its response, as it builds up. */
type RequestSoFar = { -readonly [K in Exclude<keyof Handled, 'response'>]: Handled[K] } & {
  readonly memoryErrors: unknown[];
  readonly stages: StageTiming[];
};

/** One stage of a request, timed (the same as its span). */
export interface StageTiming {
  /** `memory.recall`, `router.classify`, `runtime.invoke`, `memory.store`, `responder.format`. */
  readonly name: string;
  /** When it began, in ms since the epoch (with fractions). */
  readonly startedAt: number;
  readonly durationMs: number;
  /** Its span's attributes (`axon.route.intent`, `gen_ai.agent.name`, …). */
  readonly attributes: Readonly<Record<string, string | number>>;
}

/** The front door over a runtime; see the module. */
export class Orchestrator {
  readonly runtime: Runtime;
  readonly router: Router;
  readonly responder: Responder;
  readonly registry: Registry | null;
  readonly #pipeline = new MiddlewarePipeline();
  readonly #memory: boolean;
  readonly #feed: RegistryFeed | null;

  constructor(options: OrchestratorOptions) {
    if (!(options as Partial<OrchestratorOptions> | null)?.runtime) {
      throw new TypeError('createOrchestrator: runtime is required');
    }
    if (typeof (options.router as Partial<Router> | undefined)?.classify !== 'function') {
      throw new TypeError('createOrchestrator: router must have classify(message, ctx)');
    }
    if (options.responder !== undefined && typeof options.responder.format !== 'function') {
      throw new TypeError('createOrchestrator: responder must have format(result, channel, ctx)');
    }
    if (options.memory !== undefined && typeof options.memory !== 'boolean') {
      throw new TypeError('createOrchestrator: memory must be a boolean');
    }
    this.runtime = options.runtime;
    this.router = options.router;
    this.responder = options.responder ?? createPassthroughResponder();
    this.registry = options.registry ?? null;
    this.#feed = this.registry ? new RegistryFeed(this.registry, this.runtime) : null;
    this.#memory = options.memory ?? true;
    for (const m of options.middleware ?? []) this.use(m);
  }

  /** Adds a middleware (checked as {@link defineMiddleware} checks it). */
  use(middleware: Middleware): this {
    this.#pipeline.add(defineMiddleware(middleware));
    return this;
  }

  /**
   * Handles one message: policy (`route`) → memory recall → `before_route` → classify →
   * `before_invoke` → invoke (the runtime checks `invoke_agent`) → `after_invoke` → memory
   * store → format → `before_respond`. Never rejects: whatever fails goes to `on_error`,
   * whose middleware may answer; otherwise the failure is formatted as an error result.
   *
   * @example
   * const door = createOrchestrator({ runtime, router: createRuleRouter({ rules: [{ pattern: /trip/, handler: 'planner' }] }) });
   * const { response } = await door.handle('Plan a trip to Berlin');
   */
  async handle(message: string, options: HandleOptions = {}): Promise<Handled> {
    checkRequest(message, options);
    const channel = options.channel ?? DEFAULT_CHANNEL;
    const request = await openRequest(this.runtime, 'orchestrator.handle', options);
    const { span } = request;
    try {
      const handled = await this.#handle(message, request, channel, null, options);
      span.setAttribute('axon.route.intent', handled.route?.intent ?? UNKNOWN_INTENT);
      if (handled.error !== null) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: toAxonError(handled.error).message });
      }
      return handled;
    } finally {
      request.release();
      span.end();
    }
  }

  /**
   * Like {@link handle}, streamed: text chunks as the handler's tokens arrive (pulled as the
   * consumer reads, so a slow consumer holds the handler back), then a final chunk carrying
   * the formatted response. Stopping the iteration early cancels the invocation.
   */
  async *stream(message: string, options: HandleOptions = {}): AsyncGenerator<ResponseChunk> {
    checkRequest(message, options);
    const channel = options.channel ?? DEFAULT_CHANNEL;
    const request = await openRequest(this.runtime, 'orchestrator.stream', options);
    const { ctx, span } = request;
    const tokens = new TokenFeed();
    const handled = this.#handle(message, request, channel, tokens, options).finally(() => {
      tokens.end();
    });
    // The outcome is read by the final chunk; a rejection must not go unhandled meanwhile.
    handled.catch(() => undefined);
    const chunks = chunksOfText(tokens, channel, async () => (await handled).response);
    try {
      yield* chunks;
    } finally {
      tokens.end();
      ctx.cancel(new Error('stream consumer stopped'));
      await handled.catch(() => undefined);
      request.release();
      span.end();
    }
  }

  /** Invokes handlers in order, each output the next one's message; stops at the first failure. */
  invokeChain(
    handlers: readonly string[],
    message: string,
    ctx: ExecContext = this.runtime.createContext(),
  ): Promise<AgentResult> {
    return this.runtime.invokeChain(handlers, message, ctx);
  }

  async #handle(
    message: string,
    request: Request,
    channel: Channel,
    tokens: TokenFeed | null,
    { onEvent, history }: HandleOptions,
  ): Promise<Handled> {
    const { ctx } = request;
    // What the request has so far: every way out of it answers with this.
    const so: RequestSoFar = {
      route: null,
      result: null,
      recalled: null,
      error: null,
      memoryErrors: [],
      stages: [],
    };
    const { stages, memoryErrors } = so;
    // The stages' spans are children of the request's.
    const parent = ctx.span ? trace.setSpan(otelContext.active(), ctx.span) : otelContext.active();
    const ended = (response: Response): Handled => ({ ...so, response });
    let stage = 'run';
    try {
      if (request.refused !== null) throw request.refused;
      stage = 'route';
      await this.runtime.admitRequest('orchestrator', ctx);
      stage = 'memory.recall';
      if (this.#memory) {
        so.recalled = await this.#span('memory.recall', parent, stages, () =>
          this.runtime.memory.recall(message, ctx),
        ).catch((err: unknown) => {
          // Memory helps an answer; it does not stop one.
          memoryErrors.push(err);
          ctx.logger.warn({ err }, 'front door: memory recall failed; going on without it');
          return null;
        });
      }
      stage = 'before_route';
      const routed = await this.#pipeline.run('before_route', { message }, ctx);
      if (routed.ended) return ended(routed.end.response);
      message = routed.value.message;
      stage = 'router.classify';
      await this.#feed?.sync();
      const classified = await this.#span('router.classify', parent, stages, async (note) => {
        const r = await this.router.classify(message, ctx);
        note('axon.route.intent', r.intent);
        note('axon.route.confidence', r.confidence);
        note('axon.route.scores', JSON.stringify(r.rawScores));
        return r;
      });
      so.route = classified;
      stage = 'before_invoke';
      const invoking = await this.#pipeline.run(
        'before_invoke',
        { message, route: classified },
        ctx,
      );
      if (invoking.ended) return ended(invoking.end.response);
      message = invoking.value.message;
      const route = (so.route = invoking.value.route);
      const handler = route.bestHandler;
      let result: AgentResult;
      if (handler === null) {
        result = unroutable(message, ctx);
      } else {
        stage = 'runtime.invoke';
        // The caller's conversation, when it holds one, else what memory recalled.
        const input: AgentInput = { message, history: history ?? historyOf(so.recalled) };
        result = await this.#span('runtime.invoke', parent, stages, async (note, span) => {
          note('gen_ai.agent.name', handler);
          // The invocation's steps nest under this stage's span.
          const r =
            tokens || onEvent
              ? await this.#invokeStreaming(handler, input, ctx, span, tokens, onEvent)
              : await this.runtime.invoke(handler, input, ctx, { parentSpan: span });
          await this.#feed?.record(handler, r);
          return r;
        });
      }
      so.result = result;
      stage = 'after_invoke';
      const after = await this.#pipeline.run('after_invoke', { message, result }, ctx);
      if (after.ended) return ended(after.end.response);
      const answer = (so.result = after.value.result);
      if (this.#memory && handler !== null) {
        stage = 'memory.store';
        await this.#span('memory.store', parent, stages, async () => {
          await this.runtime.memory.store({ content: message, role: 'user' }, ctx);
          await this.runtime.memory.store(
            { content: textForMemory(answer), role: 'assistant' },
            ctx,
          );
        }).catch((err: unknown) => {
          memoryErrors.push(err);
          ctx.logger.warn({ err }, 'front door: the exchange could not be stored in memory');
        });
      }
      stage = 'responder.format';
      const formatted = await this.#span('responder.format', parent, stages, () =>
        this.responder.format(answer, channel, ctx),
      );
      stage = 'before_respond';
      const responding = await this.#pipeline.run('before_respond', { response: formatted }, ctx);
      return ended(responding.ended ? responding.end.response : responding.value.response);
    } catch (error) {
      so.error = error;
      const at = error instanceof MiddlewareFailure ? error.stage : stage;
      return { ...so, response: await this.#failed(error, at, ctx, so.route, channel) };
    }
  }

  /** The `on_error` stage: its middleware may answer; else the error formatted as a result. */
  async #failed(
    error: unknown,
    stage: string,
    ctx: ExecContext,
    route: RouteResult | null,
    channel: Channel,
  ): Promise<Response> {
    try {
      const handled = await this.#pipeline.run('on_error', { error, stage }, ctx);
      if (handled.ended) return handled.end.response;
    } catch (err) {
      ctx.logger.error({ err, stage }, 'an on_error middleware threw');
    }
    try {
      return await this.responder.format(
        failedRequest(error, ctx, route?.bestHandler ?? null),
        channel,
        ctx,
      );
    } catch (err) {
      ctx.logger.error({ err }, 'the responder failed to format an error');
      const text = `error: ${toAxonError(error).message}`;
      return { text, channel: channel.name, media: [], metadata: { stage } };
    }
  }

  /** Invokes with the root step's tokens fed to `tokens` as they arrive. */
  async #invokeStreaming(
    handler: string,
    input: AgentInput,
    ctx: ExecContext,
    parentSpan: Span,
    tokens: TokenFeed | null,
    onEvent: ((item: StreamItem) => void) | undefined,
  ): Promise<AgentResult> {
    const run = this.runtime.stream(handler, input, ctx, { parentSpan });
    let root: string | null = null;
    for await (const item of run) {
      const ev = item.event;
      root ??= ev.step_id;
      if (onEvent) {
        try {
          onEvent(item);
        } catch (err) {
          // An observer's failure is its own: the request goes on.
          ctx.logger.warn({ err }, 'front door: an onEvent observer threw');
        }
      }
      if (tokens && ev.type === 'token' && ev.step_id === root) await tokens.push(ev.t);
    }
    return run.result;
  }

  /**
   * Runs `fn` in a span named `name`, a child of `parent`, and times it in `stages`;
   * `fn` notes what it finds with `note`, on the span and in the timing.
   */
  async #span<T>(
    name: string,
    parent: Context,
    stages: StageTiming[],
    fn: (note: (key: string, value: string | number) => void, span: Span) => Promise<T>,
  ): Promise<T> {
    const span = this.runtime.tracer.startSpan(name, {}, parent);
    const attributes: Record<string, string | number> = {};
    const note = (key: string, value: string | number): void => {
      attributes[key] = value;
      span.setAttribute(key, value);
    };
    const started = performance.now();
    try {
      return await fn(note, span);
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: toAxonError(err).message });
      throw err;
    } finally {
      span.end();
      stages.push({
        name,
        startedAt: performance.timeOrigin + started,
        durationMs: performance.now() - started,
        attributes,
      });
    }
  }
}

/** A front door over `options.runtime`; see {@link Orchestrator}. */
export function createOrchestrator(options: OrchestratorOptions): Orchestrator {
  return new Orchestrator(options);
}
