/**
 * @module `axon/contrib/nestjs` (also `axon/nestjs`): a NestJS module, `AxonModule.forRoot`,
 * that gives Nest's injector the runtime (`AXON_RUNTIME`), and the parameter decorators
 * `@AxonCtx()` and `@AxonReq()` that give a route handler the request's `ExecContext`, built by
 * the bridges' core (`request-context.ts`) on Nest's Express and Fastify platforms alike.
 * Nest stays an optional peer: only this file imports `@nestjs/common`, and it uses neither
 * decorator syntax nor emitted metadata itself.
 */
import { ServerResponse, type IncomingHttpHeaders } from 'node:http';
import {
  createParamDecorator,
  HttpException,
  Inject,
  Injectable,
  Optional,
  UseInterceptors,
  type CallHandler,
  type DynamicModule,
  type ExecutionContext,
  type HttpArgumentsHost,
  type NestInterceptor,
} from '@nestjs/common';
import type { ExecContext } from '../../context/exec-context.js';
import type { Runtime } from '../../runtime/runtime.js';
import { disconnectSignal, refusal } from './bridge-support.js';
import {
  CORRELATION_HEADER,
  correlationIdOf,
  createRequestContexts,
  headerLookup,
  type AxonRequest,
  type RequestContextOptions,
  type RequestContexts,
} from './request-context.js';

export type { AxonRequest, Identity, ContextExtras } from './request-context.js';

/**
 * The injection token of the runtime given to {@link AxonModule.forRoot}:
 * `constructor(@Inject(AXON_RUNTIME) private readonly runtime: Runtime) {}`.
 */
export const AXON_RUNTIME: unique symbol = Symbol('AXON_RUNTIME');

// What the module hands its interceptor: the checked options, made into one function.
const AXON_BRIDGE = Symbol('AXON_BRIDGE');

/**
 * A Nest HTTP route's request as the module reads it: Express's `Request` on
 * `@nestjs/platform-express`, Fastify's `FastifyRequest` on `@nestjs/platform-fastify`.
 */
export interface NestHttpRequest {
  readonly headers: IncomingHttpHeaders;
}

/**
 * Options of {@link AxonModule.forRoot}: the runtime, and the options of every bridge
 * (docs/bridges.md). `identify` and `contextOptions` get the platform's request — Express's
 * `Request` or Fastify's `FastifyRequest`; say which with the type parameter.
 */
export interface AxonModuleOptions<
  TRequest extends NestHttpRequest = NestHttpRequest,
> extends RequestContextOptions<TRequest> {
  /** The runtime the routes call, from `createRuntime(...)`; the app closes it, not Nest. */
  readonly runtime: Runtime;
}

// Every option `forRoot` reads: anything else is refused rather than ignored.
const OPTION_NAMES = {
  runtime: true,
  keys: true,
  anonymous: true,
  identify: true,
  timeoutHeader: true,
  maxTimeoutMs: true,
  defaultTimeoutMs: true,
  cancelOnDisconnect: true,
  contextOptions: true,
} as const satisfies Record<keyof AxonModuleOptions, true>;

/** What one `forRoot` gives the routes of its application. */
interface NestBridge {
  readonly runtime: Pick<Runtime, 'logger'>;
  readonly contexts: RequestContexts<NestHttpRequest>;
}

const WHERE = 'AxonModule.forRoot';

/**
 * The NestJS module of axon. `AxonModule.forRoot({ runtime, ... })` is a global module: every
 * module of the application can inject the runtime (`@Inject(AXON_RUNTIME)`) and use
 * `@AxonCtx()` on its routes.
 */
