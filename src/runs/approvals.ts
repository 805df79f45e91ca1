/**
 * @module Approvals, the human in the loop (issue 6). When the policy lets a call go on only
 * once someone approves it, the step submitted to the run whose tree made the call is
 * suspended — not held in a waiting promise: an approval request is stored with the step's
 * persisted lifecycle, the step says in a `narration` who must approve, the work under it
 * stops, its record becomes `waiting` and so does its run. Nothing of it stays in memory.
 *
 * `approve` runs the step again under its id and client token, from the store (in this
 * process or another, after a restart too): the calls it had made are served from the run's
 * own recording instead of being made again, the events it had emitted are not emitted
 * twice, and the approved call goes on. `reject` fails the step with `POLICY_DENIED` and an
 * `escalation` (POLICY-3002); the rejected call never runs.
 *
 * A call needs a place to be found again after the decision: only a step submitted to a
 * run with a `client_token` can wait; anywhere else (`runtime.invoke`, a step without a
 * token) a call that needs approval is refused with `POLICY_DENIED`.
 */
import type { SnapshotFrom } from 'xstate';
import { z } from 'zod';
import { isoTime } from '../context/clock.js';
import { ConflictError } from '../errors/conflict-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import { PolicyDeniedError } from '../errors/policy-denied-error.js';
import { toErrorPayload } from '../errors/to-error-payload.js';
import type { ApprovalRecord, StepRecord } from '../store/records.js';
import { flushed, stopWaiting, type RunStore } from '../store/run-store.js';
import { rejection, type ApprovalDeps } from './approval-gate.js';
import { parseBody } from './request-bodies.js';
import { StepLifecycle } from '../actors/step-lifecycle.js';
import type { stepMachine } from '../actors/step-machine.js';
import { resubmission, type ResumeFrom, type SubmittedStep } from './submitted-step.js';
import { endStoredStep } from './stored-step-end.js';

/**
 * Suspended steps another part of the runtime goes on with itself: a durable actor's message
 * waits in its actor's mailbox, and runs again there, not as a step submitted anew.
 */
export interface HeldSteps {
  /**
   * Whether `step` is one it holds; if so it is made findable again (its actor marked as having
   * work) before the decision is stored, so that a runtime stopped in between goes on with it.
   */
  hold(step: StepRecord): Promise<boolean>;
  /** The decision on held `step` is stored: its holder runs it again, to its end. */
  decided(step: StepRecord): Promise<void>;
}

/** What deciding needs besides: a way to submit a suspended step again. */
export interface DecisionDeps extends ApprovalDeps {
  resubmit(runId: string, body: unknown, resume: ResumeFrom): Promise<SubmittedStep>;
  /** The steps something else goes on with (durable actors' messages). */
  readonly held?: HeldSteps;
}

/** The body of a decision: who decides, and why. */
export const decisionBodySchema = z
  .object({
    by: z.string().min(1).max(256),
    reason: z.string().max(4096).optional(),
  })
  .strict();

/** What a decision did. */
export interface DecidedApproval {
  readonly approval: ApprovalRecord;
  /**
   * For `approve`: the step going on again (same id); `null` after `reject`, and for a durable
   * actor's message, which goes on in its actor (follow it there: its step's stream, or the
   * actor's).
   */
  readonly step: SubmittedStep | null;
}

/**
 * Decides approval `approvalId` (`body`: `{ by, reason? }`) and acts on it: an approved
 * step goes on, a rejected one fails. `NotFoundError` for an unknown approval,
 * `SchemaViolationError` for a bad body, `PolicyDeniedError` when `by` is not one of its
 * approvers, `ConflictError` when it was already decided or its step no longer waits.
 */
