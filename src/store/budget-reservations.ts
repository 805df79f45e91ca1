/**
 * @module Reservations against a run's budgets that every process sharing a store sees (the
 * Redis store's, `RedisStore.budgets`): what makes a run's budgets hold on a fleet, where
 * its steps run at once in several processes (POLICY-3000). Each running step keeps one
 * entry — what it has reserved and used so far, under the token of the attempt holding it —
 * and a reservation fits only if the run's ended steps' use, every running step's entry and
 * the request together stay within the run's limits, checked and taken in one script.
 */
import type { WireBudgets } from './records.js';

/** The amounts a reservation is of. */
export interface BudgetDraw {
  readonly tokens_in: number;
  readonly tokens_out: number;
  readonly cost_usd: number;
}

/** Whose reservation: one attempt at a submitted step of a run. */
export interface BudgetHolder {
  readonly runId: string;
  /** The submitted step (its tree's use is its). */
  readonly stepId: string;
  /**
   * The attempt: a step taken over by another process (its first one lost) holds a new
   * token, and its first reservation drops the lost attempt's entry.
   */
  readonly token: string;
}

/** A store's shared reservations; see the module. */
export interface BudgetReservations {
  /**
   * Adds `draw` to `holder`'s entry if it fits the run's `limits` (its `max_tokens_in`,
   * `max_tokens_out`, `max_cost_usd`; others are not drawn on); rejects with
   * `BudgetExceededError` naming the first limit that would be passed (nothing is
   * reserved), `NotFoundError` without the run, `WorkerLostError` when the writer's fence
   * no longer holds.
   */
  reserve(holder: BudgetHolder, draw: BudgetDraw, limits: WireBudgets): Promise<void>;
  /**
   * Adds `delta` (negative to give back) to `holder`'s entry; nothing once it is gone (its
   * step ended, or another attempt took it over). A step's entry leaves the ledger when its
   * use enters its run's (`RunStore.addRunUsage` with the step's id), in the same write.
   */
  settle(holder: BudgetHolder, delta: BudgetDraw): Promise<void>;
}
