/**
 * @module What a run keeps beside its steps in the Redis store: its checkpoints (a list),
 * its call recordings (a hash by call key, and the keys in the order first stored) and its
 * approvals (a key each, and the run's list of their ids). Writes are operations of the
 * store's script (`redis-scripts.ts`), through the store's batch.
 */
import type { RedisClient } from './redis-connection.js';
import { NotFoundError } from '../../errors/not-found-error.js';
import { decided } from '../approval-records.js';
import type { WriteTarget } from './redis-batch.js';
import { keyPart } from './redis-fields.js';
import { Op, type OpCode } from './redis-scripts.js';
import { recordingKey } from '../records.js';
import type {
  ApprovalDecision,
  ApprovalRecord,
  CallRecording,
  CheckpointRecord,
  RecordingKey,
} from '../records.js';

/** A run's checkpoints, recordings and approvals on Redis; see the module. */
export class RedisRunRecords {
  readonly #prefix: string;
  readonly #read: () => RedisClient;
  readonly #write: (
    code: OpCode,
    keys: readonly string[],
    args: readonly string[],
    target?: WriteTarget,
  ) => Promise<unknown>;

  /** `read` gives the connection for a read (the turn's writes sent first); `write` queues an operation. */
  constructor(
    prefix: string,
    read: () => RedisClient,
    write: (
      code: OpCode,
      keys: readonly string[],
      args: readonly string[],
      target?: WriteTarget,
    ) => Promise<unknown>,
  ) {
    this.#prefix = prefix;
    this.#read = read;
    this.#write = write;
  }

  #run(id: string): string {
    return `${this.#prefix}run:${id}`;
  }

  #approval(id: string): string {
    return `${this.#prefix}approval:${id}`;
  }

  async createCheckpoint(checkpoint: CheckpointRecord): Promise<void> {
    const r = await this.#write(
      Op.appendIfRun,
      [this.#run(checkpoint.run_id), `${this.#run(checkpoint.run_id)}:checkpoints`],
      [JSON.stringify(checkpoint)],
      { stepId: checkpoint.step_id ?? undefined, runId: checkpoint.run_id },
    );
    if (r === -1) throw new NotFoundError('run', checkpoint.run_id);
  }

  async listCheckpoints(runId: string): Promise<CheckpointRecord[]> {
    const items = await this.#read().lrange(`${this.#run(runId)}:checkpoints`, 0, -1);
    return items.map((s) => JSON.parse(s) as CheckpointRecord);
  }

  async putRecording(recording: CallRecording): Promise<void> {
    const run = this.#run(recording.run_id);
    const r = await this.#write(
      Op.putRecording,
      [run, `${run}:recordings`, `${run}:recording-keys`],
      [recordingKey(recording), JSON.stringify(recording)],
      { runId: recording.run_id, clientToken: recording.client_token },
    );
    if (r === -1) throw new NotFoundError('run', recording.run_id);
  }

  async getRecording(runId: string, key: RecordingKey): Promise<CallRecording | null> {
    const raw = await this.#read().hget(`${this.#run(runId)}:recordings`, recordingKey(key));
    return raw === null ? null : (JSON.parse(raw) as CallRecording);
  }

  async listRecordings(runId: string): Promise<CallRecording[]> {
    const run = this.#run(runId);
    const keys = await this.#read().lrange(`${run}:recording-keys`, 0, -1);
    if (keys.length === 0) return [];
    const values = await this.#read().hmget(`${run}:recordings`, ...keys);
    return values.flatMap((v) => (v === null ? [] : [JSON.parse(v) as CallRecording]));
  }

  async createApproval(
    approval: ApprovalRecord,
  ): Promise<{ readonly approval: ApprovalRecord; readonly created: boolean }> {
    const run = this.#run(approval.run_id);
    const body = JSON.stringify(approval);
    const key = this.#approval(approval.approval_id);
    const r = await this.#write(
      Op.createApproval,
      [run, key, `${run}:approvals`],
      [approval.approval_id, body],
    );
    if (r === -1) throw new NotFoundError('run', approval.run_id);
    if (r === 1) return { approval: JSON.parse(body) as ApprovalRecord, created: true };
    const found = await this.getApproval(approval.approval_id);
    if (!found) throw new NotFoundError('approval', approval.approval_id);
    return { approval: found, created: false };
  }

  async getApproval(approvalId: string): Promise<ApprovalRecord | null> {
    if (!keyPart(approvalId)) return null;
    const raw = await this.#read().get(this.#approval(approvalId));
    return raw === null ? null : (JSON.parse(raw) as ApprovalRecord);
  }

  async listApprovals(runId: string): Promise<ApprovalRecord[]> {
    const ids = await this.#read().lrange(`${this.#run(runId)}:approvals`, 0, -1);
    if (ids.length === 0) return [];
    const values = await this.#read().mget(...ids.map((id) => this.#approval(id)));
    return values.flatMap((v) => (v === null ? [] : [JSON.parse(v) as ApprovalRecord]));
  }

  /** Compare-and-swap on the stored JSON: a decision made meanwhile elsewhere wins, and this one then conflicts. */
  async decideApproval(approvalId: string, decision: ApprovalDecision): Promise<ApprovalRecord> {
    const key = this.#approval(approvalId);
    for (;;) {
      const raw = await this.#read().get(key);
      if (raw === null) throw new NotFoundError('approval', approvalId);
      const next = decided(JSON.parse(raw) as ApprovalRecord, decision);
      const body = JSON.stringify(next);
      const r = await this.#write(Op.swapApproval, [key], [raw, body]);
      if (r === 1) return JSON.parse(body) as ApprovalRecord;
      if (r === -1) throw new NotFoundError('approval', approvalId);
    }
  }
}