export class AxonModule {
  /**
   * The module for `imports`, over `options.runtime`. The caller's identity comes from
   * `keys` (API.md's `Authorization: Bearer`) or the app's own `identify`; a request that names
   * nobody is 401 unless `anonymous: 'allow'` says so by name, as with every bridge. Throws
   * `TypeError` / `RangeError` naming a bad option (without a runtime, with an option it does
   * not know, with neither `keys`, `identify` nor `anonymous: 'allow'`).
   *
   * Gotcha: Nest runs the module's work on the routes that ask for it (`@AxonCtx()`,
   * `@AxonReq()`) only — a route that asks for neither is neither refused nor given a context.
   *
   * @example
   * ```ts
   * const runtime = createRuntime({ agents: [planner] });
   * @Module({
   *   imports: [AxonModule.forRoot({ runtime, keys: [{ key: process.env.AXON_KEY!, user_id: 'web' }] })],
   *   controllers: [PlanController],
   * })
   * class AppModule {}
   * ```
   */
  static forRoot<TRequest extends NestHttpRequest = NestHttpRequest>(
    options: AxonModuleOptions<TRequest>,
  ): DynamicModule {
    // Checked as what a JavaScript caller may pass.
    const given: unknown = options;
    if (typeof given !== 'object' || given === null) {
      throw new TypeError(`${WHERE}: options must be { runtime, ... }, got ${shown(given)}`);
    }
    const unknown = Object.keys(options).filter((name) => !Object.hasOwn(OPTION_NAMES, name));
    if (unknown.length > 0) {
      const chat = unknown.includes('orchestrator')
        ? ' (the Nest module serves no chat routes: call orchestrator.handle(message, { ctx }) from a route, with the ctx of @AxonCtx())'
        : '';
      throw new TypeError(
        `${WHERE}: unknown option${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}${chat}`,
      );
    }
    const { runtime, ...rest } = options;
    if (!isRuntime(runtime)) {
      throw new TypeError(
        `${WHERE}: runtime must be an axon runtime (createRuntime(...)), got ${shown(runtime)}`,
      );
    }
    const contexts = createRequestContexts<TRequest>(runtime, rest, WHERE);
    const bridge: NestBridge = {
      runtime,
      // The request is the platform's; `TRequest` is what the app says it is.
      contexts: contexts as unknown as RequestContexts<NestHttpRequest>,
    };
    return {
      module: AxonModule,
      global: true,
      providers: [
        { provide: AXON_RUNTIME, useValue: runtime },
        { provide: AXON_BRIDGE, useValue: bridge },
      ],
      exports: [AXON_RUNTIME, AXON_BRIDGE],
    };
  }
}

function isRuntime(value: unknown): value is Runtime {
  const r = value as Partial<Record<'createContext' | 'invoke' | 'logger', unknown>> | null;
  return (
    typeof r === 'object' &&
    r !== null &&
    typeof r.createContext === 'function' &&
    typeof r.invoke === 'function' &&
    typeof r.logger === 'object' &&
    r.logger !== null
  );
}

function shown(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  return typeof value === 'object' ? 'an object that is not one' : typeof value;
}

/** The `AxonRequest` of each request the interceptor has seen, until the request is gone. */
const attached = new WeakMap<object, AxonRequest>();

const MISSING_MODULE =
  '@AxonCtx() / @AxonReq() is used on a route, but no AxonModule.forRoot({ runtime, ... }) is imported: add it to the imports of the application module';

/**
 * Builds the request's `AxonRequest` before the handler's parameters are read: bound by the
 * parameter decorators to each handler that uses one, so it runs after the route's guards
 * and interceptors of wider scope, and before its pipes. Made when the application starts,
 * which fails there when the module is missing.
 */
class AxonContextInterceptor implements NestInterceptor {
  readonly #bridge: NestBridge;

  constructor(bridge: NestBridge | undefined) {
    if (bridge === undefined) throw new TypeError(MISSING_MODULE);
    this.#bridge = bridge;
  }

