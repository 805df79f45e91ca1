/**
 * @module An `llm_call` or `llm_plan` as a step of its own, in the caller's run or a run of
 * its own: what `runtime.llmCall` and `runtime.llmPlan` run.
 */
import type { ExecContext } from '../context/exec-context.js';
import type { AxonError } from '../errors/axon-error.js';
import type { BudgetUsage } from '../streams/events.js';
import { DEFAULT_ENGINE } from '../engines/engine-registry.js';
import { llmCall, llmPlan, type LlmStepDeps } from './llm-steps.js';
import { closeRun, openRun, RUN_STATUS, type RunRecordsDeps } from '../runs/run-records.js';
import { runStep } from '../runs/step-runner.js';
import type { StepOutcome, StepRunnerDeps, StepSubmission } from '../runs/step-request.js';

/** How an `llm_call` or `llm_plan` step ended. */
export interface LlmStepResult<TOutput> {
  /** `waiting`: a step submitted to a run, suspended for an approval. */
  readonly status: StepOutcome['status'];
  /** The step's output; `null` unless it succeeded. */
  readonly output: TOutput | null;
  readonly error: AxonError | null;
  readonly stepId: string;
  readonly runId: string;
  readonly usage: BudgetUsage;
}

/** What an LLM step needs from its runtime. */
export interface LlmStepRunDeps {
  readonly steps: StepRunnerDeps;
  readonly runs: RunRecordsDeps;
  readonly llm: LlmStepDeps;
}

/** Default timeout of an LLM step; the context's deadline applies as well. */
export const LLM_STEP_TIMEOUT_MS = 300_000;

/**
 * Runs an `llm_call` or `llm_plan` step with `input` (API.md's shape) under `ctx`. Rejects
 * only when the step could not begin (the store refused it); a bad input, an unknown tool
 * or engine, a budget, a failed call: each ends the step `failed` with its typed error.
 */
export async function runLlmStep<TOutput>(
  deps: LlmStepRunDeps,
  type: 'llm_call' | 'llm_plan',
  input: unknown,
  ctx: ExecContext,
  submission?: StepSubmission,
): Promise<LlmStepResult<TOutput>> {
  const engine = (input as { engine?: unknown } | null)?.engine;
  const name = typeof engine === 'string' ? engine : DEFAULT_ENGINE;
  const run = await openRun(deps.runs, ctx, `${type} ${name}`);
  let status: LlmStepResult<TOutput>['status'] = 'failed';
  try {
    const outcome = await runStep(deps.steps, {
      type,
      name,
      input,
      runId: run.runId,
      parentCtx: ctx,
      timeoutMs: LLM_STEP_TIMEOUT_MS,
      operation: 'chat',
      submission,
      execute: (stepCtx) =>
        type === 'llm_call' ? llmCall(deps.llm, input, stepCtx) : llmPlan(deps.llm, input, stepCtx),
    });
    status = outcome.status;
    return {
      status,
      output: status === 'succeeded' ? (outcome.output as TOutput) : null,
      error: outcome.error,
      stepId: outcome.stepId,
      runId: outcome.runId,
      usage: outcome.usage,
    };
  } finally {
    if (run.owned) await closeRun(deps.runs, run, RUN_STATUS[status], ctx.tokenUsage);
  }
}
