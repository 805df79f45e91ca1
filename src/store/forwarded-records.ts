/**
 * @module The part of a `RunStore` that the Redis, SQLite and Postgres stores keep in helpers
 * of their own — a run's checkpoints, call recordings and approvals — forwarded to them
 * once here, rather than by nine methods written again in each store.
 */
import type {
  ApprovalDecision,
  ApprovalRecord,
  CallRecording,
  CheckpointRecord,
  RecordingKey,
} from './records.js';
import type { RunStore } from './run-store.js';

/** Where a store keeps a run's checkpoints and call recordings. */
export type CheckpointBook = Pick<
  RunStore,
  'createCheckpoint' | 'listCheckpoints' | 'putRecording' | 'getRecording' | 'listRecordings'
>;

/** Where a store keeps a run's approvals. */
export type ApprovalBook = Pick<
  RunStore,
  'createApproval' | 'getApproval' | 'listApprovals' | 'decideApproval'
>;

/**
 * A store whose checkpoints, recordings and approvals live in helpers: it names them
 * (`checkpoints`, `approvals`, set in its constructor) and inherits the `RunStore` methods
 * that call them.
 */
export abstract class ForwardedRecords {
  /** The helper the store's checkpoints and call recordings go to. */
  protected abstract readonly checkpoints: CheckpointBook;
  /** The helper the store's approvals go to. */
  protected abstract readonly approvals: ApprovalBook;

  createCheckpoint(checkpoint: CheckpointRecord): Promise<void> {
    return this.checkpoints.createCheckpoint(checkpoint);
  }

  listCheckpoints(runId: string): Promise<CheckpointRecord[]> {
    return this.checkpoints.listCheckpoints(runId);
  }

  putRecording(recording: CallRecording): Promise<void> {
    return this.checkpoints.putRecording(recording);
  }

  getRecording(runId: string, key: RecordingKey): Promise<CallRecording | null> {
    return this.checkpoints.getRecording(runId, key);
  }

  listRecordings(runId: string): Promise<CallRecording[]> {
    return this.checkpoints.listRecordings(runId);
  }

  createApproval(
    approval: ApprovalRecord,
  ): Promise<{ readonly approval: ApprovalRecord; readonly created: boolean }> {
    return this.approvals.createApproval(approval);
  }

  getApproval(approvalId: string): Promise<ApprovalRecord | null> {
    return this.approvals.getApproval(approvalId);
  }

  listApprovals(runId: string): Promise<ApprovalRecord[]> {
    return this.approvals.listApprovals(runId);
  }

  decideApproval(approvalId: string, decision: ApprovalDecision): Promise<ApprovalRecord> {
    return this.approvals.decideApproval(approvalId, decision);
  }
}
