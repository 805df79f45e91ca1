/**
 * @module The `checkpoint` step of API.md: it checkpoints its run (the persisted snapshots of
 * the run's live step actors, its own included, and the last `seq` of each step's log —
 * NERVE-4005), emits `checkpoint { checkpoint_id }` and ends with it. A runtime restarted on
 * the same store rebuilds the run's interrupted steps from the latest checkpoint (see
 * `run-resume.ts`).
 */
import type { ExecContext } from '../context/exec-context.js';
import type { FlowApiDeps } from '../runs/flow-api.js';
import { checkpointRun } from '../runs/run-control.js';
import { runStep } from '../runs/step-runner.js';
import type { StepOutcome, StepRunnerDeps, StepSubmission } from '../runs/step-request.js';

/** Runs a `checkpoint` step in run `runId`. Rejects only when the step could not begin. */
export function runCheckpointStep(
  steps: StepRunnerDeps,
  runs: FlowApiDeps,
  label: string | null,
  ctx: ExecContext,
  runId: string,
  submission?: StepSubmission,
): Promise<StepOutcome> {
  return runStep(steps, {
    type: 'checkpoint',
    name: 'checkpoint',
    input: label === null ? {} : { label },
    runId,
    parentCtx: ctx,
    timeoutMs: null,
    operation: 'checkpoint',
    submission,
    execute: async (stepCtx, step) => {
      const checkpoint = await checkpointRun(runs, runId, {
        ...(label === null ? {} : { label }),
        stepId: step.stepId,
      });
      // Only end or error may follow the checkpoint event (STREAM-2001).
      if (!stepCtx.isCancelled()) step.checkpoint(checkpoint.checkpoint_id);
      return { checkpoint_id: checkpoint.checkpoint_id };
    },
  });
}
