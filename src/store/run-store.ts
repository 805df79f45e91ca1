/** @module The RunStore interface: runs, steps and each step's append-only event log. */
import type { ActorEndWrite } from './actor-records.js';
import type { ActorStore } from './actor-store.js';
import type { BudgetReservations } from './budget-reservations.js';
import type { Leases } from './store-leases.js';
import type { BudgetUsage, StepEvent } from '../streams/events.js';
import type {
  ApprovalDecision,
  ApprovalRecord,
  CallRecording,
  CheckpointRecord,
  FactQuery,
  FactRecord,
  FlowRecord,
  RecordingKey,
  RunPatch,
  RunRecord,
  RunStatus,
  StepPatch,
  StepRecord,
} from './records.js';

/**
 * Where runs, steps and event logs live. The log is the truth: an event a subscriber has
 * seen has been appended (and flushed) first. One conformance suite (`test/store/run-store.conformance.ts`)
 * runs against every implementation.
 *
 * Every method is async; lookups of unknown ids resolve `null`, updates of unknown ids
 * reject with `NotFoundError`. Writes resolve nothing: reading back costs a store round
 * trip that the runtime's hot path does not need.
 */
/** What {@link RunStore.pageRuns} is asked. */
export interface RunPageQuery {
  /** Only runs with one of these statuses. */
  readonly status?: readonly RunStatus[];
  /** Only the runs of this user (`null`: the runs of nobody); absent, every user's. */
  readonly userId?: string | null;
  /** Only the runs of this entry (a workflow's threads: `workflow:<name>`). */
  readonly entry?: string;
  /** Only runs created before this one (its id: the last of the page before). */
  readonly before?: string;
  /** How many at most, ≥ 1. */
  readonly limit: number;
}

/**
 * A step's end, which {@link RunStore.endStep} writes as one operation: one SQLite
 * transaction, one call of the Redis store's script.
 */
export interface StepEnd {
  readonly stepId: string;
  readonly runId: string;
  /**
   * The last events of its log not appended yet — its `end` or `error` among them — in order;
   * may be empty.
   */
  readonly events: readonly StepEvent[];
  /** Its record's end: status, output or error, usage, provenance, `ended_at`. */
  readonly patch: StepPatch;
  /**
   * Added to its run's `budget_usage` — a submitted step's use, its children's included — as
   * {@link RunStore.addRunUsage} with the step's id does (its reservations dropped); absent,
   * the run is not touched.
   */
  readonly runUsage?: BudgetUsage;
  /**
   * A durable agent's message ending: the state it leaves, and its place in the mailbox
   * given up, in the same write (issue 46). A store without `actors` refuses it.
   */
  readonly actor?: ActorEndWrite;
}

