/**
 * @module The router's contract (Nerva's `classify`, REFERENCE.md): what a router returns,
 * where it learns the handlers it routes between, and the one function every router builds
 * its result with, so that all of them order, clamp and break ties the same way.
 */
import type { ExecContext } from '../context/exec-context.js';

/** The intent of a message no handler passed for. */
export const UNKNOWN_INTENT = 'unknown';

/** A handler a router may pick: a registered agent, by name, with what it is for. */
export interface HandlerDescription {
  readonly name: string;
  readonly description: string;
}

/**
 * Where a router finds its handlers, asked at each `classify`: a handler registered since
 * the last call is routable at once. `registryHandlers(registry)` reads a Registry's
 * enabled, available agents.
 */
export interface HandlerSource {
  handlers(ctx: ExecContext): Promise<readonly HandlerDescription[]>;
}

/** One handler of a result, with its score in [0, 1] and why. */
export interface RouteCandidate {
  readonly name: string;
  readonly score: number;
  readonly reason: string;
}

/** What `classify` answers (Nerva's fields). */
export interface RouteResult {
  /** The best handler's name, or {@link UNKNOWN_INTENT} when none passed. */
  readonly intent: string;
  /** The best handler's score, in [0, 1]; 0 when none passed. */
  readonly confidence: number;
  /** The handlers that passed, best first (score descending, then name). */
  readonly handlers: readonly RouteCandidate[];
  /** Every handler's raw score as the router computed it (before any threshold), by name. */
  readonly rawScores: Readonly<Record<string, number>>;
  /** The best handler's name, or `null` when none passed. */
  readonly bestHandler: string | null;
}

/** Picks the handler of a message. Every router runs `test/orchestrator/router.conformance.ts`. */
export interface Router {
  readonly name: string;
  /** Never rejects for a message nothing fits: that is an `unknown` result. */
  classify(message: string, ctx: ExecContext): Promise<RouteResult>;
}

/** `handlers`, the first of each name (the list itself when no name repeats). */
export function uniqueHandlers(
  handlers: readonly HandlerDescription[],
): readonly HandlerDescription[] {
  const seen = new Set<string>();
  let repeated = false;
  for (const h of handlers) {
    if (seen.has(h.name)) repeated = true;
    seen.add(h.name);
  }
  if (!repeated) return handlers;
  seen.clear();
  return handlers.filter((h) => !seen.has(h.name) && seen.add(h.name));
}

/** A score held in [0, 1] (NaN counts as 0). */
export function clampScore(score: number): number {
  if (!(score > 0)) return 0;
  return score > 1 ? 1 : score;
}

/**
 * A result from candidates and raw scores: candidates clamped to [0, 1], one per name (its
 * best), ordered by score descending then name (deterministic ties), at most `topK` of them
 * (a whole number ≥ 1, or `Infinity` for all, the default).
 */
export function routeResult(
  candidates: readonly RouteCandidate[],
  rawScores: Readonly<Record<string, number>>,
  topK = Infinity,
): RouteResult {
  if (!(topK === Infinity || (Number.isInteger(topK) && topK >= 1))) {
    throw new RangeError(`routeResult: topK must be a whole number >= 1 or Infinity, got ${topK}`);
  }
  const best = new Map<string, RouteCandidate>();
  for (const c of candidates) {
    const score = clampScore(c.score);
    const seen = best.get(c.name);
    if (!seen || score > seen.score) best.set(c.name, { name: c.name, score, reason: c.reason });
  }
  const handlers = [...best.values()]
    .sort((a, b) => b.score - a.score || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .slice(0, topK);
  const top = handlers[0];
  return {
    intent: top ? top.name : UNKNOWN_INTENT,
    confidence: top ? top.score : 0,
    handlers,
    rawScores: { ...rawScores },
    bestHandler: top ? top.name : null,
  };
}
