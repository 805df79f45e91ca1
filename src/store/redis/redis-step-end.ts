/**
 * @module A step's end as one operation of the Redis store's script: `Op.endStep` (its last
 * events, its record's end, its use added to its run), or, for a durable agent's message,
 * `Op.endMessage`, which writes its actor's state and mailbox with it (`StepEnd.actor`).
 */
import type { StepEnd } from '../run-store.js';
import type { ScriptOp } from './redis-batch.js';
import type { RedisActors } from './redis-actors.js';
import { toFields } from './redis-fields.js';
import { Op } from './redis-scripts.js';

/**
 * The operation that writes `end`: `keys` are the step's hash, its run's hash and ledger. `stepIds` are the steps the append's refusal counts (see `throwIfRefused`).
 * `TypeError` for an event of another step (but one merged into a message).
 */
export function stepEndOp(
  end: StepEnd,
  keys: readonly [string, string, string],
  actors: RedisActors,
): { readonly op: ScriptOp; readonly stepIds: readonly string[] } {
  const patch = toFields(end.patch);
  const tail = [String(patch.length), ...patch];
  const usage = end.runUsage;
  if (usage) {
    tail.push(
      String(usage.tokens_in),
      String(usage.tokens_out),
      String(usage.cost_usd),
      String(usage.wall_ms),
      end.stepId,
    );
  }
  if (end.actor) return actors.endOp({ ...end, actor: end.actor }, keys, tail);
  const args = [String(end.events.length)];
  for (const ev of end.events) {
    if (ev.step_id !== end.stepId) throw new TypeError(`endStep: an event of step ${ev.step_id}`);
    args.push(String(ev.seq), JSON.stringify(ev));
  }
  return { op: { code: Op.endStep, keys, args: [...args, ...tail] }, stepIds: [end.stepId] };
}
