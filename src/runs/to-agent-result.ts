/** @module How a step's outcome becomes an agent result. */
import { InternalError } from '../errors/internal-error.js';
import { TimeoutError } from '../errors/timeout-error.js';
import type { AgentOutcome, AgentResult } from '../actors/agent-result.js';
import type { StepOutcome } from './step-request.js';

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
  // One object shape for every result keeps this hot path monomorphic.
  const failed = outcome.status !== 'succeeded';
  return {
    status: failed
      ? outcome.error instanceof TimeoutError
        ? 'timeout'
        : 'error'
      : special
        ? special.status
        : 'success',
    output: failed ? null : special ? (special.message as TOutput) : (outcome.output as TOutput),
    data: failed || !special ? null : special.data,
    error: failed ? outcome.error : null,
    handler,
    runId: outcome.runId,
    stepId: outcome.stepId,
    usage: outcome.ctx.tokenUsage,
    durationMs: outcome.durationMs,
  };
}
