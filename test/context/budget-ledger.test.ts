import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSeededRandom } from '../../src/context/seeded-random.js';
import {
  BudgetLedger,
  type BudgetAmounts,
  type BudgetLimits,
  type Reservation,
  type SharedBudget,
  ZERO_AMOUNTS,
} from '../../src/context/budget-ledger.js';
import { SimulatedClock } from '../../src/context/clock.js';
import { type Budgets } from '../../src/context/exec-context.js';
import { createContext } from '../../src/context/create-context.js';
import { createSequentialIdSource } from '../../src/context/id-source.js';
import { BudgetExceededError, type BudgetLimit } from '../../src/errors/budget-exceeded-error.js';
import { WideningError } from '../../src/errors/widening-error.js';

const DIMS = ['tokensIn', 'tokensOut', 'costUsd'] as const;
type Dim = (typeof DIMS)[number];
const LIMIT_KEY = {
  tokensIn: 'maxTokensIn',
  tokensOut: 'maxTokensOut',
  costUsd: 'maxCostUsd',
} as const;
const LIMIT_NAME = {
  tokensIn: 'max_tokens_in',
  tokensOut: 'max_tokens_out',
  costUsd: 'max_cost_usd',
} as const satisfies Record<Dim, BudgetLimit>;

function amounts(tokensIn: number, tokensOut: number, costUsd: number): BudgetAmounts {
  return { tokensIn, tokensOut, costUsd };
}

/** Runs `fn`, expecting an error of class `cls`, and returns it. */
function thrownBy<T extends Error>(
  cls: abstract new (...args: never[]) => T,
  fn: () => unknown,
): T {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(cls);
    return err as T;
  }
  throw new Error(`expected ${cls.name}, nothing was thrown`);
}

