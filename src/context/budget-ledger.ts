/** @module The hierarchical budget ledger: reserve before a call, commit after, release on failure. */
import { BudgetExceededError, type BudgetLimit } from '../errors/budget-exceeded-error.js';
import { WideningError } from '../errors/widening-error.js';

/** Spendable amounts a ledger tracks. */
export interface BudgetAmounts {
  readonly tokensIn: number;
  readonly tokensOut: number;
  readonly costUsd: number;
}

/** Limits of one ledger; an omitted dimension is limited only by the ancestors. */
export interface BudgetLimits {
  readonly maxTokensIn?: number;
  readonly maxTokensOut?: number;
  readonly maxCostUsd?: number;
}

/** What is left at a ledger, taking every ancestor into account; `null` = unlimited. */
export interface BudgetRemaining {
  readonly tokensIn: number | null;
  readonly tokensOut: number | null;
  readonly costUsd: number | null;
}

const DIMENSIONS = [
  ['tokensIn', 'maxTokensIn', 'max_tokens_in'],
  ['tokensOut', 'maxTokensOut', 'max_tokens_out'],
  ['costUsd', 'maxCostUsd', 'max_cost_usd'],
] as const satisfies readonly (readonly [keyof BudgetAmounts, keyof BudgetLimits, BudgetLimit])[];

/**
 * Slack when comparing a request with what is left: costs are summed in floating point, so
 * three $0.10 calls must still fit a $0.30 budget.
 */
const TOLERANCE = 1e-9;

/** The amounts of nothing at all. */
export const ZERO_AMOUNTS: BudgetAmounts = Object.freeze({ tokensIn: 0, tokensOut: 0, costUsd: 0 });

function validateAmounts(where: string, a: BudgetAmounts): void {
  for (const [dim] of DIMENSIONS) {
    const v = a[dim];
    if (!(Number.isFinite(v) && v >= 0))
      throw new RangeError(`${where}: ${dim} must be a finite number >= 0, got ${v}`);
  }
}

/**
 * A budget kept outside this process, where every process's reservations meet (a fleet's run
 * ledger, in Redis): a ledger with one checks each reservation against it too, after its own
 * chain (see {@link BudgetLedger.claim}).
 */
export interface SharedBudget {
  /** Reserves `amounts`, or rejects with {@link BudgetExceededError} when they do not fit. */
  reserve(amounts: BudgetAmounts): Promise<void>;
  /**
   * Replaces a reservation of `reserved` by the use it became, `actual` (zero: released).
   * Sent, not awaited: a failure is the implementation's to report, and its worst is a
   * reservation held until its step ends.
   */
  settle(reserved: BudgetAmounts, actual: BudgetAmounts): void;
}

/**
 * A reservation held against a ledger and all its ancestors. Settle it exactly once with
 * {@link Reservation.commit} (actual use) or {@link Reservation.release} (the call failed
 * or was never made); settling twice is ignored.
 */
export class Reservation {
  #settled = false;

  /** @internal Created by {@link BudgetLedger.reserve}. */
  constructor(
    readonly ledger: BudgetLedger,
    readonly amounts: BudgetAmounts,
    /** The shared budget it is held against as well (see {@link BudgetLedger.claim}). */
    readonly shared: SharedBudget | null = null,
  ) {}

  /** True once committed or released. */
  get settled(): boolean {
    return this.#settled;
  }

  /**
   * Replaces the reservation with the actual use, at this ledger and every ancestor.
   * Actual use may exceed the reservation: it is recorded as it was, and later reservations
   * see the overrun.
   */
  commit(actual: BudgetAmounts): void {
    if (this.#settled) return;
    validateAmounts('Reservation.commit', actual);
    this.#settled = true;
    this.ledger.settle(this.amounts, actual);
    this.shared?.settle(this.amounts, actual);
  }

  /** Gives the reserved amounts back, at this ledger and every ancestor. */
  release(): void {
    if (this.#settled) return;
    this.#settled = true;
    this.ledger.settle(this.amounts, ZERO_AMOUNTS);
    this.shared?.settle(this.amounts, ZERO_AMOUNTS);
  }
}

/**
 * A budget ledger per context. A child ledger draws on its parent's: every reservation is
 * checked against this ledger and every ancestor, all at once, so any number of concurrent
 * children can never together spend more than an ancestor allows.
 *
 * @example
 * const run = new BudgetLedger('run', { maxTokensOut: 1000 });
 * const step = run.child('step');
 * const r = step.reserve({ tokensIn: 20, tokensOut: 200, costUsd: 0 }); // throws if it does not fit
 * r.commit({ tokensIn: 18, tokensOut: 150, costUsd: 0 });
 */
export class BudgetLedger {
  readonly #limits: BudgetLimits;
  #reserved: { tokensIn: number; tokensOut: number; costUsd: number } = {
    tokensIn: 0,
    tokensOut: 0,
    costUsd: 0,
  };
  #committed: { tokensIn: number; tokensOut: number; costUsd: number } = {
    tokensIn: 0,
    tokensOut: 0,
    costUsd: 0,
  };

  /** Told of every commit of use here or below (see {@link BudgetLedger.onCommit}). */
  #onCommit: (() => void) | null = null;

  constructor(
    /** A name for errors, usually the context's actor name. */
    readonly name: string,
    limits: BudgetLimits = {},
    readonly parent: BudgetLedger | null = null,
    /** A budget outside this process that {@link BudgetLedger.claim} checks here too. */
    readonly shared: SharedBudget | null = null,
  ) {
    for (const [, key] of DIMENSIONS) {
      const v = limits[key];
      if (v !== undefined && !(v >= 0))
        throw new RangeError(`BudgetLedger: ${key} must be >= 0, got ${v}`);
    }
    this.#limits = limits;
  }

