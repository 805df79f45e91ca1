/**
 * @module A step submitted by the engine that owns its run (a workflow's turn): typed by its
 * caller, so its body is not parsed, and awaited to its end, so it makes none of the promises
 * a stranger's submission (`step-submission.ts`) returns at its claim. What makes the step
 * durable and idempotent stays: it is claimed by its client token in the store, so a second
 * submission under the token (a resume) finds the first step and runs nothing; record /
 * replay, budgets, the policy's checkpoints, tracing and fleet placement are the public
 * path's own.
 */
import { InternalError } from '../errors/internal-error.js';
import { attachRunCalls } from '../runs/run-calls.js';
import { AlreadyClaimed, type StepSubmission } from '../runs/step-request.js';
import type { StepEnding } from '../runs/submitted-step.js';
import type { RunRecord } from '../store/records.js';
import { admitStep, dispatchStep, noFleet, takingSteps } from './step-submission.js';
import type { StepSubmissionBody } from './submission-body.js';
import type { StepPlacement, SubmissionHost } from './submission-host.js';

/** An agent step the engine that owns its run submits (see the module). */
export interface OwnedAgentStep {
  /** The step's client token in its run (NERVE-4003): a step already under it is not run again. */
  readonly clientToken: string;
  /** The registered agent the step invokes. */
  readonly agent: string;
  /** The agent's message. */
  readonly message: string;
  /** The agent's arguments (stored in the step's input as given: the caller's own data). */
  readonly args?: Readonly<Record<string, unknown>>;
  /** `'here'`, in this runtime whatever the run's pool policy; `{ pool }`, queued on that pool of its fleet. */
  readonly placement: StepPlacement;
  /**
   * Told the step's id once it is claimed — after the runtime knows it as running, so a
   * cancel from the listener reaches it — and whether it is a new step (`false`: the run's
   * step under the token, which is not run here).
   */
  readonly onClaimed?: (stepId: string, created: boolean) => void;
}

/** How an owned step went. */
export interface OwnedStepEnd {
  readonly stepId: string;
  /** False when the run already had a step under the token: nothing ran (follow that step). */
  readonly created: boolean;
  /**
   * Its end as its record stores it when it ran and ended here; `null` for a step found by
   * its token, one run on a pool, one suspended for an approval, or one whose end could not
   * be stored (read its record).
   */
  readonly ending: StepEnding | null;
}

/**
 * Runs `step` in run `runId` and resolves once it has ended (or was found under its token).
 * Rejects, when no step began, as a submission does: `NotFoundError` (run, agent),
 * `ConflictError` (the run takes no steps), `PermissionDeniedError`, a policy's refusal,
 * `PoolUnavailableError`. The step's claim is not flushed before it runs: nobody is told
 * of it but the owner, and what shows it to others (following its log, the run's facts and
 * end) flushes first.
 */
export async function submitOwnedStep(
  host: SubmissionHost,
  runId: string,
  step: OwnedAgentStep,
): Promise<OwnedStepEnd> {
  const run = takingSteps(runId, await host.store.getRun(runId));
  const { placement } = step;
  if (typeof placement === 'object') return onPool(host, run, step, placement.pool);
  const { ctx, release, claimed } = host.contextFor(run, undefined);
  // What the runner tells the submission: its claim, then its end.
  const told: { stepId: string | null; created: boolean; ending: StepEnding | null } = {
    stepId: null,
    created: false,
    ending: null,
  };
  const submission: StepSubmission = {
    clientToken: step.clientToken,
    onClaimed: (record, created) => {
      claimed(record.step_id);
      told.stepId = record.step_id;
      told.created = created;
      const listener = step.onClaimed;
      // The runner registers the step right after its claim, in the same synchronous run.
      if (listener) {
        queueMicrotask(() => {
          listener(record.step_id, created);
        });
      }
    },
    onEnded: (_status, end) => {
      told.ending = end ?? null;
    },
  };
  try {
    attachRunCalls(ctx, host.callsFor(run, step.clientToken, false, 'here'));
    await admitStep(host, run, step.agent, ctx);
    const input = step.args
      ? { message: step.message, args: step.args as Record<string, unknown> }
      : { message: step.message };
    await host.runAgent(step.agent, input, ctx, run.run_id, submission);
  } catch (err) {
    if (err instanceof AlreadyClaimed) {
      return { stepId: err.existing.step_id, created: false, ending: null };
    }
    // Refused before its step began: the submission fails as a stranger's would.
    if (told.stepId === null) throw err;
    host.logger.error({ err, run_id: run.run_id, step_id: told.stepId }, 'an owned step failed');
  } finally {
    release();
  }
  if (told.stepId === null) {
    throw new InternalError(`the agent step of ${step.agent} ended without a claim`);
  }
  return { stepId: told.stepId, created: told.created, ending: told.ending };
}

/** `step` queued on `pool` of the runtime's fleet, and awaited to its end there. */
async function onPool(
  host: SubmissionHost,
  run: RunRecord,
  step: OwnedAgentStep,
  pool: string,
): Promise<OwnedStepEnd> {
  if (!host.dispatch) throw noFleet(pool);
  const body: StepSubmissionBody = {
    type: 'agent',
    client_token: step.clientToken,
    input: step.args
      ? { agent: step.agent, message: step.message, args: step.args }
      : { agent: step.agent, message: step.message },
  };
  const { ctx, release } = host.contextFor(run, undefined);
  let submitted;
  try {
    submitted = await dispatchStep(host, host.dispatch, run, body, ctx, { pin: pool });
  } finally {
    release();
  }
  step.onClaimed?.(submitted.step_id, submitted.created);
  await submitted.done;
  return { stepId: submitted.step_id, created: submitted.created, ending: null };
}
