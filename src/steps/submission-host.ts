/**
 * @module What a step submission (`step-submission.ts`) is given: the caller's options (its
 * trace, placement and signal), the host runtime's parts it works through, and the placement
 * a step may be asked for.
 */
import type { z } from 'zod';
import type { ExecContext } from '../context/exec-context.js';
import type { CreateContextOptions } from '../context/context-options.js';
import type { TraceParent } from '../context/traceparent.js';
import type { Clock } from '../context/clock.js';
import type { Logger } from '../observability/logger.js';
import type { PlacementDecision, RunRecord } from '../store/records.js';
import type { RunStore } from '../store/run-store.js';
import type { ToolResult } from '../tools/tool-result.js';
import type { StepDispatch } from '../placement/fleet/fleet-jobs.js';
import type { PoolPlacement, StepNeeds } from '../placement/pool-choice.js';
import type { PolicyGate } from '../runs/policy-gate.js';
import type { RunCalls } from '../runs/run-calls.js';
import type { wireBudgetsSchema } from '../runs/request-bodies.js';
import type { StepSubmission } from '../runs/step-request.js';
import type { GateEvalInput } from './gate-eval.js';

/** Who submits a step, beyond its body. */
export interface SubmissionCaller {
  /**
   * The caller's W3C `traceparent` (an HTTP request's header): the step's spans — here, or on
   * the fleet worker that runs it — join that trace. A malformed one is ignored, as W3C says.
   */
  readonly traceparent?: string | undefined;
  /**
   * Where the step runs, over the run's `pool_policy` (for embedding code; a body's own
   * `placement`, API.md's form, does the same for callers over HTTP — give one or the other,
   * a `TypeError` otherwise): `'here'` in this runtime even when it has a fleet (the
   * workflow engine's inline and worker roles); `{ pool }` queued on that pool of the fleet
   * (`PoolUnavailableError` when the runtime has no fleet, or no such pool takes work).
   * Default: the body's `placement`, else the run's `pool_policy` — on a fleet, its pools;
   * embedded, here.
   */
  readonly placement?: StepPlacement | undefined;
  /**
   * Cancels the step when it aborts (its reason the step's error), even before the step has
   * an actor: a fleet replica's cancel of a step it is taking.
   */
  readonly signal?: AbortSignal | undefined;
}

/**
 * The placement decision of a step that runs here: `'run'` by its run's `pool_policy` (among
 * this runtime's pools); `'here'` this runtime's pool whatever the run's policy names (a
 * submission placed it here); or the decision already made for it (a step a fleet queued
 * on this replica's pool, one going on after an approval).
 */
export type StepDecision = 'run' | 'here' | PlacementDecision;

/** Where a submitted step runs (see {@link SubmissionCaller.placement}). */
export type StepPlacement = 'here' | { readonly pool: string };

/** `placement` checked: a `TypeError` names what is wrong. */
export function checkStepPlacement(placement: unknown): StepPlacement | undefined {
  if (placement === undefined || placement === 'here') return placement;
  const fields = typeof placement === 'object' && placement !== null ? placement : {};
  const pool = (fields as { pool?: unknown }).pool;
  if (Object.keys(fields).length === 1 && typeof pool === 'string' && pool !== '') {
    return { pool };
  }
  throw new TypeError(
    `submitStep: placement must be "here" or { pool: "<pool id>" }, got ${JSON.stringify(placement)}`,
  );
}

/**
 * Who works in a run besides its steps (the front door's request): see `joinRun`. Its
 * `userId` must be the run's user when the run has one.
 */
export type RunJoinIdentity = Pick<
  CreateContextOptions,
  | 'name'
  | 'userId'
  | 'sessionId'
  | 'memoryScope'
  | 'metadata'
  | 'permissions'
  | 'signal'
  | 'timeoutMs'
>;

/** A submitted step's context, as its host made it (`SubmissionHost.contextFor`). */
export interface StepContext {
  readonly ctx: ExecContext;
  /** Told the step's id once its record is claimed. */
  readonly claimed: (stepId: string) => void;
  /** Called once the step has ended (or was refused). */
  readonly release: () => void;
}

/** What a submission needs from the runtime. */
export interface SubmissionHost {
  readonly store: RunStore;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Where the policy is asked: the route checkpoint and the run's `steps_per_minute`. */
  readonly gate: PolicyGate;
  /**
   * The books of the calls of a step submitted to `run` with `clientToken` (record /
   * replay); `resumed` for a step going on after an approval (see `RunCalls.resumed`);
   * `placement` the step's (and its children's) placement decision (see {@link StepDecision}).
   */
  callsFor(
    run: RunRecord,
    clientToken: string | null,
    resumed: boolean,
    placement: StepDecision,
  ): RunCalls;
  /**
   * A context inside `run` with the step's own budgets, drawing on the run's shared ledger
   * (and the store's, when processes share it); `claimed` with the step's id once its
   * record is claimed, `release` when the step has ended.
   */
  contextFor(
    run: RunRecord,
    stepBudgets: z.infer<typeof wireBudgetsSchema> | undefined,
    remoteParent?: TraceParent,
    identity?: RunJoinIdentity,
  ): StepContext;
  /** The fleet submitted steps go to (`createRuntime({ fleet })`); `null`: they run here. */
  readonly dispatch: StepDispatch | null;
  /**
   * The run's pool for a step, by its `pool_policy` or the step's own `placement`
   * (`PoolUnavailableError` when none fits).
   */
  choosePool(run: RunRecord, needs: StepNeeds, placement?: PoolPlacement): PlacementDecision;
  /**
   * The placement the named agent or tool needs of its pool beyond the usual ones
   * (`container`), or `undefined`; unknown names are `undefined` (refused elsewhere).
   */
  placementNeeded(kind: 'agent' | 'tool', name: unknown): string | undefined;
  runAgent(
    agent: string,
    input: { message: string; args?: Record<string, unknown> },
    ctx: ExecContext,
    runId: string,
    submission: StepSubmission,
  ): Promise<unknown>;
  callTool(
    name: string,
    args: unknown,
    ctx: ExecContext,
    submission: StepSubmission,
  ): Promise<ToolResult>;
  /** An `fs_op` step, through the FS broker of the run's `fs_policy`. */
  runFsOp(input: unknown, ctx: ExecContext, submission: StepSubmission): Promise<unknown>;
  /** A `gate_eval` step: whether the run has enough facts of a kind (API.md). */
  runGateEval(
    input: GateEvalInput,
    ctx: ExecContext,
    runId: string,
    submission: StepSubmission,
  ): Promise<unknown>;
  /** A `checkpoint` step: the run's live steps' snapshots and log offsets (NERVE-4005). */
  runCheckpoint(
    label: string | null,
    ctx: ExecContext,
    runId: string,
    submission: StepSubmission,
  ): Promise<unknown>;
  runLlm(
    type: 'llm_call' | 'llm_plan',
    input: unknown,
    ctx: ExecContext,
    submission: StepSubmission,
  ): Promise<unknown>;
}
