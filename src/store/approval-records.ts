/** @module What every store does alike with approvals: apply a decision, refuse a second one. */
import { ConflictError } from '../errors/conflict-error.js';
import type { ApprovalDecision, ApprovalRecord } from './records.js';

/**
 * `approval` with `decision` applied. `ConflictError` (with `details.status`) when it was
 * already decided: a decision is made once.
 */
export function decided(approval: ApprovalRecord, decision: ApprovalDecision): ApprovalRecord {
  if (approval.status !== 'pending') {
    throw new ConflictError(
      `approval ${approval.approval_id} was already ${approval.status}${approval.decided_by === null ? '' : ` by ${approval.decided_by}`}`,
      { details: { status: approval.status, decided_by: approval.decided_by } },
    );
  }
  return {
    ...approval,
    status: decision.status,
    decided_by: decision.decided_by,
    reason: decision.reason,
    decided_at: decision.decided_at,
  };
}