describe('BudgetLedger reserve, commit, release (POLICY-3000)', () => {
  it('a reservation holds budget until it is committed with the actual use', () => {
    const ledger = new BudgetLedger('run', { maxTokensOut: 100 });
    const r = ledger.reserve(amounts(0, 60, 0));
    expect(ledger.reserved).toEqual(amounts(0, 60, 0));
    expect(ledger.remaining().tokensOut).toBe(40);
    expect(() => ledger.reserve(amounts(0, 41, 0))).toThrow(BudgetExceededError);

    r.commit(amounts(0, 25, 0));
    expect(r.settled).toBe(true);
    expect(ledger.reserved).toEqual(amounts(0, 0, 0));
    expect(ledger.committed).toEqual(amounts(0, 25, 0));
    expect(ledger.remaining().tokensOut).toBe(75);
    // What the commit freed can now be reserved.
    expect(ledger.reserve(amounts(0, 75, 0)).amounts.tokensOut).toBe(75);
  });

  it('release gives the whole reservation back and commits nothing', () => {
    const ledger = new BudgetLedger('run', { maxCostUsd: 1 });
    const r = ledger.reserve(amounts(0, 0, 1));
    expect(ledger.remaining().costUsd).toBe(0);
    r.release();
    expect(r.settled).toBe(true);
    expect(ledger.remaining().costUsd).toBe(1);
    expect(ledger.committed).toEqual(amounts(0, 0, 0));
    expect(ledger.reserved).toEqual(amounts(0, 0, 0));
  });

  it('a reservation of exactly what is left fits; one unit more does not', () => {
    const ledger = new BudgetLedger('run', { maxTokensIn: 10 });
    ledger.reserve(amounts(4, 0, 0));
    expect(() => ledger.reserve(amounts(7, 0, 0))).toThrow(BudgetExceededError);
    ledger.reserve(amounts(6, 0, 0));
    expect(ledger.remaining().tokensIn).toBe(0);
    expect(() => ledger.reserve(amounts(1, 0, 0))).toThrow(BudgetExceededError);
  });

  const commit5 = (r: Reservation): void => {
    r.commit(amounts(5, 0, 0));
  };
  const commit9 = (r: Reservation): void => {
    r.commit(amounts(9, 0, 0));
  };
  const release = (r: Reservation): void => {
    r.release();
  };
  it.each([
    ['commit then commit', [commit5, commit9]],
    ['commit then release', [commit5, release]],
    ['release then commit', [release, commit5]],
    ['release then release', [release, release]],
  ])('settling twice is ignored (%s)', (what, settles) => {
    const parent = new BudgetLedger('run', { maxTokensIn: 100 });
    const ledger = new BudgetLedger('step', {}, parent);
    const r = ledger.reserve(amounts(10, 0, 0));
    for (const settle of settles) settle(r);
    const expected = what.startsWith('commit') ? 5 : 0;
    for (const l of [ledger, parent]) {
      expect(l.committed.tokensIn).toBe(expected);
      expect(l.reserved.tokensIn).toBe(0);
    }
    expect(parent.remaining().tokensIn).toBe(100 - expected);
  });

  it.each(DIMS)('a reservation that does not fit %s names the limit and the ledger', (dim) => {
    const ledger = new BudgetLedger('planner', { [LIMIT_KEY[dim]]: 10 });
    ledger.reserve({ ...amounts(0, 0, 0), [dim]: 4 });
    const err = thrownBy(BudgetExceededError, () =>
      ledger.reserve({ ...amounts(0, 0, 0), [dim]: 7 }),
    );
    expect(err.code).toBe('BUDGET_EXCEEDED');
    expect(err.limit).toBe(LIMIT_NAME[dim]);
    expect(err.ledger).toBe('planner');
    expect(err.requested).toBe(7);
    expect(err.remaining).toBe(6);
    expect(ledger.reserved[dim]).toBe(4);
  });

  it('a refusal by an ancestor names the ancestor and reserves nothing anywhere', () => {
    const root = new BudgetLedger('run', { maxCostUsd: 5 });
    const mid = new BudgetLedger('team', { maxTokensOut: 1_000 }, root);
    const leaf = new BudgetLedger('writer', { maxTokensIn: 1_000 }, mid);
    leaf.reserve(amounts(10, 10, 4));
    const before = [root, mid, leaf].map((l) => [l.reserved, l.committed, l.remaining()]);

    const err = thrownBy(BudgetExceededError, () => leaf.reserve(amounts(20, 20, 2)));
    expect(err.limit).toBe('max_cost_usd');
    expect(err.ledger).toBe('run');
    expect(err.remaining).toBe(1);

    expect([root, mid, leaf].map((l) => [l.reserved, l.committed, l.remaining()])).toEqual(before);
  });

  it('names the nearest ledger whose limit fails when several would', () => {
    const root = new BudgetLedger('run', { maxTokensOut: 50 });
    const step = new BudgetLedger('step', { maxTokensOut: 20 }, root);
    const err = thrownBy(BudgetExceededError, () => step.reserve(amounts(0, 60, 0)));
    expect(err.ledger).toBe('step');
    expect(err.limit).toBe('max_tokens_out');
  });

  it('remaining() is the tightest of the ledger and all its ancestors, null when unlimited', () => {
    const root = new BudgetLedger('run', { maxTokensIn: 100, maxCostUsd: 3 });
    const mid = new BudgetLedger('mid', { maxTokensIn: 500, maxTokensOut: 40 }, root);
    const leaf = new BudgetLedger('leaf', {}, mid);
    expect(leaf.remaining()).toEqual({ tokensIn: 100, tokensOut: 40, costUsd: 3 });
    root.reserve(amounts(30, 0, 1));
    expect(leaf.remaining()).toEqual({ tokensIn: 70, tokensOut: 40, costUsd: 2 });
    leaf.reserve(amounts(0, 15, 0));
    expect(leaf.remaining()).toEqual({ tokensIn: 70, tokensOut: 25, costUsd: 2 });
    expect(root.remaining()).toEqual({ tokensIn: 70, tokensOut: null, costUsd: 2 });
    expect(new BudgetLedger('free').remaining()).toEqual({
      tokensIn: null,
      tokensOut: null,
      costUsd: null,
    });
  });

  it('a reservation on a child counts at every ancestor until it settles', () => {
    const root = new BudgetLedger('run', { maxTokensOut: 100 });
    const a = new BudgetLedger('a', {}, root);
    const b = new BudgetLedger('b', {}, root);
    const r = a.reserve(amounts(0, 70, 0));
    expect(root.reserved.tokensOut).toBe(70);
    expect(b.remaining().tokensOut).toBe(30);
    expect(() => b.reserve(amounts(0, 31, 0))).toThrow(BudgetExceededError);
    r.commit(amounts(0, 50, 0));
    expect(root.committed.tokensOut).toBe(50);
    expect(b.remaining().tokensOut).toBe(50);
    expect(b.reserved.tokensOut).toBe(0);
  });

  it('a commit above the reservation is recorded and later reservations see the overrun', () => {
    const ledger = new BudgetLedger('run', { maxTokensOut: 100 });
    ledger.reserve(amounts(0, 10, 0)).commit(amounts(0, 90, 0));
    expect(ledger.committed.tokensOut).toBe(90);
    const err = thrownBy(BudgetExceededError, () => ledger.reserve(amounts(0, 11, 0)));
    expect(err.remaining).toBe(10);
  });

  it.each([
    ['negative', amounts(-1, 0, 0)],
    ['NaN', amounts(0, Number.NaN, 0)],
    ['infinite', amounts(0, 0, Number.POSITIVE_INFINITY)],
  ])('reserve() refuses %s amounts with RangeError and reserves nothing', (_what, bad) => {
    const ledger = new BudgetLedger('run');
    expect(() => ledger.reserve(bad)).toThrow(RangeError);
    expect(ledger.reserved).toEqual(amounts(0, 0, 0));
  });

  it('commit() refuses bad actual use and leaves the reservation open', () => {
    const ledger = new BudgetLedger('run', { maxTokensIn: 10 });
    const r = ledger.reserve(amounts(5, 0, 0));
    expect(() => {
      r.commit(amounts(-3, 0, 0));
    }).toThrow(RangeError);
    expect(r.settled).toBe(false);
    expect(ledger.reserved.tokensIn).toBe(5);
    r.release();
    expect(ledger.remaining().tokensIn).toBe(10);
  });

  it.each([-1, Number.NaN])('the constructor refuses a limit of %s with RangeError', (v) => {
    expect(() => new BudgetLedger('run', { maxCostUsd: v })).toThrow(RangeError);
  });

  it('committed and reserved are snapshots a caller cannot write through', () => {
    const ledger = new BudgetLedger('run', { maxTokensIn: 10 });
    const snap = ledger.committed as { tokensIn: number };
    snap.tokensIn = 1_000;
    expect(ledger.committed.tokensIn).toBe(0);
    expect(ledger.remaining().tokensIn).toBe(10);
  });

  it('BudgetLedger.child refuses limits above what is left with WideningError', () => {
    const root = new BudgetLedger('run', { maxCostUsd: 2 });
    root.reserve(amounts(0, 0, 1.5));
    const err = thrownBy(WideningError, () => root.child('step', { maxCostUsd: 1 }));
    expect(err.field).toBe('budgets.maxCostUsd');
    expect(root.child('step', { maxCostUsd: 0.5 }).remaining().costUsd).toBe(0.5);
  });

  // Regression: money is summed in binary floating point, so 0.3 - 0.1 - 0.1 is
  // 0.09999999999999998 and the third $0.10 call of a $0.30 budget is refused.
  it('three $0.10 reservations fit a $0.30 budget', () => {
    const ledger = new BudgetLedger('run', { maxCostUsd: 0.3 });
    ledger.reserve(amounts(0, 0, 0.1)).commit(amounts(0, 0, 0.1));
    ledger.reserve(amounts(0, 0, 0.1)).commit(amounts(0, 0, 0.1));
    expect(() => ledger.reserve(amounts(0, 0, 0.1))).not.toThrow();
  });

  // Regression: record() is reserve(ZERO).commit(actual); once a ledger has overrun,
  // its remaining is negative, the zero reservation is refused and the usage is lost.
  it('record() still records usage after a ledger has overrun its limit', () => {
    const ctx = createContext({ name: 'run', budgets: { maxTokensOut: 100 } });
    ctx.ledger.record(amounts(0, 150, 0));
    expect(() => {
      ctx.ledger.record(amounts(0, 10, 0));
    }).not.toThrow();
    expect(ctx.tokenUsage.completionTokens).toBe(160);
  });
});

