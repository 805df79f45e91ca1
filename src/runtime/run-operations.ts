/**
 * @module The operations of API.md as runtime methods: flows, runs, steps, facts,
 * checkpoints, approvals, following a step's log, resuming runs. Each is a documented
 * delegation to the module that does the work (`runs/flow-api.ts`,
 * `steps/step-submission.ts`, `runs/run-resume.ts`, …). `Runtime` extends this class, so an
 * embedded service has what the server exposes; a shell over the runs (the HTTP server, a
 * fleet member) needs no more than this surface.
 */
import { stepJobOf, type StepJob } from '../placement/fleet/fleet-jobs.js';
import type { QueueFigures } from '../placement/fleet/fleet-registry.js';
import { takeStep, type StepAndRun } from '../steps/take-step.js';
import type { StepEvent } from '../streams/events.js';
import type {
  ApprovalRecord,
  CallRecording,
  CheckpointRecord,
  FactQuery,
  FactRecord,
  FlowRecord,
  RunRecord,
  StepRecord,
  StepStatus,
} from '../store/records.js';
import type { RunStore } from '../store/run-store.js';
import { decideApproval, type DecidedApproval } from '../runs/approvals.js';
import { appendFact, listFlowFacts, listRunFacts } from '../runs/facts.js';
import { createFlow, createFlowRun, type RunOwner } from '../runs/flow-api.js';
import { cancelRun, cancelStep, checkpointRun, completeRun } from '../runs/run-control.js';
import { resumeRun, resumeRuns, type ResumedRun } from '../runs/run-resume.js';
import {
  cancelOnDisconnect,
  followStep,
  followStepPages,
  type FollowDeps,
  type FollowOptions,
} from '../runs/step-follow.js';
import { joinRun, type JoinedRun, type JoinRunOptions } from '../steps/run-join.js';
import { submitRead, submitStep, type SubmittedStep } from '../steps/step-submission.js';
import { submitOwnedStep, type OwnedAgentStep, type OwnedStepEnd } from '../steps/owned-step.js';
import type { SubmissionCaller } from '../steps/submission-host.js';
import type { StepSubmissionBody } from '../steps/submission-body.js';
import type { BreakerState } from '../supervisors/circuit-breaker.js';
import type { PoolInfo } from '../placement/pool-info.js';
import type { Leases } from './leases.js';
import type { RuntimeParts } from './runtime-parts.js';

/** A fact query within one run or flow: by type, after a fact, up to a limit. */
export type FactFilter = Omit<FactQuery, 'runId' | 'flowId'>;

/**
 * The flows, runs and steps of API.md on a runtime's parts. Use it through {@link Runtime}
 * (`createRuntime`); its own constructor is internal.
 */
export class RunOperations {
  /** Where runs, steps, facts and step logs are kept. */
  readonly store: RunStore;
  /** @internal */
  protected readonly parts: RuntimeParts;

  /** @internal */
  constructor(parts: RuntimeParts) {
    this.parts = parts;
    this.store = parts.store;
  }

  /** Stores a flow by content (NERVE-4001); see `createFlow` in `flow-api.ts`. */
  createFlow(body: unknown): Promise<{ readonly flow: FlowRecord; readonly created: boolean }> {
    return createFlow(this.parts.runs, body);
  }

  getFlow(flowId: string): Promise<FlowRecord | null> {
    return this.store.getFlow(flowId);
  }

  getFlowByHash(hash: string): Promise<FlowRecord | null> {
    return this.store.getFlowByHash(hash);
  }

  /**
   * Starts a run of a flow (`POST /v1/flows/{flow_id}/runs`). `owner.userId` is the user it
   * belongs to: its steps run under that user (per-user rate limits, memory scope), and the
   * HTTP server shows a run only to its owner.
   */
  createRun(flowId: string, body: unknown = {}, owner: RunOwner = {}): Promise<RunRecord> {
    return createFlowRun(this.parts.runs, flowId, body, owner);
  }

  /** The run record, or `null`. */
  getRun(runId: string): Promise<RunRecord | null> {
    return this.store.getRun(runId);
  }

