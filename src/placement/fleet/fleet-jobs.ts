/**
 * @module A step travelling to a pool: the job an API process queues on the pool's BullMQ
 * queue and a fleet worker takes (`src/fleet/`), and what a runtime that dispatches to a
 * fleet asks of it (`StepDispatch`, implemented by `fleet-link.ts`).
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { StepRecord, StepStatus } from '../../store/records.js';
import type { PoolCandidate } from '../pool-choice.js';
import type { PoolInfo } from '../pool-info.js';

/** The data of a step's job. */
export const stepJobSchema = z
  .object({
    /** The step's record, `queued` in the shared store. */
    step_id: z.string().min(1),
    run_id: z.string().min(1),
    pool_id: z.string().min(1),
    /** The step submission as the client sent it (API.md), checked already. */
    body: z.record(z.string(), z.unknown()),
    /** The W3C trace context of the submission: the worker's spans join its trace. */
    traceparent: z.string().nullable(),
    /** When it was queued (ms since the epoch), for the submit-to-start figures. */
    queued_at: z.number(),
    /**
     * The identity of the API process's store (`RunStore.identity`): a replica keeping its
     * records elsewhere refuses the job rather than run a step it cannot find.
     */
    records: z.string().optional(),
  })
  .strict();

/** The data of a step's job. */
export type StepJob = z.infer<typeof stepJobSchema>;

/** The jobs this process has checked already: the objects {@link checkStepJob} gave back. */
const checkedJobs = new WeakSet<object>();

/**
 * Checks a job's data against {@link stepJobSchema} where it enters (a worker taking it off
 * its queue); the object it gives back is then not checked again ({@link stepJobOf}).
 */
export function checkStepJob(data: unknown): ReturnType<typeof stepJobSchema.safeParse> {
  const parsed = stepJobSchema.safeParse(data);
  if (parsed.success) checkedJobs.add(parsed.data);
  return parsed;
}

/** `data` as a step job: checked, unless it is one {@link checkStepJob} gave back. */
export function stepJobOf(data: unknown): StepJob {
  if (typeof data === 'object' && data !== null && checkedJobs.has(data)) return data as StepJob;
  const job = stepJobSchema.parse(data);
  checkedJobs.add(job);
  return job;
}

/**
 * The BullMQ job id of a step: from `(run_id, client_token)` when it has a token, so the same
 * submission queued twice — by two API processes at once too — is one job; else the step id.
 */
export function stepJobId(runId: string, clientToken: string | null, stepId: string): string {
  if (clientToken === null) return stepId;
  return `t${createHash('sha256').update(runId).update('\0').update(clientToken).digest('hex').slice(0, 40)}`;
}

/** What a runtime that sends its submitted steps to a fleet needs of it. */
export interface StepDispatch {
  /** Reads the live pools again if what is known of them is older than its refresh interval. */
  fresh(): Promise<void>;
  /** The live pools, as placement chooses among them. */
  candidates(): readonly PoolCandidate[];
  /** The live pools as `GET /v1/pools` shows them. */
  pools(): readonly PoolInfo[];
  /** Refuses with `QueueFullError` when the pool's queue holds its most waiting steps. */
  admit(poolId: string): Promise<void>;
  /** Queues the step's job on its pool; resolves once Redis has it. */
  enqueue(job: StepJob, record: StepRecord): Promise<void>;
  /**
   * Cancels a step queued or running on a pool: a queued job is taken off its queue (then
   * `true`: the caller ends the step), a running step is told over pub/sub (`false`).
   */
  cancel(step: StepRecord): Promise<boolean>;
  /** Tells those waiting for the step's end that it ended here (a queued step cancelled). */
  endedHere(stepId: string, status: StepStatus): Promise<void>;
  /**
   * Where each step's job is in its pool's queue: BullMQ's state (`waiting`, `active`,
   * `delayed`, `failed`, …), or `unknown` when the queue holds no such job (never queued,
   * removed, or completed and dropped).
   */
  jobStates(steps: readonly StepRecord[]): Promise<Map<string, string>>;
  /** The steps this process waits on or follows: those whose loss it should notice. */
  watched(): readonly string[];
  /**
   * Up to `limit` of the fleet's open steps (queued on a pool, not said to have ended) queued
   * after `after` and before `before` (ms, both excluded), oldest first, each with when it was
   * queued: those a sweep looks at, watched or not.
   */
  openSteps(
    after: number,
    before: number,
    limit: number,
  ): Promise<{ readonly stepId: string; readonly queuedAt: number }[]>;
  /** Takes steps found ended (or gone) off the fleet's open steps. */
  closeSteps(stepIds: readonly string[]): Promise<void>;
  /** How often a runtime looks for lost steps among {@link watched} and {@link openSteps}, ms. */
  readonly lostCheckMs: number;
  /**
   * Resolves with the status the step ended with once it ends (never rejects). Only ends
   * after the call are seen: call it before the step can end, or read its record after.
   */
  ended(stepId: string): Promise<StepStatus | null>;
  close(): Promise<void>;
}