describe('ExecContext.child budgets only narrow (POLICY-3000)', () => {
  function root() {
    const clock = new SimulatedClock(1_000);
    const ctx = createContext({
      name: 'run',
      clock,
      timeoutMs: 10_000,
      budgets: { maxTokensIn: 1_000, maxTokensOut: 500, maxCostUsd: 2 },
    });
    return { clock, ctx };
  }

  it.each<[string, Budgets]>([
    ['budgets.maxTokensIn', { maxTokensIn: 1_001 }],
    ['budgets.maxTokensOut', { maxTokensOut: 501 }],
    ['budgets.maxCostUsd', { maxCostUsd: 2.01 }],
    ['budgets.maxWallMs', { maxWallMs: 10_001 }],
  ])('asking for more than the parent has throws WideningError naming %s', (field, budgets) => {
    const { ctx } = root();
    const err = thrownBy(WideningError, () => ctx.child('greedy', { budgets }));
    expect(err.field).toBe(field);
    expect(err.code).toBe('FORBIDDEN');
  });

  it('compares with what the parent has left, not with its limit', () => {
    const { clock, ctx } = root();
    ctx.ledger.reserve(amounts(400, 0, 0));
    ctx.ledger.record(amounts(0, 300, 1.5));
    clock.advance(4_000);
    expect(
      thrownBy(WideningError, () => ctx.child('c', { budgets: { maxTokensIn: 601 } })).field,
    ).toBe('budgets.maxTokensIn');
    expect(
      thrownBy(WideningError, () => ctx.child('c', { budgets: { maxTokensOut: 201 } })).field,
    ).toBe('budgets.maxTokensOut');
    expect(
      thrownBy(WideningError, () => ctx.child('c', { budgets: { maxCostUsd: 0.6 } })).field,
    ).toBe('budgets.maxCostUsd');
    expect(
      thrownBy(WideningError, () => ctx.child('c', { budgets: { maxWallMs: 6_001 } })).field,
    ).toBe('budgets.maxWallMs');
    const ok = ctx.child('c', {
      budgets: { maxTokensIn: 600, maxTokensOut: 200, maxCostUsd: 0.5, maxWallMs: 6_000 },
    });
    expect(ok.budgetRemaining()).toEqual({ tokensIn: 600, tokensOut: 200, costUsd: 0.5 });
    expect(ok.deadline).toBe(ctx.deadline);
  });

  it('a grandchild is bounded by the grandparent even when the parent set no limit', () => {
    const { ctx } = root();
    const mid = ctx.child('mid');
    const err = thrownBy(WideningError, () =>
      mid.child('leaf', { budgets: { maxTokensOut: 600 } }),
    );
    expect(err.field).toBe('budgets.maxTokensOut');
    expect(mid.child('leaf', { budgets: { maxTokensOut: 100 } }).budgetRemaining().tokensOut).toBe(
      100,
    );
  });

  it('narrowed budgets hold the child while unnamed ones fall back to the parent', () => {
    const { ctx } = root();
    const child = ctx.child('writer', { budgets: { maxTokensOut: 50 } });
    expect(child.budgetRemaining()).toEqual({ tokensIn: 1_000, tokensOut: 50, costUsd: 2 });
    const err = thrownBy(BudgetExceededError, () => child.ledger.reserve(amounts(0, 51, 0)));
    expect(err.ledger).toBe('writer');
    expect(err.limit).toBe('max_tokens_out');
    child.ledger.reserve(amounts(0, 50, 0));
    expect(ctx.budgetRemaining().tokensOut).toBe(450);
  });

  it('a widening child is refused before anything changes', () => {
    const { ctx } = root();
    expect(() => ctx.child('c', { budgets: { maxTokensIn: 10, maxCostUsd: 99 } })).toThrow(
      WideningError,
    );
    expect(ctx.budgetRemaining()).toEqual({ tokensIn: 1_000, tokensOut: 500, costUsd: 2 });
  });
});

