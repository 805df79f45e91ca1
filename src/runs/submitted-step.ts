/**
 * @module What submitting a step to a run gives back, and the submission that makes a
 * submitted step again (after a restart, or to go on after an approval).
 */
import type { StepEvent } from '../streams/events.js';
import type { RunRecord, StepRecord, StepStatus } from '../store/records.js';
import type { StepLifecycle } from '../actors/step-lifecycle.js';

/** What a submission returns at once. */
export interface SubmittedStep {
  readonly step_id: string;
  readonly status: StepStatus;
  /** False when the run already had a step with this client token (nothing was run). */
  readonly created: boolean;
  /**
   * Resolves when the step has ended, with the status it ended in (`waiting` when it was
   * suspended for an approval); at once with `null` for a step found by its token, or when
   * the step failed before it began or its record could not be read. Never rejects.
   */
  readonly done: Promise<StepStatus | null>;
  /**
   * Resolves with the step's end as its record stores it — status, output, error — when it
   * ran and ended in this process, so a caller need not read the record back; `null`
   * wherever `done` gives `null`, for a step suspended for an approval (`waiting`), and for
   * a step run on a fleet's pool (read its record). Never rejects.
   */
  readonly ended: Promise<StepEnding | null>;
}

/** A step's end as its record stores it. */
export type StepEnding = Pick<StepRecord, 'status' | 'output' | 'error'>;

/**
 * A step whose record exists, to run here under its id (see `StepSubmission.resume` in
 * `step-runner.ts`): one suspended for an approval, or left running by a fleet worker that
 * died, to go on with (`lifecycle` rebuilt from its log; what its work emits again is checked
 * against `logged`, the log, and not emitted twice); or one `queued` by another process for this one to start
 * (`fresh`: a fleet job), which begins with its own `started`.
 */
export interface ResumeFrom {
  readonly record: StepRecord;
  readonly lifecycle: StepLifecycle;
  /** The step's log so far, which its work, run again, must reproduce. */
  readonly logged: readonly StepEvent[];
  /** The record is `queued`: the step starts here (`started`), nothing to go on with. */
  readonly fresh?: boolean;
  /** The W3C trace context it was submitted under elsewhere (a fleet job's): its spans join that trace. */
  readonly traceparent?: string | null;
  /** Its run's record, read just now with the step's (a fleet worker's turn); absent, it is read. */
  readonly run?: RunRecord;
}

/** The submission that makes `step` again, if it was submitted to its run (a root step with a client token). */
export function resubmission(step: StepRecord): unknown {
  if (step.parent_step_id !== null || step.client_token === null) return null;
  const input = step.input as Record<string, unknown>;
  // The step's own budgets go with it: the step run again is held to them as it was.
  const budgets = Object.keys(step.budgets).length > 0 ? { budgets: step.budgets } : {};
  switch (step.type) {
    case 'agent':
      return {
        type: 'agent',
        client_token: step.client_token,
        input: {
          agent: step.name,
          message: input['message'],
          ...(input['args'] === undefined ? {} : { args: input['args'] }),
        },
        ...budgets,
      };
    case 'tool_call':
    case 'llm_call':
    case 'llm_plan':
    case 'checkpoint':
    case 'fs_op':
    case 'gate_eval':
      return { type: step.type, client_token: step.client_token, input, ...budgets };
    default:
      return null;
  }
}
