/**
 * @module The Redis store's shared budget reservations (`budget-reservations.ts`): a run's
 * ledger is the hash `<run key>:ledger`, reserved and settled by the store's script
 * (`Op.reserve`, `Op.settle`), in the batch of the turn and behind the writer's fence.
 */
import { BudgetExceededError, type BudgetLimit } from '../../errors/budget-exceeded-error.js';
import { NotFoundError } from '../../errors/not-found-error.js';
import type { BudgetDraw, BudgetHolder, BudgetReservations } from '../budget-reservations.js';
import type { WriteTarget } from './redis-batch.js';
import { Op, type OpCode } from './redis-scripts.js';

/** The limits of `Op.reserve`'s dimensions, in its order. */
const LIMITS = [
  'max_tokens_in',
  'max_tokens_out',
  'max_cost_usd',
] as const satisfies readonly BudgetLimit[];

/** A run's budget ledger's key, from its hash's. */
export const ledgerKey = (runKey: string): string => `${runKey}:ledger`;

/**
 * Reservations made by `write` (one operation of the store's script) on the ledgers of the
 * runs whose hashes `runKey` names.
 */
export function redisBudgets(
  write: (code: OpCode, keys: string[], args: string[], target: WriteTarget) => Promise<unknown>,
  runKey: (runId: string) => string,
): BudgetReservations {
  const amounts = (d: BudgetDraw): string[] => [
    String(d.tokens_in),
    String(d.tokens_out),
    String(d.cost_usd),
  ];
  const target = (h: BudgetHolder): WriteTarget => ({ runId: h.runId, stepId: h.stepId });
  return {
    async reserve(holder, draw, limits) {
      const run = runKey(holder.runId);
      const out = await write(
        Op.reserve,
        [run, ledgerKey(run)],
        [
          holder.stepId,
          holder.token,
          ...amounts(draw),
          ...LIMITS.map((l) => (limits[l] === undefined ? '' : String(limits[l]))),
        ],
        target(holder),
      );
      if (out === 0) throw new NotFoundError('run', holder.runId);
      if (Array.isArray(out) && out[0] === 'over') {
        const dim = Number(out[1]) - 1;
        const limit = LIMITS[dim] ?? 'max_tokens_out';
        const asked = [draw.tokens_in, draw.tokens_out, draw.cost_usd][dim] ?? 0;
        throw new BudgetExceededError(limit, `run ${holder.runId}`, asked, Number(out[2]));
      }
    },
    async settle(holder, delta) {
      const run = runKey(holder.runId);
      await write(
        Op.settle,
        [ledgerKey(run)],
        [holder.stepId, holder.token, ...amounts(delta)],
        target(holder),
      );
    },
  };
}
