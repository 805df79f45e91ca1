import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createContext } from '../../src/context/create-context.js';
import { createEmbeddingRouter } from '../../src/orchestrator/embedding-router.js';
import {
  clampScore,
  routeResult,
  type HandlerDescription,
  type RouteCandidate,
} from '../../src/orchestrator/route-result.js';
import { expectRouteInvariants } from './router.conformance.js';

/** Any double: NaN, ±Infinity, -0, negatives, past 1. */
const anyScore = fc.oneof(
  fc.double(),
  fc.double({ min: 0, max: 1, noNaN: true }),
  fc.constantFrom(0, 1, 0.5, -0, NaN, Infinity, -Infinity, -1, 2),
);
/** Short names from a small alphabet, so ties of names (and of scores) are frequent. */
const name = fc.string({ unit: fc.constantFrom('a', 'b', 'c', 'é', '_'), maxLength: 3 });
const candidate: fc.Arbitrary<RouteCandidate> = fc.record({
  name,
  score: anyScore,
  reason: fc.string({ maxLength: 5 }),
});

describe('routeResult (property)', () => {
  it('clamps, orders best first with ties by name, keeps the best topK', () => {
    fc.assert(
      fc.property(
        fc.array(candidate, { maxLength: 12 }),
        fc.dictionary(name, anyScore),
        fc.oneof(fc.integer({ min: 1, max: 15 }), fc.constant(Infinity)),
        (candidates, raw, topK) => {
          const result = routeResult(candidates, raw, topK);
          expectRouteInvariants(result);
          // One per name, its best score.
          const best = new Map<string, number>();
          for (const c of candidates) {
            best.set(c.name, Math.max(best.get(c.name) ?? -1, clampScore(c.score)));
          }
          expect(result.handlers).toHaveLength(Math.min(best.size, topK));
          expect(new Set(result.handlers.map((h) => h.name)).size).toBe(result.handlers.length);
          for (const h of result.handlers) expect(h.score).toBe(best.get(h.name));
          // Nothing left out beats what was kept.
          const last = result.handlers.at(-1);
          if (last) {
            const sorted = [...best.values()].sort((a, b) => b - a);
            expect(sorted[result.handlers.length - 1]).toBe(last.score);
          }
          expect(result.rawScores).toEqual(raw);
          expect(result.rawScores).not.toBe(raw);
        },
      ),
    );
  });

  it('refuses a topK that is not a whole number >= 1 or Infinity', () => {
    for (const topK of [0, -1, 1.5, NaN]) {
      expect(() => routeResult([], {}, topK)).toThrow(RangeError);
    }
  });

  it('holds a clamped score in [0, 1] for any number', () => {
    fc.assert(
      fc.property(anyScore, (s) => {
        const c = clampScore(s);
        expect(c >= 0 && c <= 1).toBe(true);
        if (s >= 0 && s <= 1) expect(c).toBe(s === 0 ? 0 : s);
      }),
    );
  });
});

describe('createEmbeddingRouter (property)', () => {
  const words = fc.constantFrom(
    'book',
    'flights',
    'rain',
    'weather',
    'invoice',
    'refund',
    'hotel',
    'train',
    'the',
    'zebra',
  );
  const text = fc.array(words, { maxLength: 6 }).map((w) => w.join(' '));
  const handlers: fc.Arbitrary<HandlerDescription[]> = fc.uniqueArray(
    fc.record({
      // Names that are also Object.prototype's keys must work like any other.
      name: fc.oneof(
        fc.string({ minLength: 1, maxLength: 6 }),
        fc.constantFrom('__proto__', 'constructor', 'toString', 'unknown'),
      ),
      description: text,
    }),
    { selector: (h) => h.name, maxLength: 12 },
  );

  it('gives results holding the invariants, every handler in rawScores', async () => {
    await fc.assert(
      fc.asyncProperty(
        handlers,
        fc.oneof(text, fc.string({ maxLength: 20 })),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.integer({ min: 1, max: 6 }),
        async (list, message, threshold, topK) => {
          const router = createEmbeddingRouter({
            handlers: { handlers: () => Promise.resolve(list) },
            threshold,
            topK,
          });
          const result = await router.classify(message, createContext());
          expectRouteInvariants(result);
          expect(Object.keys(result.rawScores).sort()).toEqual(list.map((h) => h.name).sort());
          const passing = list.filter((h) => (result.rawScores[h.name] ?? -1) >= threshold);
          expect(result.handlers).toHaveLength(Math.min(passing.length, topK));
          for (const h of result.handlers) {
            expect(h.score).toBe(result.rawScores[h.name]);
            expect(h.score).toBeGreaterThanOrEqual(threshold);
          }
          for (const score of Object.values(result.rawScores)) {
            expect(score >= 0 && score <= 1).toBe(true);
          }
          expect(await router.classify(message, createContext())).toEqual(result);
        },
      ),
    );
  });
});
