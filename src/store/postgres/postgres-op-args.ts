/**
 * @module The PostgreSQL store's writes as its SQL functions take them (`postgres-functions.ts`):
 * a run of events' seqs, run and step patches, a message's end to its actor, a reservation's
 * holder.
 */
import type { StepEvent } from '../../streams/events.js';
import type { ActorEndWrite } from '../actor-records.js';
import type { BudgetHolder } from '../budget-reservations.js';
import type { RunPatch, StepPatch } from '../records.js';
import type { WriteTarget } from '../write-target.js';

/**
 * `events`' step and seqs when they are one step's, first … last without a gap: the batch
 * the `append_run` and `end_run` functions take (one statement checks and moves the log).
 */
export function seqRun(
  events: readonly StepEvent[],
): { stepId: string; first: number; last: number } | null {
  const head = events[0];
  if (!head) return null;
  for (let i = 1; i < events.length; i++) {
    const ev = events[i] as StepEvent;
    if (ev.step_id !== head.step_id || ev.seq !== head.seq + i) return null;
  }
  return { stepId: head.step_id, first: head.seq, last: head.seq + events.length - 1 };
}

/** A run's patch as the `update_run` function merges it: only the fields a patch may set. */
export function runPatch(patch: RunPatch): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (patch.status !== undefined) out['status'] = patch.status;
  if (patch.budget_usage) out['budget_usage'] = patch.budget_usage;
  if (patch.provenance !== undefined) out['provenance'] = patch.provenance;
  if (patch.ended_at !== undefined) out['ended_at'] = patch.ended_at;
  return out;
}

/** A step's patch as `update_step` takes it: fields merged, and `output` dropped when unset. */
export function stepPatch(patch: StepPatch): { patch: Record<string, unknown>; drop: string[] } {
  const out: Record<string, unknown> = {};
  const drop: string[] = [];
  if (patch.status !== undefined) out['status'] = patch.status;
  if (patch.budget_usage) out['budget_usage'] = patch.budget_usage;
  if (patch.provenance !== undefined) out['provenance'] = patch.provenance;
  if ('output' in patch) {
    if (patch.output === undefined) drop.push('output');
    else out['output'] = patch.output;
  }
  if (patch.error !== undefined) out['error'] = patch.error;
  if (patch.started_at !== undefined) out['started_at'] = patch.started_at;
  if (patch.ended_at !== undefined) out['ended_at'] = patch.ended_at;
  if (patch.first_token_at !== undefined) out['first_token_at'] = patch.first_token_at;
  return { patch: out, drop };
}

/** A message's end to its actor as `end_message` takes it: merged steps' patches as `update_step`'s. */
export function actorEnd(write: ActorEndWrite): Record<string, unknown> {
  return {
    actor_id: write.actor_id,
    ...(write.state ? { state: write.state } : {}),
    updated_at: write.updated_at,
    merged: (write.merged ?? []).map((m) => ({ id: m.stepId, ...stepPatch(m.patch) })),
  };
}

/** A reservation's holder as the `reserve` and `settle` functions take it. */
export const holderArgs = (h: BudgetHolder) => ({
  run_id: h.runId,
  step_id: h.stepId,
  token: h.token,
});
/** What a reservation is about, for its fence. */
export const holderTarget = (h: BudgetHolder): WriteTarget => ({
  runId: h.runId,
  stepId: h.stepId,
});
