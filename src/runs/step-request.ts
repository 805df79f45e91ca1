/**
 * @module What `runStep` (`step-runner.ts`) is given and gives back: the runtime's parts it
 * needs, one step to run, how a submitted step was submitted, and how a step ended.
 */
import type { Span, Tracer } from '@opentelemetry/api';
import type { ContextNarrowing, ExecContext } from '../context/exec-context.js';
import type { StreamTap } from '../context/stream-sink.js';
import type { AxonError } from '../errors/axon-error.js';
import type { Logger } from '../observability/logger.js';
import type { GenAiOperation } from '../observability/tracer.js';
import type {
  PlacementDecision,
  StepRecord,
  StepStatus,
  StepType,
  WireBudgets,
} from '../store/records.js';
import type { RunStore } from '../store/run-store.js';
import type { BudgetUsage } from '../streams/events.js';
import type { ActorSystem } from '../actors/actor-system.js';
import type { XStateInspect } from '../actors/interpreted-lifecycle.js';
import type { StepActor } from '../actors/step-actor.js';
import type { StepFeeds } from '../actors/step-feeds.js';
import type { ResumeFrom, StepEnding } from './submitted-step.js';
import type { ActorEndWrite } from '../store/actor-records.js';
import type { ErrorPayload } from '../errors/to-error-payload.js';

/** What the runner needs from its runtime. */
export interface StepRunnerDeps {
  readonly store: RunStore;
  readonly system: ActorSystem;
  readonly tracer: Tracer;
  readonly logger: Logger;
  /** The pool that inline placement reports (`local` when embedded). */
  readonly poolId: string;
  /** The replica of the pool this runtime is, reported with engine calls; `null` embedded. */
  readonly replicaId?: string | null;
  /** Wakes the followers of a step's log (`runtime.followStep`) when it appends. */
  readonly feeds?: StepFeeds;
  /**
   * The placement of a step whose run says nothing else (an `auto` run, or an invocation
   * outside a submitted run); default `null`, none recorded.
   */
  readonly placement?: PlacementDecision | null;
  /** XState's inspection callback: steps then run on interpreted XState actors it watches. */
  readonly inspect?: XStateInspect | undefined;
}

/** One step to run. */
export interface StepRequest {
  readonly type: StepType;
  /** The agent, tool or engine name; also the actor name in the path. */
  readonly name: string;
  readonly input: unknown;
  readonly runId: string;
  readonly parentCtx: ExecContext;
  /**
   * The span the step's span is a child of, instead of `parentCtx`'s (the front door's
   * `runtime.invoke` stage); default `parentCtx.span`.
   */
  readonly parentSpan?: Span | undefined;
  readonly narrowing?: ContextNarrowing | undefined;
  /** The step's own timeout; the context's deadline applies as well. */
  readonly timeoutMs: number | null;
  readonly operation: GenAiOperation;
  /** Where the work runs; default `inline`. */
  readonly placement?: 'inline' | 'worker' | 'process' | 'container';
  /** Observer of this step's tree; default the parent context's. */
  readonly tap?: StreamTap | null | undefined;
  /** Does the work. Its resolved value is the step's output. */
  readonly execute: (ctx: ExecContext, step: StepActor) => Promise<unknown>;
  /** A submitted step's idempotency token and who hears how its claim went (NERVE-4003). */
  readonly submission?: StepSubmission | undefined;
}

/** How a step was submitted: with a client token, and a listener for its claim. */
export interface StepSubmission {
  readonly clientToken: string | null;
  /** The budgets the step was submitted with, stored on its record; default none. */
  readonly budgets?: WireBudgets;
  /**
   * Set when the submission goes on with a step suspended for an approval (or left by a
   * fleet worker that was lost): the step keeps its id, record and lifecycle (no second
   * `started`), and the events its work emits again — the ones its log holds — are checked
   * against the log and not emitted twice (`actors/logged-work.ts`).
   */
  readonly resume?: ResumeFrom;
  /**
   * Told once the step's record is claimed: the step's own (`created`), or the step that
   * already had the token in this run, which is then neither run nor changed.
   */
  readonly onClaimed: (record: StepRecord, created: boolean) => void;
  /**
   * Told once the step's end is stored (before its run resolves), with the status it ended
   * in — `waiting` when suspended for an approval — or `null` when its end could not be
   * stored; with its end as stored (`end`) when it ended (not when it was suspended).
   */
  readonly onEnded?: (status: StepStatus | null, end?: StepEnding) => void;
  /**
   * A durable agent's message (issue 46): what its end writes to its actor — the state it
   * leaves when it `succeeded`, its mailbox slot given up — in the same write as the step's
   * end (`StepEnd.actor`). Asked with the status the step ends with, and its error.
   */
  readonly actorEnd?: (status: StepStatus, error: ErrorPayload | null) => ActorEndWrite;
}

/**
 * The step was not run: its run already has a step with its client token (NERVE-4003).
 * `runStep` rejects with it after telling the submission.
 */
export class AlreadyClaimed extends Error {
  readonly existing: StepRecord;

  constructor(existing: StepRecord) {
    super(`step ${existing.step_id} already has client token ${existing.client_token ?? ''}`);
    this.existing = existing;
  }
}

/** How a step ended. */
export interface StepOutcome {
  readonly stepId: string;
  readonly runId: string;
  /** `waiting`: a submitted step suspended for an approval (it has not ended). */
  readonly status: Extract<StepStatus, 'succeeded' | 'failed' | 'cancelled' | 'waiting'>;
  readonly output: unknown;
  readonly error: AxonError | null;
  readonly usage: BudgetUsage;
  readonly ctx: ExecContext;
  readonly durationMs: number;
}