export interface RunStore {
  createRun(run: RunRecord): Promise<void>;
  getRun(runId: string): Promise<RunRecord | null>;
  /** Applies `patch` to a run; read it back with `getRun` if needed (writes do not read). */
  updateRun(runId: string, patch: RunPatch): Promise<void>;
  createStep(step: StepRecord): Promise<void>;
  getStep(stepId: string): Promise<StepRecord | null>;
  /** Applies `patch` to a step; read it back with `getStep` if needed. */
  updateStep(stepId: string, patch: StepPatch): Promise<void>;
  /**
   * Runs in creation order, those with one of `status` when given (a runtime restarted on a
   * durable store looks for the `running` ones), read from the store's index of runs by
   * status: its cost grows with the runs listed, not with every run there is. Without
   * `status`, every run.
   */
  listRuns(query?: { readonly status?: readonly RunStatus[] }): Promise<RunRecord[]>;
  /**
   * One page of runs, newest first, from the store's indexes (by status, by user, by entry):
   * its cost grows with `limit`, not with how many runs exist. `NotFoundError` when `before`
   * names no run.
   */
  pageRuns(query: RunPageQuery): Promise<RunRecord[]>;
  /**
   * Takes a step's `client_token` off it, so the token may claim a new step (an interrupted
   * step run again after a restart); the step is returned without it. A token already
   * claimed by another step is left to that step. `NotFoundError` for an unknown step.
   */
  releaseClientToken(stepId: string): Promise<StepRecord>;
  /** Steps of a run in creation order. */
  listSteps(runId: string): Promise<StepRecord[]>;
  /**
   * Appends events of one or more steps, in order. Per step, `seq` must continue the log
   * (1, 2, 3, …) or the whole batch is refused with `ConflictError`.
   */
  appendEvents(events: readonly StepEvent[]): Promise<void>;
  /**
   * Ends a step in one write: appends `events` (as {@link appendEvents}: `ConflictError` for
   * a `seq` that does not continue its log), applies `patch`, and adds `runUsage` to the run.
   * All of it or nothing: a refused append writes nothing. `NotFoundError` for an unknown
   * step (or run). Nothing is read back.
   */
  endStep(end: StepEnd): Promise<void>;
  /**
   * Events of a step with `seq > afterSeq` (default 0: all), in order; at most `limit` of
   * them (default all), the first ones — a reader pages through a long log this way.
   */
  readEvents(stepId: string, afterSeq?: number, limit?: number): Promise<StepEvent[]>;
  /**
   * Creates a step, or finds the step of the same run with the same `client_token`
   * (NERVE-4003): then `created` is false and nothing is written. Concurrent claims of one
   * token create one step. A step without a token is always created.
   */
  claimStep(step: StepRecord): Promise<{ readonly step: StepRecord; readonly created: boolean }>;
  /**
   * Stores a flow, or finds the flow with the same `hash` (NERVE-4001): then `created` is
   * false and the stored flow (its id, its creation time) is returned.
   */
  putFlow(flow: FlowRecord): Promise<{ readonly flow: FlowRecord; readonly created: boolean }>;
  getFlow(flowId: string): Promise<FlowRecord | null>;
  getFlowByHash(hash: string): Promise<FlowRecord | null>;
  /**
   * Every flow, in the order stored (what `axon store copy` copies, a flow no run uses
   * included); a store that cannot list them cannot be copied from.
   */
  listFlows?(): Promise<FlowRecord[]>;
  /** Appends a fact to its run (NERVE-4004); there is no update or delete. */
  appendFact(fact: FactRecord): Promise<void>;
  /** Facts in append order; see {@link FactQuery}. */
  listFacts(query: FactQuery): Promise<FactRecord[]>;
  /** Stores a checkpoint of its run (NERVE-4005). */
  createCheckpoint(checkpoint: CheckpointRecord): Promise<void>;
  /** A run's checkpoints, oldest first. */
  listCheckpoints(runId: string): Promise<CheckpointRecord[]>;
  /**
   * Adds `usage` to a run's `budget_usage`, atomically (concurrent steps of one run, in any
   * process, each add theirs), and resolves the run's total. `stepId`: the step whose usage
   * it is (a fenced store refuses it from a writer whose turn at that step is over; a store
   * with shared `budgets` drops that step's reservations in the same write).
   * `NotFoundError` for an unknown run.
   */
  addRunUsage(runId: string, usage: BudgetUsage, stepId?: string): Promise<BudgetUsage>;
  /**
   * Stores a call's recording (record mode), replacing one with the same key: a step run
   * again after a restart records its calls afresh. `NotFoundError` for an unknown run.
   */
  putRecording(recording: CallRecording): Promise<void>;
  /** The recording of a run's call at `key`, or `null`. */
  getRecording(runId: string, key: RecordingKey): Promise<CallRecording | null>;
  /** A run's recordings, in the order they were first stored. */
  listRecordings(runId: string): Promise<CallRecording[]>;
  /**
   * Stores an approval request, or finds the one with the same id (a step run again asks
   * again): then `created` is false and nothing is written. `NotFoundError` for an unknown
   * run.
   */
  createApproval(
    approval: ApprovalRecord,
  ): Promise<{ readonly approval: ApprovalRecord; readonly created: boolean }>;
  getApproval(approvalId: string): Promise<ApprovalRecord | null>;
  /** A run's approvals, in the order they were requested. */
  listApprovals(runId: string): Promise<ApprovalRecord[]>;
  /**
   * Decides a pending approval, atomically (of two concurrent decisions, in any processes,
   * one wins) and resolves it decided. `NotFoundError` for an unknown approval,
   * `ConflictError` (with `details.status`) for one already decided.
   */
  decideApproval(approvalId: string, decision: ApprovalDecision): Promise<ApprovalRecord>;
  /**
   * Durable agents' records (actors, mailboxes, wakes, schedules; issue 46); absent, the
   * store keeps none and a runtime on it refuses durable agents.
   */
  readonly actors?: ActorStore;
  /**
   * Leases kept in the store, which every process that opens it sees (the SQLite store's);
   * absent, a runtime keeps its own (or its fleet's, in Redis).
   */
  readonly leases?: Leases;
  /**
   * Reservations against runs' budgets that every process sharing the store sees (the Redis
   * store's): a fleet's steps reserve there, so that together they pass no run's limits;
   * absent, the runtime's own ledger is the only one (the store is one process's).
   */
  readonly budgets?: BudgetReservations;
  /**
   * Which records this store reads and writes, for a fleet's processes to check they share
   * them (`redis:<prefix>`, `postgres:<the schema's id>`); absent, it is one process's.
   * Rejects when the store cannot be reached.
   */
  identity?(): Promise<string>;
  /**
   * Makes every write so far durable. A store may hold writes back to commit them together
   * (the SQLite store commits one turn of the event loop at a time); the runtime flushes
   * before it acknowledges anything — a submitted step, a created run, an invocation's
   * result, an event shown to a subscriber. `null` when nothing is held back.
   */
  flush(): Promise<void> | null;
  /** Releases connections and handles. */
  close(): Promise<void>;
}

/**
 * A `waiting` run whose steps no longer wait (besides `leaving`, which is about to go on or
 * end) is `running` again. A run waits exactly while one of its steps waits for an approval.
 */
export async function stopWaiting(store: RunStore, runId: string, leaving: string): Promise<void> {
  const run = await store.getRun(runId);
  if (run?.status !== 'waiting') return;
  const steps = await store.listSteps(runId);
  if (steps.some((s) => s.status === 'waiting' && s.step_id !== leaving)) return;
  await store.updateRun(runId, { status: 'running' });
}

/** Waits for `store`'s writes to be durable (see {@link RunStore.flush}); no wait when none are held back. */
export async function flushed(store: RunStore): Promise<void> {
  const pending = store.flush();
  if (pending) await pending;
}