  /** Appends a fact to a run, checked against its flow's schema (NERVE-4004). */
  appendFact(runId: string, body: unknown): Promise<FactRecord> {
    return appendFact(this.parts.runs, runId, body);
  }

  /** A run's facts in append order, by type, after a fact, up to a limit. */
  listFacts(runId: string, query: FactFilter = {}): Promise<FactRecord[]> {
    return listRunFacts(this.parts.runs, runId, query);
  }

  /** A flow's facts across all its runs, in append order, by type, after a fact, up to a limit. */
  listFlowFacts(flowId: string, query: FactFilter = {}): Promise<FactRecord[]> {
    return listFlowFacts(this.parts.runs, flowId, query);
  }

  /** Checkpoints a run: its live steps' snapshots and its logs' offsets (NERVE-4005). */
  checkpoint(runId: string, options: { readonly label?: string } = {}): Promise<CheckpointRecord> {
    return checkpointRun(this.parts.runs, runId, options);
  }

  listCheckpoints(runId: string): Promise<CheckpointRecord[]> {
    return this.store.listCheckpoints(runId);
  }

  /** Cancels a run: every live step ends `CANCELLED`, then the run is `cancelled`. */
  cancelRun(
    runId: string,
  ): Promise<{ readonly status: 'cancelling'; readonly done: Promise<void> }> {
    return cancelRun(this.parts.runs, runId);
  }

  /** Marks a running run with no live steps `completed`. */
  completeRun(runId: string): Promise<RunRecord> {
    return completeRun(this.parts.runs, runId);
  }

  /**
   * A context inside run `runId` for work that is not one of its submitted steps (the front
   * door's request, `orchestrator.handle(message, { run })`): the run's id, user, shared
   * budget ledger and wall budget; the engine and tool calls made under it, and under every
   * agent invoked with it, are the run's calls under `clientToken`, recorded in a `record`
   * run and served from the recorded run in `replay` and `strict_replay` (NERVE-4021,
   * NERVE-4022). Call `release` when the work has ended. Rejects with `InvalidParamsError`
   * for an empty client token, `NotFoundError` for an unknown run or another user's, and
   * `ConflictError` for a run that has ended.
   *
   * @example
   * const { ctx, release } = await runtime.joinRun(run.run_id, 'req-1', { sessionId: 's1' });
   * try { await runtime.invoke('planner', 'Plan a trip', ctx); } finally { release(); }
   */
  async joinRun(
    runId: string,
    clientToken: string,
    options: JoinRunOptions = {},
  ): Promise<JoinedRun> {
    this.parts.assertOpen();
    return await joinRun(this.parts.submissions, runId, clientToken, options);
  }

  /**
   * Submits a step to a running run (`POST /v1/runs/{run_id}/steps`): resolves once it is
   * claimed by its `client_token` — a new step, now running, or the run's step that had the
   * token, which is not run again (NERVE-4003). `caller.traceparent` makes the step's spans
   * join the caller's trace. See `submitStep` in `step-submission.ts`.
   */
  submitStep(runId: string, body: unknown, caller: SubmissionCaller = {}): Promise<SubmittedStep> {
    this.parts.assertOpen();
    return submitStep(this.parts.submissions, runId, body, undefined, caller);
  }

  /**
   * @internal {@link submitStep} for `axon serve`'s route, which has parsed the body
   * (`stepSubmissionSchema`) and read the run (its caller's ownership) already: neither is
   * done twice. See `submitRead` in `steps/step-submission.ts`.
   */
  submitReadStep(
    run: RunRecord,
    request: StepSubmissionBody,
    caller: SubmissionCaller = {},
  ): Promise<SubmittedStep> {
    this.parts.assertOpen();
    return submitRead(this.parts.submissions, run, request, undefined, caller);
  }

