/**
 * @module Middleware of the front door: functions at five stages of `handle`, ordered by
 * priority, each able to rewrite the value passing through or to end the request with a
 * response. A middleware that throws sends the request to the `on_error` stage; it never
 * escapes `handle`.
 */
import type { AgentResult } from '../actors/agent-result.js';
import type { ExecContext } from '../context/exec-context.js';
import type { Response } from './responder.js';
import type { RouteResult } from './route-result.js';

/** The stages, in the order `handle` reaches them. */
export const MIDDLEWARE_STAGES = [
  'before_route',
  'before_invoke',
  'after_invoke',
  'before_respond',
  'on_error',
] as const;

/** One of {@link MIDDLEWARE_STAGES}. */
export type MiddlewareStage = (typeof MIDDLEWARE_STAGES)[number];

/** What passes through each stage, and what a middleware there may return in its place. */
export interface StageValues {
  /** The message, before it is classified. */
  readonly before_route: { readonly message: string };
  /** The message and the route chosen, before the handler is invoked. */
  readonly before_invoke: { readonly message: string; readonly route: RouteResult };
  /** The handler's result. */
  readonly after_invoke: { readonly message: string; readonly result: AgentResult };
  /** The formatted response, before it is returned. */
  readonly before_respond: { readonly response: Response };
  /** What failed, and at which stage. */
  readonly on_error: { readonly error: unknown; readonly stage: string };
}

const RESPOND = Symbol.for('axon.middlewareRespond');

/** Returned by a middleware to end the request with `response`. */
export interface EndWith {
  readonly [RESPOND]: true;
  readonly response: Response;
}

/** Ends the request with `response` (from any stage). */
export function respondWith(response: Response): EndWith {
  return { [RESPOND]: true, response };
}

/** True for what {@link respondWith} returns. */
export function isEndWith(value: unknown): value is EndWith {
  return typeof value === 'object' && value !== null && RESPOND in value;
}

/** A middleware of stage `TStage`. */
export interface Middleware<TStage extends MiddlewareStage = MiddlewareStage> {
  readonly name: string;
  readonly stage: TStage;
  /** Lower runs first; default 100. Equal priorities run in the order added. */
  readonly priority?: number;
  /**
   * Returns a new value to rewrite it, `undefined` to pass it on as it is, or
   * {@link respondWith} to end the request. May be async.
   */
  run(
    value: StageValues[TStage],
    ctx: ExecContext,
  ): MiddlewareReturn<TStage> | Promise<MiddlewareReturn<TStage>>;
}

/**
 * What a middleware returns: a new value, an end, or nothing to pass the value on. `void` is
 * in the union so that a block-bodied `run` returning nothing type-checks: with a promise in
 * the return type TypeScript does not read such a function as returning `undefined`.
 */
export type MiddlewareReturn<TStage extends MiddlewareStage> =
  | StageValues[TStage]
  | EndWith
  | undefined
  // eslint-disable-next-line @typescript-eslint/no-invalid-void-type
  | void;

/** Declares a middleware (typed by its stage). */
export function defineMiddleware<TStage extends MiddlewareStage>(
  middleware: Middleware<TStage>,
): Middleware<TStage> {
  if (typeof middleware.name !== 'string' || middleware.name === '') {
    throw new TypeError('defineMiddleware: name must be a non-empty string');
  }
  if (!(MIDDLEWARE_STAGES as readonly string[]).includes(middleware.stage)) {
    throw new TypeError(
      `defineMiddleware: stage of "${middleware.name}" must be one of ${MIDDLEWARE_STAGES.join(', ')}`,
    );
  }
  if (typeof middleware.run !== 'function') {
    throw new TypeError(`defineMiddleware: run of "${middleware.name}" must be a function`);
  }
  const priority = middleware.priority ?? 100;
  if (!Number.isFinite(priority)) {
    throw new RangeError(
      `defineMiddleware: priority of "${middleware.name}" must be a finite number`,
    );
  }
  return middleware;
}
