/**
 * @module The hybrid router (Nerva's `HybridRouter`): an embedding router pre-filters the
 * handlers (top 10), a model chooses among those only, the result keeps the best 5; when
 * the model gives no usable choice, the embedding's candidates are the result.
 */
import type { ExecContext } from '../context/exec-context.js';
import { isAxonError } from '../errors/axon-error.js';
import type { ErrorCode } from '../errors/error-code.js';
import { checkLlmRouterOptions, createLlmRouter, type LlmRouterOptions } from './llm-router.js';
import {
  routeResult,
  type HandlerDescription,
  type RouteCandidate,
  type RouteResult,
  type Router,
} from './route-result.js';

/** Options of {@link createHybridRouter}. */
export interface HybridRouterOptions {
  /**
   * The pre-filter: its result's handlers are the candidates the model chooses among.
   * Build it with `createEmbeddingRouter({ handlers, topK: HYBRID_PREFILTER_TOP_K })`.
   */
  readonly embedding: Router;
  /**
   * The rerank: {@link createLlmRouter}'s options. Its `handlers` give the candidates'
   * descriptions (usually the same source as the embedding router's); the router restricts
   * it to the pre-filter's candidates itself, so `candidates` is not an option here.
   */
  readonly llm: Omit<LlmRouterOptions, 'candidates'>;
  /** The most candidates a result has, a whole number >= 1; default 5. */
  readonly topK?: number;
}

/** Nerva's pre-filter size: build the embedding router with this `topK`. */
export const HYBRID_PREFILTER_TOP_K = 10;
/** Nerva's result size. */
export const HYBRID_DEFAULT_TOP_K = 5;

/**
 * Errors of the model's call that the hybrid router passes on instead of falling back: the
 * caller's policy, budget, cancellation and replay must hold for routing too.
 */
export const HYBRID_PROPAGATED_CODES: readonly ErrorCode[] = [
  'POLICY_DENIED',
  'BUDGET_EXCEEDED',
  'CANCELLED',
  'REPLAY_MISMATCH',
];

/**
 * A router that asks a model to choose among an embedding router's candidates. The
 * model's choice comes first, at the model's confidence; the other candidates follow in
 * the embedding's order, each at its similarity × half that confidence (so always below
 * the choice). `rawScores` are the embedding's (every handler's similarity).
 *
 * It falls back to the embedding's candidates (top `topK`, their reasons saying why) when
 * the model answers `unknown`, answers invalidly twice, chooses at confidence 0, or its
 * call fails — except for the errors of {@link HYBRID_PROPAGATED_CODES} and a cancelled
 * context, which reject. When the pre-filter passes nothing the model is not asked and the
 * result is `unknown`. Errors of the embedding router reject.
 *
 * @example
 * const handlers = registryHandlers(registry);
 * const router = createHybridRouter({
 *   embedding: createEmbeddingRouter({ handlers, topK: HYBRID_PREFILTER_TOP_K }),
 *   llm: { handlers, chat: runtime.chat.bind(runtime) },
 * });
 */
export function createHybridRouter(options: HybridRouterOptions): Router {
  if (typeof options !== 'object' || (options as unknown) === null) {
    throw new TypeError('createHybridRouter: options must be an object');
  }
  const embedding = options.embedding as Router | null | undefined;
  if (typeof embedding !== 'object' || embedding === null) {
    throw new TypeError('createHybridRouter: options.embedding must be a Router');
  }
  if (typeof embedding.classify !== 'function') {
    throw new TypeError('createHybridRouter: options.embedding must be a Router');
  }
  const llm = options.llm;
  checkLlmRouterOptions(llm, 'createHybridRouter: options.llm');
  if ((llm as LlmRouterOptions).candidates !== undefined) {
    throw new TypeError(
      'createHybridRouter: options.llm.candidates is not an option: the embedding router gives them',
    );
  }
  const topK = options.topK ?? HYBRID_DEFAULT_TOP_K;
  if (!(Number.isInteger(topK) && topK >= 1)) {
    throw new RangeError(
      `createHybridRouter: options.topK must be a whole number >= 1, got ${String(topK)}`,
    );
  }

  const classify = async (message: string, ctx: ExecContext): Promise<RouteResult> => {
    if (typeof message !== 'string') throw new TypeError('classify: message must be a string');
    const pre = await embedding.classify(message, ctx);
    if (pre.handlers.length === 0) return routeResult([], pre.rawScores, topK);
    const fallback = (why: string): RouteResult =>
      routeResult(
        pre.handlers.map((c) => ({ ...c, reason: `${c.reason} (fallback: ${why})` })),
        pre.rawScores,
        topK,
      );

    const described = new Map<string, HandlerDescription>();
    for (const h of await llm.handlers.handlers(ctx)) {
      if (!described.has(h.name)) described.set(h.name, h);
    }
    const offered = pre.handlers.flatMap((c) => described.get(c.name) ?? []);
    if (offered.length === 0) return fallback('no candidate has a description for the model');

    let chosen: RouteResult;
    try {
      // The model may choose among the pre-filter's candidates only.
      const rerank = createLlmRouter({ ...llm, candidates: () => Promise.resolve(offered) });
      chosen = await rerank.classify(message, ctx);
    } catch (err) {
      if (ctx.isCancelled() || (isAxonError(err) && HYBRID_PROPAGATED_CODES.includes(err.code))) {
        throw err;
      }
      const code = isAxonError(err) ? err.code : 'INTERNAL';
      return fallback(`the model's call failed (${code})`);
    }
    const best = chosen.handlers[0];
    if (!best) {
      // The LLM router leaves rawScores empty for an answer that was invalid twice.
      return fallback(
        Object.keys(chosen.rawScores).length === 0
          ? "the model's answer was not valid"
          : 'the model chose no handler',
      );
    }
    if (best.score === 0) return fallback(`the model chose ${best.name} at confidence 0`);
    const candidates: RouteCandidate[] = [
      { name: best.name, score: best.score, reason: `chosen by the model: ${best.reason}` },
    ];
    for (const c of pre.handlers) {
      if (c.name === best.name) continue;
      candidates.push({
        name: c.name,
        score: (c.score * best.score) / 2,
        reason: `${c.reason}, not the model's choice`,
      });
    }
    return routeResult(candidates, pre.rawScores, topK);
  };

  return { name: 'hybrid', classify };
}
