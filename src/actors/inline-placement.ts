/** @module Inline placement: run an agent's handler on the caller's thread. */
import type { ExecContext } from '../context/exec-context.js';
import type { AgentRuntime, InlineAgentDefinition } from './agent-runtime.js';
import type { AgentInput } from './agent-result.js';
import { runHandler } from './run-handler.js';
import type { StepActor } from './step-actor.js';

/** Accepted-but-unlogged events past which a streaming handler waits for the log. */
const HIGH_WATER = 256;

/** Runs `agent`'s handler inline, its tokens and events going to `step`. */
export function executeInline(
  agent: InlineAgentDefinition,
  input: AgentInput,
  ctx: ExecContext,
  step: StepActor,
  runtime: AgentRuntime,
): Promise<unknown> {
  return runHandler(agent.handler, input, ctx, runtime, {
    token: (text) => {
      step.tokens([text]);
    },
    event: (event) => {
      step.emit(event);
    },
    ready: () => (step.backlog >= HIGH_WATER ? step.drain() : null),
  });
}