  /**
   * @internal Runs an agent step for the engine that owns run `runId` (a workflow's turn) and
   * resolves once it has ended, or with the run's step already under its client token (not
   * run again): typed by its caller, not parsed, and with none of the public submission's
   * promises. See `submitOwnedStep` in `steps/owned-step.ts`.
   */
  submitOwnedStep(runId: string, step: OwnedAgentStep): Promise<OwnedStepEnd> {
    this.parts.assertOpen();
    return submitOwnedStep(this.parts.submissions, runId, step);
  }

  /**
   * Runs here a step a fleet queued for this runtime's pool — what `axon worker` does with
   * each job it takes (`src/fleet/`). Resolves with the status the step ended with; a step
   * that ended already is not run again, and one whose worker died mid-step goes on under
   * its id (see `steps/take-step.ts`). `signal` aborting cancels the step (the replica's
   * cancel). `NotFoundError` for a step the store does not have. `read`: the step's record
   * and its run's, as the caller read them just now (a fleet worker reads them in the call
   * that takes its turn); absent, they are read here.
   */
  takeStep(job: StepJob, signal?: AbortSignal, read?: StepAndRun): Promise<StepStatus | null> {
    this.parts.assertOpen();
    return takeStep(this.parts.submissions, stepJobOf(job), signal, read);
  }

  /**
   * Leases (`runtime/leases.ts`): the fleet's (in its Redis) with one, else the store's
   * when it keeps them (SQLite), else this process's — what the workflow engine holds for
   * each thread it drives.
   */
  get leases(): Leases {
    return this.parts.leases;
  }

  /**
   * Whether other processes see {@link leases}: a fleet's (Redis), or a store's that keeps
   * them (SQLite, every process on the file). False: they are this process's alone.
   */
  sharesLeases(): boolean {
    return this.parts.leasesShared;
  }

  /** Whether the runtime has a fleet (`createRuntime({ fleet })`): its submitted steps go to pools. */
  hasFleet(): boolean {
    return this.parts.fleet !== null;
  }

  /** The queue figures of each live pool of the runtime's fleet; none without a fleet. */
  poolQueues(): { readonly pool_id: string; readonly figures: QueueFigures }[] {
    return this.parts.fleet?.figures() ?? [];
  }

  /** A step record (`GET /v1/steps/{step_id}`), or `null`. */
  getStep(stepId: string): Promise<StepRecord | null> {
    return this.store.getStep(stepId);
  }

  /** A run's steps in creation order. */
  listSteps(runId: string): Promise<StepRecord[]> {
    return this.store.listSteps(runId);
  }

  /** Cancels a live step: it ends `CANCELLED`. */
  cancelStep(stepId: string): Promise<{ readonly status: 'cancelling' }> {
    return cancelStep(this.parts.runs, stepId);
  }

