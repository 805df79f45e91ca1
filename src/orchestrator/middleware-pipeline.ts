/**
 * @module Runs the middleware of one stage in priority order: each sees the value the one
 * before it left, may rewrite it or end the request with a response.
 */
import type { ExecContext } from '../context/exec-context.js';
import {
  isEndWith,
  type EndWith,
  type Middleware,
  type MiddlewareReturn,
  type MiddlewareStage,
  type StageValues,
} from './middleware.js';

/** What a stage ends with: the value to go on with, or a response that ends the request. */
export type StageOutcome<TStage extends MiddlewareStage> =
  | { readonly ended: false; readonly value: StageValues[TStage] }
  | { readonly ended: true; readonly end: EndWith };

/** Middleware by stage, ordered by priority then the order added. */
export class MiddlewarePipeline {
  readonly #byStage = new Map<MiddlewareStage, Middleware[]>();
  #added = 0;
  readonly #order = new WeakMap<Middleware, number>();

  /** Adds `middleware` to its stage. */
  add(middleware: Middleware): void {
    this.#order.set(middleware, this.#added++);
    const list = this.#byStage.get(middleware.stage) ?? [];
    list.push(middleware);
    list.sort(
      (a, b) =>
        (a.priority ?? 100) - (b.priority ?? 100) ||
        (this.#order.get(a) ?? 0) - (this.#order.get(b) ?? 0),
    );
    this.#byStage.set(middleware.stage, list);
  }

  /**
   * Runs `stage` on `value`. A middleware that throws rejects with a {@link MiddlewareFailure}
   * naming it; the caller sends that to `on_error`.
   */
  run<TStage extends MiddlewareStage>(
    stage: TStage,
    value: StageValues[TStage],
    ctx: ExecContext,
  ): StageOutcome<TStage> | Promise<StageOutcome<TStage>> {
    const list = this.#byStage.get(stage) as Middleware<TStage>[] | undefined;
    // A stage nobody listens on costs the request nothing.
    if (list === undefined) return { ended: false, value };
    return runStage(list, stage, value, ctx);
  }
}

async function runStage<TStage extends MiddlewareStage>(
  list: readonly Middleware<TStage>[],
  stage: TStage,
  value: StageValues[TStage],
  ctx: ExecContext,
): Promise<StageOutcome<TStage>> {
  let current = value;
  for (const m of list) {
    let out: MiddlewareReturn<TStage>;
    try {
      out = await m.run(current, ctx);
    } catch (error) {
      throw new MiddlewareFailure(m.name, stage, error);
    }
    if (isEndWith(out)) return { ended: true, end: out };
    if (out !== undefined) current = out;
  }
  return { ended: false, value: current };
}

/** A middleware threw: which, at which stage, and what. */
export class MiddlewareFailure extends Error {
  readonly middleware: string;
  readonly stage: MiddlewareStage;

  constructor(middleware: string, stage: MiddlewareStage, cause: unknown) {
    super(
      `middleware "${middleware}" (${stage}) threw: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
    this.name = 'MiddlewareFailure';
    this.middleware = middleware;
    this.stage = stage;
  }
}