describe('token usage adds up the context tree (POLICY-3000)', () => {
  it("a grandchild's commits and a child's records show in the parent's tokenUsage", () => {
    const root = createContext({ name: 'run' });
    const child = root.child('team');
    const grand = child.child('writer');
    const sibling = root.child('critic');

    grand.ledger.reserve(amounts(10, 20, 0.5)).commit(amounts(8, 15, 0.25));
    child.ledger.record(amounts(1, 2, 0.25));
    sibling.ledger.record(amounts(100, 0, 0));

    expect(grand.tokenUsage).toEqual({
      promptTokens: 8,
      completionTokens: 15,
      totalTokens: 23,
      costUsd: 0.25,
    });
    expect(child.tokenUsage).toEqual({
      promptTokens: 9,
      completionTokens: 17,
      totalTokens: 26,
      costUsd: 0.5,
    });
    expect(sibling.tokenUsage).toEqual({
      promptTokens: 100,
      completionTokens: 0,
      totalTokens: 100,
      costUsd: 0,
    });
    expect(root.tokenUsage).toEqual({
      promptTokens: 109,
      completionTokens: 17,
      totalTokens: 126,
      costUsd: 0.5,
    });
  });

  it('open and released reservations are not usage', () => {
    const root = createContext({ name: 'run' });
    const child = root.child('step');
    child.ledger.reserve(amounts(5, 5, 0.5));
    child.ledger.reserve(amounts(7, 7, 0.5)).release();
    expect(root.tokenUsage).toEqual({
      promptTokens: 0,
      completionTokens: 0,
      totalTokens: 0,
      costUsd: 0,
    });
  });
});

