/**
 * @module A submitted step's budgets (POLICY-3000): what its run has left (its limits less
 * what its steps used, in the store), the step's own limits and wall time, and the ledger a
 * run's steps running in one runtime share, so that together they cannot pass what the run
 * has left — and, on a store shared by processes (a fleet's), the run's ledger in the store,
 * which every process's steps reserve on.
 */
import { randomBytes } from 'node:crypto';
import type { z } from 'zod';
import {
  BudgetLedger,
  type BudgetAmounts,
  type BudgetLimits,
  type SharedBudget,
} from '../context/budget-ledger.js';
import { InternalError } from '../errors/internal-error.js';
import type { Logger } from '../observability/logger.js';
import type { BudgetDraw, BudgetReservations } from '../store/budget-reservations.js';
import type { Budgets } from '../context/exec-context.js';
import type { wireBudgetsSchema } from '../runs/request-bodies.js';
import type { RunRecord } from '../store/records.js';

/** What a run has left of its budgets: its limits less what its steps used (in the store). */
export function runBudgetsLeft(run: Pick<RunRecord, 'budgets' | 'budget_usage'>): BudgetLimits {
  const left = (limit: number | undefined, used: number): number | undefined =>
    limit === undefined ? undefined : Math.max(0, limit - used);
  const { budgets, budget_usage: used } = run;
  const out: { -readonly [K in keyof BudgetLimits]: number } = {};
  const tokensIn = left(budgets.max_tokens_in, used.tokens_in);
  const tokensOut = left(budgets.max_tokens_out, used.tokens_out);
  const cost = left(budgets.max_cost_usd, used.cost_usd);
  if (tokensIn !== undefined) out.maxTokensIn = tokensIn;
  if (tokensOut !== undefined) out.maxTokensOut = tokensOut;
  if (cost !== undefined) out.maxCostUsd = cost;
  return out;
}

/**
 * A submitted step's own budgets as a context's. Its token and cost limits are its own (the
 * run's are on the run's shared ledger); its wall time is the smaller of its own and what
 * is left of the run's since the run was created.
 */
export function stepBudgets(
  run: Pick<RunRecord, 'budgets' | 'created_at'>,
  step: z.infer<typeof wireBudgetsSchema> | undefined,
  now: number,
): Budgets {
  const out: { -readonly [K in keyof Budgets]: number } = {};
  if (step?.max_tokens_in !== undefined) out.maxTokensIn = step.max_tokens_in;
  if (step?.max_tokens_out !== undefined) out.maxTokensOut = step.max_tokens_out;
  if (step?.max_cost_usd !== undefined) out.maxCostUsd = step.max_cost_usd;
  const runWall = run.budgets.max_wall_ms;
  const runLeft =
    runWall === undefined ? undefined : Math.max(0, runWall - (now - Date.parse(run.created_at)));
  const wall =
    runLeft === undefined ? step?.max_wall_ms : Math.min(runLeft, step?.max_wall_ms ?? Infinity);
  if (wall !== undefined) out.maxWallMs = wall;
  return out;
}

/**
 * The ledgers of runs with steps running in this runtime: one per run, shared by its steps
 * (a step's ledger draws on it), made from what the store says the run has left when its
 * first step starts and dropped when its last one ends.
 */
export class RunLedgers {
  readonly #live = new Map<string, { ledger: BudgetLedger; steps: number }>();

  /**
   * Whether run `runId` has a step here between its `acquire` and its `release`: a run its
   * submission read from the store (taking steps) — known to be there.
   */
  has(runId: string): boolean {
    return this.#live.has(runId);
  }

  /** The run's shared ledger for one more step; call the returned `release` when it ends. */
  acquire(run: RunRecord): { readonly ledger: BudgetLedger; readonly release: () => void } {
    let entry = this.#live.get(run.run_id);
    if (!entry) {
      entry = { ledger: new BudgetLedger(`run ${run.run_id}`, runBudgetsLeft(run)), steps: 0 };
      this.#live.set(run.run_id, entry);
    }
    entry.steps++;
    const held = entry;
    let released = false;
    return {
      ledger: held.ledger,
      release: () => {
        if (released) return;
        released = true;
        if (--held.steps === 0 && this.#live.get(run.run_id) === held) {
          this.#live.delete(run.run_id);
        }
      },
    };
  }
}

/** Whether `run` has a budget the shared ledger draws on (tokens or cost). */
export function drawsOnBudgets(run: Pick<RunRecord, 'budgets'>): boolean {
  const b = run.budgets;
  return (
    b.max_tokens_in !== undefined || b.max_tokens_out !== undefined || b.max_cost_usd !== undefined
  );
}

const draw = (a: BudgetAmounts): BudgetDraw => ({
  tokens_in: a.tokensIn,
  tokens_out: a.tokensOut,
  cost_usd: a.costUsd,
});

/**
 * One attempt at a submitted step, reserving on its run's ledger in the store (the fleet's,
 * shared by every process): its token is new for each attempt, so a step another process
 * takes over starts a new entry and drops the lost one's. It reserves once it knows its
 * step (`bind`, when the step is claimed); its entry leaves the ledger when the step's use
 * enters the run's.
 */
export class StoredRunBudget implements SharedBudget {
  readonly #reservations: BudgetReservations;
  readonly #run: Pick<RunRecord, 'run_id' | 'budgets'>;
  readonly #logger: Logger;
  readonly #token = randomBytes(8).toString('hex');
  #stepId: string | null = null;

  constructor(
    reservations: BudgetReservations,
    run: Pick<RunRecord, 'run_id' | 'budgets'>,
    logger: Logger,
  ) {
    this.#reservations = reservations;
    this.#run = run;
    this.#logger = logger;
  }

  /** The submitted step this attempt is at: its reservations are that step's. */
  bind(stepId: string): void {
    this.#stepId = stepId;
  }

  #holder() {
    if (this.#stepId === null) {
      throw new InternalError(
        `a reservation on run ${this.#run.run_id} before its step was claimed`,
      );
    }
    return { runId: this.#run.run_id, stepId: this.#stepId, token: this.#token };
  }

  async reserve(amounts: BudgetAmounts): Promise<void> {
    await this.#reservations.reserve(this.#holder(), draw(amounts), this.#run.budgets);
  }

  settle(reserved: BudgetAmounts, actual: BudgetAmounts): void {
    const delta = draw({
      tokensIn: actual.tokensIn - reserved.tokensIn,
      tokensOut: actual.tokensOut - reserved.tokensOut,
      costUsd: actual.costUsd - reserved.costUsd,
    });
    const holder = this.#holder();
    this.#reservations.settle(holder, delta).catch((err: unknown) => {
      // Its worst: the entry keeps the reservation until the step's use replaces it.
      this.#logger.warn(
        { err, run_id: holder.runId, step_id: holder.stepId },
        "a settled reservation could not be written to the run's shared ledger",
      );
    });
  }
}