export async function decideApproval(
  deps: DecisionDeps,
  approvalId: string,
  verdict: 'approved' | 'rejected',
  body: unknown,
): Promise<DecidedApproval> {
  const { by, reason } = parseBody(decisionBodySchema, 'approval decision', body);
  const pending = await deps.store.getApproval(approvalId);
  if (!pending) throw new NotFoundError('approval', approvalId);
  if (!pending.approvers.includes(by)) {
    throw new PolicyDeniedError(
      'approve',
      approvalId,
      pending.rule,
      `"${by}" may not decide approval ${approvalId}: its approvers are ${pending.approvers.join(', ')}`,
      { details: { approvers: pending.approvers } },
    );
  }
  const step = await waitingStep(deps.store, pending);
  const held = (await deps.held?.hold(step)) ?? false;
  const approval = await deps.store.decideApproval(approvalId, {
    status: verdict,
    decided_by: by,
    reason: reason ?? null,
    decided_at: isoTime(deps.clock.now()),
  });
  deps.logger.info(
    { approval_id: approvalId, run_id: approval.run_id, status: verdict, by },
    'approval decided',
  );
  if (held && deps.held) {
    // Its holder runs it again: approved, the call goes on; rejected, the call is refused
    // there (POLICY_DENIED, which its handler may catch).
    await stopWaiting(deps.store, step.run_id, step.step_id);
    await deps.held.decided(step);
    return { approval, step: null };
  }
  const settled = await settleDecided(deps, step, approval);
  return { approval, step: settled };
}

/** The step `approval` suspended, still waiting; `ConflictError` once it is not. */
async function waitingStep(store: RunStore, approval: ApprovalRecord): Promise<StepRecord> {
  const step = await store.getStep(approval.step_id);
  if (!step) throw new NotFoundError('step', approval.step_id);
  if (step.status !== 'waiting') {
    throw new ConflictError(
      `step ${step.step_id} is ${step.status}: it no longer waits for approval ${approval.approval_id}`,
      { details: { status: step.status } },
    );
  }
  return step;
}

/**
 * Acts on the decision of `approval`, which `step` waits for: runs it again when approved,
 * fails it when rejected; the run waits no more once none of its approvals is pending.
 * Also how a restarted runtime finishes a decision its predecessor stored but did not act on.
 */
export async function settleDecided(
  deps: DecisionDeps,
  step: StepRecord,
  approval: ApprovalRecord,
): Promise<SubmittedStep | null> {
  await stopWaiting(deps.store, step.run_id, step.step_id);
  if (approval.status === 'rejected') {
    const refusal = rejection(approval);
    await endStoredStep(deps, step, {
      status: 'failed',
      error: toErrorPayload(refusal),
      escalation: { reason: refusal.message, target: `${approval.action}:${approval.target}` },
      snapshot: approval.snapshot,
    });
    await flushed(deps.store);
    return null;
  }
  const events = await deps.store.readEvents(step.step_id);
  const lifecycle = StepLifecycle.fromLog(
    step.step_id,
    events,
    approval.snapshot as SnapshotFrom<typeof stepMachine>,
  );
  // Its work emits again what it emitted before, checked against the log; the narration
  // each approval it asked for added, which the work does not emit again, is passed over.
  const body = resubmission(step);
  if (body === null) {
    throw new ConflictError(`step ${step.step_id} (${step.type}) cannot be run again`);
  }
  return deps.resubmit(step.run_id, body, {
    record: step,
    lifecycle,
    logged: events,
  });
}

/**
 * The steps of `runId` that wait for an approval already decided (a runtime stopped between
 * storing a decision and acting on it), with that decision.
 */
export async function decidedButWaiting(
  store: RunStore,
  runId: string,
): Promise<{ readonly step: StepRecord; readonly approval: ApprovalRecord }[]> {
  const waiting = (await store.listSteps(runId)).filter((s) => s.status === 'waiting');
  if (waiting.length === 0) return [];
  const approvals = await store.listApprovals(runId);
  const out: { step: StepRecord; approval: ApprovalRecord }[] = [];
  for (const step of waiting) {
    const latest = approvals.filter((a) => a.step_id === step.step_id).at(-1);
    if (latest && latest.status !== 'pending') out.push({ step, approval: latest });
  }
  return out;
}