describe('concurrent children of one context share its budget (POLICY-3000)', () => {
  const CHILDREN = 300;
  const MAX_OUT = 4_000;
  const MAX_COST = 250;
  const CAPPED_EVERY = 7;
  const CAP = 40;

  async function turns(rng: () => number): Promise<void> {
    const n = Math.floor(rng() * 6);
    for (let i = 0; i < n; i++) {
      if (rng() < 0.5) await new Promise<void>((resolve) => setImmediate(resolve));
      else await Promise.resolve();
    }
  }

  interface Expected {
    readonly fits: boolean;
    readonly ledger?: string;
    readonly limit?: BudgetLimit;
  }

  it.each([1, 2, 3, 42])(
    'seed %i: never over the limit, exactly the fitting reservations succeed',
    async (seed) => {
      const ctx = createContext({
        name: 'run',
        ids: createSequentialIdSource(),
        budgets: { maxTokensOut: MAX_OUT, maxCostUsd: MAX_COST },
      });
      const children = Array.from({ length: CHILDREN }, (_, i) =>
        i % CAPPED_EVERY === 0
          ? ctx.child(`worker-${i}`, { budgets: { maxTokensOut: CAP } })
          : ctx.child(`worker-${i}`),
      );
      // The model of the root ledger, updated at the moment each operation happens.
      const model = { reservedOut: 0, committedOut: 0, reservedCost: 0, committedCost: 0 };
      const expected: Expected[] = [];
      const outcome: unknown[] = [];
      let open = 0;
      let maxOpen = 0;
      let firstRefusal = Infinity;
      let successesAfterRefusal = 0;
      let step = 0;

      const checkRoot = (): void => {
        const c = ctx.ledger.committed;
        const r = ctx.ledger.reserved;
        expect(c.tokensOut).toBe(model.committedOut);
        expect(r.tokensOut).toBe(model.reservedOut);
        expect(c.costUsd).toBe(model.committedCost);
        expect(r.costUsd).toBe(model.reservedCost);
        expect(c.tokensOut).toBeLessThanOrEqual(MAX_OUT);
        expect(c.tokensOut + r.tokensOut).toBeLessThanOrEqual(MAX_OUT);
        expect(c.costUsd + r.costUsd).toBeLessThanOrEqual(MAX_COST);
      };

      const task = async (i: number, child: (typeof children)[number]): Promise<void> => {
        const rng = createSeededRandom(seed * 100_003 + i);
        await turns(rng);
        const want = amounts(0, 1 + Math.floor(rng() * 60), Math.floor(rng() * 4));
        const capped = i % CAPPED_EVERY === 0;
        const rootOut = MAX_OUT - model.committedOut - model.reservedOut;
        const rootCost = MAX_COST - model.committedCost - model.reservedCost;
        expected[i] =
          capped && want.tokensOut > CAP
            ? { fits: false, ledger: child.name, limit: 'max_tokens_out' }
            : want.tokensOut > rootOut
              ? { fits: false, ledger: 'run', limit: 'max_tokens_out' }
              : want.costUsd > rootCost
                ? { fits: false, ledger: 'run', limit: 'max_cost_usd' }
                : { fits: true };
        let reservation: Reservation;
        try {
          reservation = child.ledger.reserve(want);
        } catch (err) {
          outcome[i] = err;
          firstRefusal = Math.min(firstRefusal, step++);
          checkRoot();
          return;
        }
        outcome[i] = true;
        if (step++ > firstRefusal) successesAfterRefusal++;
        model.reservedOut += want.tokensOut;
        model.reservedCost += want.costUsd;
        open++;
        maxOpen = Math.max(maxOpen, open);
        checkRoot();

        await turns(rng);
        const roll = rng();
        model.reservedOut -= want.tokensOut;
        model.reservedCost -= want.costUsd;
        open--;
        if (roll < 1 / 3) {
          reservation.release();
        } else {
          const actual =
            roll < 2 / 3
              ? amounts(0, Math.floor(want.tokensOut * rng()), Math.floor(want.costUsd * rng()))
              : want;
          reservation.commit(actual);
          model.committedOut += actual.tokensOut;
          model.committedCost += actual.costUsd;
        }
        checkRoot();
      };

      await Promise.all(children.map((child, i) => task(i, child)));

      for (let i = 0; i < CHILDREN; i++) {
        const e = expected[i];
        const got = outcome[i];
        if (e?.fits) {
          expect(got, `worker-${i}`).toBe(true);
        } else {
          expect(got, `worker-${i}`).toBeInstanceOf(BudgetExceededError);
          const err = got as BudgetExceededError;
          expect({ ledger: err.ledger, limit: err.limit }).toEqual({
            ledger: e?.ledger,
            limit: e?.limit,
          });
        }
      }
      const refused = outcome.filter((o) => o instanceof BudgetExceededError).length;
      const succeeded = outcome.filter((o) => o === true).length;
      expect(refused + succeeded).toBe(CHILDREN);
      // The run must actually exercise contention, refusals and budget handed back.
      expect(refused).toBeGreaterThan(0);
      expect(succeeded).toBeGreaterThan(0);
      expect(maxOpen).toBeGreaterThan(20);
      expect(successesAfterRefusal).toBeGreaterThan(0);
      expect(ctx.ledger.reserved).toEqual(amounts(0, 0, 0));
      expect(ctx.tokenUsage.completionTokens).toBe(model.committedOut);
      expect(ctx.tokenUsage.costUsd).toBe(model.committedCost);
    },
  );
});