  /** This ledger's own limits (not the ancestors'). */
  get limits(): BudgetLimits {
    return this.#limits;
  }

  /** Committed use at this ledger, including everything its descendants committed. */
  get committed(): BudgetAmounts {
    return { ...this.#committed };
  }

  /** Reserved and not yet settled, at this ledger and below. */
  get reserved(): BudgetAmounts {
    return { ...this.#reserved };
  }

  /** What can still be reserved here: the tightest of this ledger and its ancestors. */
  remaining(): BudgetRemaining {
    const up = this.parent?.remaining();
    const tighter = (dim: keyof BudgetAmounts): number | null => {
      const own = this.ownRemaining(dim);
      const above = up ? up[dim] : null;
      return own === null ? above : above === null ? own : Math.min(own, above);
    };
    return {
      tokensIn: tighter('tokensIn'),
      tokensOut: tighter('tokensOut'),
      costUsd: tighter('costUsd'),
    };
  }

  /**
   * Reserves `amounts` here and at every ancestor, or throws {@link BudgetExceededError}
   * naming the first limit and ledger that would be passed. Nothing is reserved on failure.
   */
  reserve(amounts: BudgetAmounts): Reservation {
    validateAmounts('BudgetLedger.reserve', amounts);
    // Check the whole chain before touching any of it: a refusal reserves nothing.
    this.#assertFits(amounts);
    this.#addReserved(amounts);
    return new Reservation(this, amounts);
  }

  /**
   * Reserves `amounts` as {@link BudgetLedger.reserve} does, then against the nearest shared
   * budget of this ledger and its ancestors (the fleet's ledger of a run): a refusal there
   * gives back what was reserved here. What every engine call reserves through, so that no
   * set of concurrent calls in any number of processes together passes a limit.
   */
  async claim(amounts: BudgetAmounts): Promise<Reservation> {
    let shared = this.shared;
    for (let at = this.parent; at && !shared; at = at.parent) shared = at.shared;
    validateAmounts('BudgetLedger.claim', amounts);
    this.#assertFits(amounts);
    this.#addReserved(amounts);
    if (shared) {
      try {
        await shared.reserve(amounts);
      } catch (err) {
        this.settle(amounts, ZERO_AMOUNTS);
        throw err;
      }
    }
    return new Reservation(this, amounts, shared);
  }

  #assertFits(amounts: BudgetAmounts): void {
    for (const [dim, , limitName] of DIMENSIONS) {
      const left = this.ownRemaining(dim);
      if (left !== null && amounts[dim] > left + TOLERANCE) {
        throw new BudgetExceededError(limitName, this.name, amounts[dim], Math.max(0, left));
      }
    }
    if (this.parent) this.parent.#assertFits(amounts);
  }

  #addReserved(amounts: BudgetAmounts): void {
    this.#reserved.tokensIn += amounts.tokensIn;
    this.#reserved.tokensOut += amounts.tokensOut;
    this.#reserved.costUsd += amounts.costUsd;
    if (this.parent) this.parent.#addReserved(amounts);
  }

  /** Records use that was not reserved first (for example usage reported after the fact). */
  record(actual: BudgetAmounts): void {
    // Use that already happened is recorded even past a limit: the ledger must not lie.
    validateAmounts('BudgetLedger.record', actual);
    this.settle(ZERO_AMOUNTS, actual);
  }

  /**
   * A child ledger. Each requested limit must fit what this ledger has left, or
   * {@link WideningError} is thrown; omitted limits are bounded by the ancestors anyway.
   */
  child(name: string, limits: BudgetLimits = {}): BudgetLedger {
    const left = this.remaining();
    for (const [dim, key] of DIMENSIONS) {
      const want = limits[key];
      const have = left[dim];
      if (want !== undefined && have !== null && want > have) {
        throw new WideningError(`budgets.${key}`, want, have);
      }
    }
    return new BudgetLedger(name, limits, this);
  }

  /**
   * Sets the one listener told, synchronously, each time use is committed here or at a
   * descendant (after {@link BudgetLedger.committed} counts it); `null` removes it. A step
   * uses it to keep its stored usage current, so that a runtime restarted after a crash knows
   * what the interrupted step had spent (POLICY-3000).
   */
  onCommit(listener: (() => void) | null): void {
    this.#onCommit = listener;
  }

  /**
   * @internal Moves `reserved` out of the reservations and `actual` into committed use, here
   * and at every ancestor.
   */
  settle(reserved: BudgetAmounts, actual: BudgetAmounts): void {
    this.#reserved.tokensIn -= reserved.tokensIn;
    this.#reserved.tokensOut -= reserved.tokensOut;
    this.#reserved.costUsd -= reserved.costUsd;
    this.#committed.tokensIn += actual.tokensIn;
    this.#committed.tokensOut += actual.tokensOut;
    this.#committed.costUsd += actual.costUsd;
    if (this.#onCommit && (actual.tokensIn > 0 || actual.tokensOut > 0 || actual.costUsd > 0)) {
      this.#onCommit();
    }
    this.parent?.settle(reserved, actual);
  }

  private ownRemaining(dim: keyof BudgetAmounts): number | null {
    const key =
      dim === 'tokensIn' ? 'maxTokensIn' : dim === 'tokensOut' ? 'maxTokensOut' : 'maxCostUsd';
    const limit = this.#limits[key];
    if (limit === undefined) return null;
    return limit - this.#committed[dim] - this.#reserved[dim];
  }
}
