/**
 * The Router conformance suite. Every router is built over the same handlers
 * ({@link CONFORMANCE_HANDLERS}: `weather`, `flights`, `billing`), whose descriptions are
 * plain keywords, so each implementation can be set up to route by them: the rule router
 * with one rule per handler made of its {@link keywords}, the embedding routers with the
 * default hashed embedder, the LLM routers with a scripted model that answers by
 * {@link keywordChoice}. A message with none of the keywords fits no handler.
 *
 * @example
 * describeRouter('rule', (handlers) => createRuleRouter({ rules: handlers.map(ruleFor) }));
 */
import { describe, expect, it } from 'vitest';
import { createContext } from '../../src/context/create-context.js';
import {
  UNKNOWN_INTENT,
  type HandlerDescription,
  type RouteResult,
  type Router,
} from '../../src/orchestrator/route-result.js';

/** The handlers every router of the suite routes between. */
export const CONFORMANCE_HANDLERS: readonly HandlerDescription[] = [
  { name: 'weather', description: 'weather forecast: rain, snow, wind and temperature' },
  { name: 'flights', description: 'book airline flights, tickets and airport transfers' },
  { name: 'billing', description: 'invoices, billing, payments and refunds' },
];

/** Messages clearly meant for one handler, with that handler. */
export const CLEAR_MESSAGES: readonly (readonly [message: string, handler: string])[] = [
  ['weather forecast: will it rain tomorrow?', 'weather'],
  ['book flights to Berlin from the airport', 'flights'],
  ['refund the payments on my invoices', 'billing'],
];

/** A message no handler fits. */
export const UNFIT_MESSAGE = 'purple elephants juggle quietly';

/** The words of at least four letters of `text`, lower-cased: what a description is about. */
export function keywords(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => w.length >= 4);
}

/**
 * The handler sharing the most keywords with `message` (the first on a tie), or `null`
 * when none shares any: what a model that understood the task would answer.
 */
export function keywordChoice(
  handlers: readonly HandlerDescription[],
  message: string,
): string | null {
  const said = new Set(keywords(message));
  let best: string | null = null;
  let most = 0;
  for (const h of handlers) {
    const shared = keywords(h.description).filter((w) => said.has(w)).length;
    if (shared > most) {
      best = h.name;
      most = shared;
    }
  }
  return best;
}

/** Asserts the invariants every {@link RouteResult} holds, whatever the router. */
export function expectRouteInvariants(result: RouteResult): void {
  const { handlers } = result;
  for (const h of handlers) {
    expect(h.score).toBeGreaterThanOrEqual(0);
    expect(h.score).toBeLessThanOrEqual(1);
    expect(typeof h.reason).toBe('string');
  }
  for (let i = 1; i < handlers.length; i++) {
    const a = handlers[i - 1];
    const b = handlers[i];
    if (!a || !b) throw new Error('unreachable');
    expect(a.score).toBeGreaterThanOrEqual(b.score);
    if (a.score === b.score) expect(a.name <= b.name).toBe(true);
  }
  expect(result.bestHandler).toBe(handlers[0]?.name ?? null);
  expect(result.intent).toBe(result.bestHandler ?? UNKNOWN_INTENT);
  expect(result.confidence).toBe(handlers[0]?.score ?? 0);
  expect(result.confidence).toBeGreaterThanOrEqual(0);
  expect(result.confidence).toBeLessThanOrEqual(1);
}

/** Registers the conformance suite for the routers `make` builds over given handlers. */
export function describeRouter(
  name: string,
  make: (handlers: readonly HandlerDescription[]) => Router | Promise<Router>,
): void {
  describe(`Router conformance: ${name}`, () => {
    it.each(CLEAR_MESSAGES)('routes %j to %s', async (message, handler) => {
      const router = await make(CONFORMANCE_HANDLERS);
      const result = await router.classify(message, createContext());
      expectRouteInvariants(result);
      expect(result.bestHandler).toBe(handler);
      expect(result.intent).toBe(handler);
      expect(result.confidence).toBeGreaterThan(0);
    });

    it('routes a message nothing fits to unknown, at confidence 0', async () => {
      const router = await make(CONFORMANCE_HANDLERS);
      const result = await router.classify(UNFIT_MESSAGE, createContext());
      expectRouteInvariants(result);
      expect(result).toMatchObject({
        intent: UNKNOWN_INTENT,
        confidence: 0,
        bestHandler: null,
        handlers: [],
      });
    });

    it('routes an empty message to unknown without rejecting', async () => {
      const router = await make(CONFORMANCE_HANDLERS);
      const result = await router.classify('', createContext());
      expect(result).toMatchObject({ intent: UNKNOWN_INTENT, confidence: 0, bestHandler: null });
    });

    it('routes every message to unknown when there are no handlers', async () => {
      const router = await make([]);
      for (const [message] of CLEAR_MESSAGES) {
        const result = await router.classify(message, createContext());
        expectRouteInvariants(result);
        expect(result.bestHandler).toBeNull();
        expect(result.handlers).toEqual([]);
      }
    });

    it('gives the same result for the same message twice', async () => {
      const router = await make(CONFORMANCE_HANDLERS);
      for (const message of [...CLEAR_MESSAGES.map(([m]) => m), UNFIT_MESSAGE]) {
        const first = await router.classify(message, createContext());
        const second = await router.classify(message, createContext());
        expect(second).toEqual(first);
      }
    });

    it('names only known handlers, each with a raw score', async () => {
      const router = await make(CONFORMANCE_HANDLERS);
      const known = CONFORMANCE_HANDLERS.map((h) => h.name);
      for (const [message] of CLEAR_MESSAGES) {
        const result = await router.classify(message, createContext());
        for (const h of result.handlers) {
          expect(known).toContain(h.name);
          expect(result.rawScores[h.name]).toEqual(expect.any(Number));
        }
        for (const n of Object.keys(result.rawScores)) expect(known).toContain(n);
      }
    });

    it('rejects a message that is not a string with TypeError', async () => {
      const router = await make(CONFORMANCE_HANDLERS);
      await expect(router.classify(42 as unknown as string, createContext())).rejects.toThrow(
        TypeError,
      );
    });
  });
}