  /**
   * Follows a step's log (API.md's `GET /v1/steps/{step_id}/stream`): every event with
   * `seq > afterSeq` (a client's `Last-Event-ID`), then each new one once it is durable,
   * ending after the step's `end` or `error` — at once for a step that has ended. A slow
   * reader holds nothing up: it reads the log at its own pace. With `signal`, its abort is
   * the follower's disconnect: the last follower of a live step disconnecting cancels the
   * step when its run has `cancel_on_disconnect`. Rejects with `NotFoundError` for an
   * unknown step.
   *
   * @example
   * for await (const ev of runtime.followStep(step.step_id, { afterSeq: 3 })) console.log(ev.seq, ev.type);
   */
  followStep(stepId: string, options: FollowOptions = {}): AsyncGenerator<StepEvent, void> {
    return followStep(this.#followDeps(), stepId, options);
  }

  /**
   * {@link followStep} a page at a time: the events of one read of the log (at most 256,
   * never none), the last page ending with the step's `end` or `error` — for a writer that
   * sends many events at once (the SSE stream writes a page in one socket write).
   */
  followStepPages(
    stepId: string,
    options: FollowOptions = {},
  ): AsyncGenerator<readonly StepEvent[], void> {
    return followStepPages(this.#followDeps(), stepId, options);
  }

  #followDeps(): FollowDeps {
    const { store, system, feeds, follows, runs, logger } = this.parts;
    return {
      store,
      clock: system.clock,
      feeds,
      open: follows,
      lastDisconnected: (id) => {
        cancelOnDisconnect(runs, id).catch((err: unknown) => {
          logger.warn({ err, step_id: id }, 'cancel on disconnect failed');
        });
      },
    };
  }

  /**
   * A step's logged events with `seq > afterSeq` (what an SSE client resuming with
   * `Last-Event-ID: afterSeq` is owed first), in order.
   */
  readStepEvents(stepId: string, afterSeq = 0): Promise<StepEvent[]> {
    return this.store.readEvents(stepId, afterSeq);
  }

  /** A run's recorded engine and tool calls (record mode), in the order first stored. */
  listRecordings(runId: string): Promise<CallRecording[]> {
    return this.store.listRecordings(runId);
  }

  /**
   * Picks up a run that a stopped runtime left running in this runtime's (durable) store:
   * steps left running are closed with `WORKER_RESET`, rebuilt from the run's latest
   * checkpoint and their logs, and the submitted ones among them run again under their
   * client tokens; finished steps stand (NERVE-4005). See `run-resume.ts`.
   *
   * @example
   * const runtime = createRuntime({ store: sqliteStore('./.axon/axon.db'), agents });
   * await runtime.resumeRuns(); // after a crash, before taking new work
   */
  resumeRun(runId: string): Promise<ResumedRun> {
    this.parts.assertOpen();
    return resumeRun(this.parts.resumeDeps(), runId);
  }

  /**
   * {@link resumeRun} for every `running` run of the store, but those `options.except` keeps
   * (a workflow engine's threads, which its `recover()` resumes under their leases).
   */
  resumeRuns(
    options: { readonly except?: (run: RunRecord) => boolean } = {},
  ): Promise<ResumedRun[]> {
    this.parts.assertOpen();
    return resumeRuns(this.parts.resumeDeps(), options.except);
  }

  /**
   * Approves a call that waits for approval (`body`: `{ by, reason? }`, `by` one of its
   * approvers): the suspended step goes on under its id, from the store — its earlier calls
   * served from the run's recording, not made again. See `approvals.ts`.
   *
   * @example
   * const [pending] = await runtime.listApprovals(runId);
   * const { step } = await runtime.approve(pending.approval_id, { by: 'ops-lead' });
   * await step?.done;
   */
  approve(approvalId: string, body: unknown): Promise<DecidedApproval> {
    this.parts.assertOpen();
    return decideApproval(this.parts.resumeDeps(), approvalId, 'approved', body);
  }

  /**
   * Rejects a call that waits for approval: its step fails with `POLICY_DENIED` and an
   * `escalation`; the call never runs.
   */
  reject(approvalId: string, body: unknown): Promise<DecidedApproval> {
    this.parts.assertOpen();
    return decideApproval(this.parts.resumeDeps(), approvalId, 'rejected', body);
  }

  /** The runtime's pools with live figures (`GET /v1/pools`); embedded, the one `local`. */
  listPools(): PoolInfo[] {
    return this.parts.pools();
  }

  /**
   * Reads the fleet's pools from Redis now (they are read every `fleet.refreshMs` anyway);
   * nothing to do without a fleet. Rejects when Redis cannot be reached.
   */
  async refreshPools(): Promise<void> {
    await this.parts.fleet?.refresh();
  }

  /** One pool (`GET /v1/pools/{pool_id}`), or `null`. */
  getPool(poolId: string): PoolInfo | null {
    return this.parts.pools().find((p) => p.pool_id === poolId) ?? null;
  }

  /** The circuit breakers made so far (`agent:x`, `tool:y`, `engine:z`) and their states. */
  breakerStates(): { readonly target: string; readonly state: BreakerState }[] {
    return this.parts.breakers.states();
  }

  getApproval(approvalId: string): Promise<ApprovalRecord | null> {
    return this.store.getApproval(approvalId);
  }

  /** A run's approvals, pending and decided, in the order they were asked for. */
  listApprovals(runId: string): Promise<ApprovalRecord[]> {
    return this.store.listApprovals(runId);
  }
}
