/**
 * @module The gate's side of approvals (see `approvals.ts`): a call the policy lets go on
 * only once someone approves it either finds its decision or suspends its submitted step.
 */
import { isoTime, type Clock } from '../context/clock.js';
import type { ExecContext } from '../context/exec-context.js';
import { PolicyDeniedError } from '../errors/policy-denied-error.js';
import { StepSuspendedError } from '../errors/step-suspended-error.js';
import type { Logger } from '../observability/logger.js';
import type { PolicyAction, PolicyDecision } from '../policy/policy-engine.js';
import type { ApprovalRecord } from '../store/records.js';
import type { RunStore } from '../store/run-store.js';
import { runCallsOf } from './run-calls.js';

/** What approvals need from the runtime. */
export interface ApprovalDeps {
  readonly store: RunStore;
  readonly clock: Clock;
  readonly logger: Logger;
}

/**
 * The gate's part: `decision` wants an approval of `action`, made under `ctx`. Resolves
 * when the call was approved; throws {@link PolicyDeniedError} when it was rejected (after
 * an `escalation` on `escalateTo`'s step) or cannot wait; otherwise stores the request,
 * suspends the submitted step and throws the {@link StepSuspendedError} it was suspended
 * with.
 */
export async function awaitApproval(
  deps: ApprovalDeps,
  action: PolicyAction,
  decision: PolicyDecision,
  ctx: ExecContext,
  escalateTo: ExecContext,
): Promise<void> {
  const rule = decision.rule ?? 'approvals';
  const who = decision.approvers.join(' or ') || 'an approver';
  const calls = runCallsOf(ctx);
  const root = calls?.root ?? null;
  const approvalId = calls?.nextApprovalId(ctx.path) ?? null;
  if (!calls || !root || approvalId === null || calls.clientToken === null) {
    throw new PolicyDeniedError(
      action.kind,
      action.target,
      rule,
      `needs approval by ${who}; only a step submitted to a run with a client_token can wait for one`,
      { details: { approvers: decision.approvers } },
    );
  }
  const request: ApprovalRecord = {
    approval_id: approvalId,
    run_id: calls.runId,
    step_id: root.stepId,
    client_token: calls.clientToken,
    actor_path: ctx.path.slice(1),
    action: action.kind,
    target: action.target,
    subject: action.subject,
    rule,
    approvers: decision.approvers,
    status: 'pending',
    snapshot: root.persistedSnapshot(),
    requested_at: isoTime(deps.clock.now()),
    decided_by: null,
    reason: null,
    decided_at: null,
  };
  const { approval, created } = await deps.store.createApproval(request);
  if (approval.status === 'approved') return;
  if (approval.status === 'rejected') {
    const refusal = rejection(approval);
    if (escalateTo.stepId !== null) {
      escalateTo.stream.escalate({
        reason: refusal.message,
        target: `${action.kind}:${action.target}`,
      });
    }
    throw refusal;
  }
  // Pending: put the submitted step aside until somebody decides.
  const run = await deps.store.getRun(calls.runId);
  if (run?.status === 'running') await deps.store.updateRun(calls.runId, { status: 'waiting' });
  const text = `waiting for approval ${approvalId}: ${action.kind} "${action.target}" needs approval by ${who} (rule ${rule})`;
  if (root.isOpen()) root.narrate(text);
  if (created) {
    deps.logger.info(
      { approval_id: approvalId, run_id: calls.runId, step_id: root.stepId, target: action.target },
      'approval requested',
    );
  }
  const reason = new StepSuspendedError(approvalId, root.stepId, text);
  root.ctx.cancel(reason);
  throw reason;
}

/** The refusal a rejected approval gives. */
export function rejection(approval: ApprovalRecord): PolicyDeniedError {
  const why = approval.reason === null ? '' : `: ${approval.reason}`;
  return new PolicyDeniedError(
    approval.action,
    approval.target,
    approval.rule,
    `approval ${approval.approval_id} was rejected by ${approval.decided_by ?? 'an approver'}${why}`,
    { details: { approval_id: approval.approval_id, decided_by: approval.decided_by } },
  );
}