describe('BudgetLedger invariant over random trees (POLICY-3000)', () => {
  type Op =
    | { kind: 'reserve'; node: number; tokensIn: number; tokensOut: number; costUsd: number }
    | { kind: 'commit'; res: number; fraction: number }
    | { kind: 'release'; res: number };

  const limitsArb: fc.Arbitrary<BudgetLimits> = fc.record(
    {
      maxTokensIn: fc.integer({ min: 0, max: 200 }),
      maxTokensOut: fc.integer({ min: 0, max: 200 }),
      maxCostUsd: fc.integer({ min: 0, max: 50 }),
    },
    { requiredKeys: [] },
  );

  const opArb: fc.Arbitrary<Op> = fc.oneof(
    fc.record({
      kind: fc.constant('reserve' as const),
      node: fc.nat(),
      tokensIn: fc.integer({ min: 0, max: 80 }),
      tokensOut: fc.integer({ min: 0, max: 80 }),
      costUsd: fc.integer({ min: 0, max: 20 }),
    }),
    fc.record({
      kind: fc.constant('commit' as const),
      res: fc.nat(),
      fraction: fc.integer({ min: 0, max: 100 }),
    }),
    fc.record({ kind: fc.constant('release' as const), res: fc.nat() }),
  );

  const caseArb = fc.integer({ min: 1, max: 7 }).chain((n) =>
    fc.record({
      parents: fc.array(fc.nat(), { minLength: n - 1, maxLength: n - 1 }),
      limits: fc.array(limitsArb, { minLength: n, maxLength: n }),
      ops: fc.array(opArb, { maxLength: 60 }),
    }),
  );

  it('committed + reserved never exceeds any limit, refusals change nothing', () => {
    fc.assert(
      fc.property(caseArb, ({ parents, limits, ops }) => {
        const nodes: BudgetLedger[] = [];
        const parentOf: number[] = [];
        limits.forEach((lim, i) => {
          const p = i === 0 ? -1 : (parents[i - 1] ?? 0) % i;
          parentOf.push(p);
          nodes.push(new BudgetLedger(`n${i}`, lim, p < 0 ? null : (nodes[p] ?? null)));
        });
        const model = limits.map(() => ({ c: amounts(0, 0, 0), r: amounts(0, 0, 0) }));
        const chain = (i: number): number[] => {
          const out: number[] = [];
          for (let at = i; at >= 0; at = parentOf[at] ?? -1) out.push(at);
          return out;
        };
        const add = (a: BudgetAmounts, b: BudgetAmounts, sign: 1 | -1): BudgetAmounts => ({
          tokensIn: a.tokensIn + sign * b.tokensIn,
          tokensOut: a.tokensOut + sign * b.tokensOut,
          costUsd: a.costUsd + sign * b.costUsd,
        });
        const left = (i: number, dim: Dim): number | null => {
          const lim = limits[i]?.[LIMIT_KEY[dim]];
          const m = model[i];
          return lim === undefined || !m ? null : lim - m.c[dim] - m.r[dim];
        };
        const held: { node: number; res: Reservation; settled: boolean }[] = [];

        for (const op of ops) {
          if (op.kind === 'reserve') {
            const node = op.node % nodes.length;
            const want = amounts(op.tokensIn, op.tokensOut, op.costUsd);
            let refusal: { ledger: string; limit: BudgetLimit } | null = null;
            for (const at of chain(node)) {
              const dim = DIMS.find((d) => {
                const l = left(at, d);
                return l !== null && want[d] > l;
              });
              if (dim) {
                refusal = { ledger: `n${at}`, limit: LIMIT_NAME[dim] };
                break;
              }
            }
            const ledger = nodes[node];
            if (!ledger) throw new Error('no such node');
            if (refusal) {
              const err = thrownBy(BudgetExceededError, () => ledger.reserve(want));
              expect({ ledger: err.ledger, limit: err.limit }).toEqual(refusal);
            } else {
              held.push({ node, res: ledger.reserve(want), settled: false });
              for (const at of chain(node)) {
                const m = model[at];
                if (m) m.r = add(m.r, want, 1);
              }
            }
          } else if (held.length > 0) {
            const h = held[op.res % held.length];
            if (!h) throw new Error('no such reservation');
            const reservedAmounts = h.res.amounts;
            const actual =
              op.kind === 'commit'
                ? amounts(
                    Math.floor((reservedAmounts.tokensIn * op.fraction) / 100),
                    Math.floor((reservedAmounts.tokensOut * op.fraction) / 100),
                    Math.floor((reservedAmounts.costUsd * op.fraction) / 100),
                  )
                : amounts(0, 0, 0);
            if (op.kind === 'commit') h.res.commit(actual);
            else h.res.release();
            // A second settle of the same reservation must change nothing.
            if (!h.settled) {
              h.settled = true;
              for (const at of chain(h.node)) {
                const m = model[at];
                if (m) {
                  m.r = add(m.r, reservedAmounts, -1);
                  m.c = add(m.c, actual, 1);
                }
              }
            }
          }

          nodes.forEach((ledger, i) => {
            expect(ledger.committed).toEqual(model[i]?.c);
            expect(ledger.reserved).toEqual(model[i]?.r);
            for (const dim of DIMS) {
              const lim = limits[i]?.[LIMIT_KEY[dim]];
              if (lim !== undefined) {
                expect(ledger.committed[dim] + ledger.reserved[dim]).toBeLessThanOrEqual(lim);
              }
              const tightest = chain(i)
                .map((at) => left(at, dim))
                .reduce<number | null>(
                  (acc, l) => (l === null ? acc : acc === null ? l : Math.min(acc, l)),
                  null,
                );
              expect(ledger.remaining()[dim]).toBe(tightest);
            }
          });
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("BudgetLedger.claim with a shared budget (a fleet's ledger of the run)", () => {
  /** A shared budget of `limit` tokens out, in memory, recording what it was told. */
  function sharedOf(limit: number) {
    let held = 0;
    const settled: [number, number][] = [];
    const shared: SharedBudget = {
      reserve: async (a) => {
        await Promise.resolve();
        if (held + a.tokensOut > limit) {
          throw new BudgetExceededError('max_tokens_out', 'shared', a.tokensOut, limit - held);
        }
        held += a.tokensOut;
      },
      settle: (reserved, actual) => {
        held += actual.tokensOut - reserved.tokensOut;
        settled.push([reserved.tokensOut, actual.tokensOut]);
      },
    };
    return { shared, settled, held: () => held };
  }
  const out = (n: number): BudgetAmounts => ({ tokensIn: 0, tokensOut: n, costUsd: 0 });

  it("a child's claim reserves on its ancestor's shared budget too; commit and release settle it", async () => {
    const s = sharedOf(100);
    const step = new BudgetLedger('step', {}, new BudgetLedger('run'), s.shared);
    const child = step.child('tool');
    const a = await child.claim(out(60));
    expect(s.held()).toBe(60);
    a.commit(out(25));
    const b = await child.claim(out(70));
    b.release();
    expect(s.settled).toEqual([
      [60, 25],
      [70, 0],
    ]);
    expect(s.held()).toBe(25);
    expect(step.committed.tokensOut).toBe(25);
  });

  it('a claim the shared budget refuses rejects with its error and holds nothing here', async () => {
    const s = sharedOf(50);
    const run = new BudgetLedger('run', { maxTokensOut: 1_000 });
    const step = new BudgetLedger('step', {}, run, s.shared);
    await expect(step.claim(out(60))).rejects.toMatchObject({
      code: 'BUDGET_EXCEEDED',
      remaining: 50,
    });
    expect(run.reserved).toEqual(ZERO_AMOUNTS);
    expect(step.reserved).toEqual(ZERO_AMOUNTS);
    // A limit of the chain refuses before the shared budget is asked.
    const tight = new BudgetLedger('step', { maxTokensOut: 10 }, run, s.shared);
    await expect(tight.claim(out(20))).rejects.toMatchObject({ ledger: 'step' });
    expect(s.held()).toBe(0);
  });

  it('without a shared budget, claim is reserve', async () => {
    const ledger = new BudgetLedger('solo', { maxTokensOut: 10 });
    (await ledger.claim(out(10))).commit(out(4));
    expect(ledger.remaining().tokensOut).toBe(6);
    await expect(ledger.claim(out(7))).rejects.toBeInstanceOf(BudgetExceededError);
  });
});
