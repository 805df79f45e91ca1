/**
 * @module What submitting a step to a run gives back, and the submission that makes a
 * submitted step again (after a restart, or to go on after an approval).
 */
import type { StepRecord, StepStatus } from '../store/records.js';
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
}

/** A step suspended for an approval, to go on with (see `StepSubmission.resume` in `step-runner.ts`). */
export interface ResumeFrom {
  readonly record: StepRecord;
  readonly lifecycle: StepLifecycle;
  readonly skip: number;
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
