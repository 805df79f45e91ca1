/** @module Inline placement: run an agent's handler on the caller's thread. */
import type { ExecContext } from '../context/exec-context.js';
import type {
  AgentRuntime,
  InlineAgentDefinition,
  ProcessAgentDefinition,
} from '../actors/agent-runtime.js';
import type { AgentInput } from '../actors/agent-result.js';
import { runHandler } from '../actors/run-handler.js';
import type { StepActor } from '../actors/step-actor.js';

/**
 * Runs `agent`'s handler inline (a process agent's handler too: it drives its child
 * process from here); its tokens and events go to `step`, which holds a
 * streaming handler once its backlog passes `BACKLOG_HIGH_WATER`.
 */
export function executeInline(
  agent: InlineAgentDefinition | ProcessAgentDefinition,
  input: AgentInput,
  ctx: ExecContext,
  step: StepActor,
  runtime: AgentRuntime,
): Promise<unknown> {
  return runHandler(agent.handler, input, ctx, runtime, step);
}