  async intercept(
    context: ExecutionContext,
    next: CallHandler,
  ): Promise<ReturnType<CallHandler['handle']>> {
    const http = httpOf(context, '@AxonCtx()');
    const request = http.getRequest<NestHttpRequest>();
    // Once a request, however many of the decorators its handler has.
    if (!attached.has(request)) {
      attached.set(request, await attach(this.#bridge, request, http.getResponse<unknown>()));
    }
    return next.handle();
  }
}
Injectable()(AxonContextInterceptor);
Inject(AXON_BRIDGE)(AxonContextInterceptor, undefined, 0);
// Optional, so that a missing module is the constructor's error, which says what to do.
Optional()(AxonContextInterceptor, undefined, 0);

/** The request's `AxonRequest`, or an `HttpException` with API.md's body refusing it. */
async function attach(
  bridge: NestBridge,
  request: NestHttpRequest,
  response: unknown,
): Promise<AxonRequest> {
  const res = nodeResponse(response);
  const headers = headerLookup(request.headers);
  const correlationId = correlationIdOf(headers);
  // On the Node response, which both platforms' replies carry, whoever answers.
  res.setHeader(CORRELATION_HEADER, correlationId);
  try {
    return await bridge.contexts(request, {
      headers,
      correlationId,
      signal: disconnectSignal(res),
    });
  } catch (err) {
    const { status, body, retryAfterS } = refusal(err, correlationId, bridge.runtime.logger);
    if (retryAfterS !== null) res.setHeader('retry-after', String(retryAfterS));
    // Answered by Nest's exception layer: its default filter sends the body as it is.
    throw new HttpException(body, status, { cause: err });
  }
}

/** Express's response is a Node `ServerResponse`; Fastify's reply holds one as `raw`. */
function nodeResponse(response: unknown): ServerResponse {
  if (isServerResponse(response)) return response;
  const raw = (response as { raw?: unknown } | null)?.raw;
  if (isServerResponse(raw)) return raw;
  throw new TypeError(
    "@AxonCtx(): the route's response is neither Express's nor Fastify's (a Node ServerResponse, or a reply holding one as raw)",
  );
}

function isServerResponse(value: unknown): value is ServerResponse {
  return value instanceof ServerResponse;
}

function httpOf(context: ExecutionContext, decorator: string): HttpArgumentsHost {
  const type = context.getType();
  if (type !== 'http') {
    throw new TypeError(`${decorator} works on HTTP routes only, not on ${type} handlers`);
  }
  return context.switchToHttp();
}

function attachedTo(context: ExecutionContext, decorator: string): AxonRequest {
  const axon = attached.get(httpOf(context, decorator).getRequest<object>());
  if (axon === undefined) {
    // The decorators bind the interceptor themselves: this is a handler called some other way.
    throw new TypeError(`${decorator}: this request went through no AxonModule interceptor`);
  }
  return axon;
}

/** The handlers already given the interceptor (a handler may use both decorators). */
const intercepted = new WeakSet<object>();

/** Binds the interceptor to the handler a parameter decorator is put on. */
function interceptedBy(decorator: string): ParameterDecorator {
  return (target, key) => {
    const descriptor = key === undefined ? undefined : Object.getOwnPropertyDescriptor(target, key);
    const handler: unknown = descriptor?.value;
    if (key === undefined || descriptor === undefined || typeof handler !== 'function') {
      throw new TypeError(
        `${decorator} goes on a parameter of a route handler, not of a constructor or property`,
      );
    }
    if (intercepted.has(handler)) return;
    intercepted.add(handler);
    UseInterceptors(AxonContextInterceptor)(target, key, descriptor);
  };
}

const ctxParam = createParamDecorator<undefined, ExecContext>(
  (_data, context) => attachedTo(context, '@AxonCtx()').ctx,
  [interceptedBy('@AxonCtx()')],
);

const requestParam = createParamDecorator<undefined, AxonRequest>(
  (_data, context) => attachedTo(context, '@AxonReq()'),
  [interceptedBy('@AxonReq()')],
);

function noArguments(decorator: string, given: readonly unknown[]): void {
  if (given.length > 0) {
    throw new TypeError(`${decorator} takes no arguments, got ${given.length}`);
  }
}

/**
 * A route handler's parameter holding the request's `ExecContext`: the caller's identity,
 * the `X-Correlation-Id`, the deadline of `X-Request-Timeout-Ms`, the W3C trace id, and a
 * signal that cancels it when the client goes away — as every bridge makes it (docs/bridges.md).
 * A request the module refuses (401 naming nobody, 400 for a malformed deadline, what
 * `identify` throws) never reaches the handler: Nest answers the `HttpException` with API.md's
 * error body. Needs `AxonModule.forRoot(...)` in the application; without it the application
 * fails to start, saying so. Takes no arguments.
 *
 * @example
 * ```ts
 * @Controller('plan')
 * class PlanController {
 *   constructor(@Inject(AXON_RUNTIME) private readonly runtime: Runtime) {}
 *   @Post()
 *   async plan(@Body('q') q: string, @AxonCtx() ctx: ExecContext) {
 *     const result = await this.runtime.invoke('planner', q, ctx);
 *     return { status: result.status, output: result.output };
 *   }
 * }
 * ```
 */
export function AxonCtx(...none: readonly []): ParameterDecorator {
  noArguments('@AxonCtx()', none);
  return ctxParam();
}

/**
 * A route handler's parameter holding what the other bridges attach to a request:
 * `{ ctx, correlationId, caller, traceparent }` (`caller` with its permissions). As
 * {@link AxonCtx} otherwise; a handler may use both, and gets one context.
 */
export function AxonReq(...none: readonly []): ParameterDecorator {
  noArguments('@AxonReq()', none);
  return requestParam();
}
