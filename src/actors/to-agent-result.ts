/** @module How a step's outcome becomes an agent result. */
import { InternalError } from '../errors/internal-error.js';
import { TimeoutError } from '../errors/timeout-error.js';
import type { AgentOutcome, AgentResult, AgentStatus } from './agent-result.js';
import type { StepOutcome } from './step-runner.js';

/**
 * The {@link AgentResult} of an agent step: `timeout` or `error` when the step failed,
 * the handler's own outcome (`needs_data`, …) when it returned one, else `success`.
 */
export function toAgentResult<TOutput>(
  handler: string,
  outcome: StepOutcome | null,
  special: AgentOutcome | null,
): AgentResult<TOutput> {
  if (!outcome) throw new InternalError(`agent "${handler}" ended without an outcome`);
  const base = {
    handler,
    runId: outcome.runId,
    stepId: outcome.stepId,
    usage: outcome.ctx.tokenUsage,
    durationMs: outcome.durationMs,
  };
  if (outcome.status !== 'succeeded') {
    const status: AgentStatus = outcome.error instanceof TimeoutError ? 'timeout' : 'error';
    return { ...base, status, output: null, data: null, error: outcome.error };
  }
  if (special) {
    return {
      ...base,
      status: special.status,
      output: special.message as TOutput,
      data: special.data,
      error: null,
    };
  }
  return { ...base, status: 'success', output: outcome.output as TOutput, data: null, error: null };
}
