/**
 * @module A role's turn as an agent: each role of a workflow is registered on the runtime as
 * the agent `workflow.<workflow>.<role>`, and a turn is a step of the thread's run that
 * invokes it. The step's input holds the thread so far, so the turn is durable (it runs again
 * the same after a restart) and its model calls are the run's (recorded, replayed). A role
 * over a model or a CLI adapter streams its tokens into the turn's step as they come.
 */
import { defineAgent } from '../actors/define-agent.js';
import type { AgentInput } from '../actors/agent-result.js';
import type { ExecContext } from '../context/exec-context.js';
import { threadPrompt, type ThreadContext } from '../adapters/thread-context.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import type { AgentDefinition, AgentRuntime } from '../actors/agent-runtime.js';
import {
  roleOutput,
  type ThreadTurn,
  type WorkflowDefinition,
  type WorkflowRoleSpec,
} from './workflow-definition.js';

/** What a turn's step answers: the role's raw text and the data read from it. */
export interface TurnOutput {
  readonly raw: string;
  readonly output: unknown;
}

/** The thread as a turn's step input carries it (`args.thread`). */
export interface TurnThread {
  readonly threadId: string;
  readonly workflow: string;
  readonly input: string;
  readonly turns: readonly Pick<ThreadTurn, 'n' | 'role' | 'raw' | 'output'>[];
}

/** The prefix of the agents of workflow roles. */
const TURN_AGENT_PREFIX = 'workflow.';

/**
 * Whether agent `name` runs a workflow role's turns: it takes a thread, not a message, so
 * the front door does not route to it.
 */
export function isTurnAgent(name: string): boolean {
  return name.startsWith(TURN_AGENT_PREFIX);
}

/** The agent name of `role` of workflow `workflow`. */
export function turnAgentName(workflow: string, role: string): string {
  return `${TURN_AGENT_PREFIX}${workflow}.${role}`;
}

function threadOf(input: AgentInput): TurnThread {
  const thread = input.args?.['thread'] as TurnThread | undefined;
  if (typeof thread?.threadId !== 'string' || !Array.isArray(thread.turns)) {
    throw new InvalidParamsError('a workflow turn needs args.thread: the thread so far', {
      param: 'args.thread',
    });
  }
  return thread;
}

/** Seed 001's `ThreadContext` of a thread so far. */
function seedThread(thread: TurnThread): ThreadContext {
  return {
    threadId: thread.threadId,
    start: thread.input,
    steps: thread.turns.map((t) => ({ role: t.role, content: t.raw })),
  };
}

async function runRole(
  spec: WorkflowRoleSpec,
  thread: TurnThread,
  ctx: ExecContext,
  runtime: AgentRuntime,
): Promise<TurnOutput> {
  const seed = seedThread(thread);
  if ('role' in spec) {
    const { raw, meta } = await spec.role.run(seed, { signal: ctx.signal, ctx });
    return { raw, output: meta };
  }
  if (spec.kind === 'engine') {
    const answer = await runtime.chat(
      {
        ...(spec.engine === undefined ? {} : { engine: spec.engine }),
        ...(spec.model === undefined ? {} : { model: spec.model }),
        messages: [
          { role: 'system', content: spec.prompt },
          { role: 'user', content: threadPrompt(seed, '').trimStart() },
        ],
        ...(spec.maxTokens === undefined ? {} : { params: { max_tokens: spec.maxTokens } }),
      },
      ctx,
    );
    return {
      raw: answer.text,
      output: await roleOutput(answer.text, spec.schema, spec.extract, ctx.signal),
    };
  }
  // An agent role: the delegated agent's tokens are in its own step, below the turn's.
  const result = await runtime.delegate(
    spec.agent,
    { message: threadPrompt(seed, '').trimStart(), args: { thread } },
    ctx,
  );
  if (result.status !== 'success') {
    throw result.error ?? new Error(`agent ${spec.agent} answered ${result.status}`);
  }
  const raw = typeof result.output === 'string' ? result.output : JSON.stringify(result.output);
  return {
    raw,
    output: spec.schema
      ? await roleOutput(raw, spec.schema, spec.extract, ctx.signal)
      : result.output,
  };
}

/** The agents of `workflow`'s roles, for `runtime.registerAgent`. */
export function turnAgents(workflow: WorkflowDefinition): AgentDefinition[] {
  return workflow.roleNames.map((role) => {
    const spec = workflow.roles[role] as WorkflowRoleSpec;
    return defineAgent({
      name: turnAgentName(workflow.name, role),
      description: `the ${role} role of workflow ${workflow.name}`,
      handler: async (input, ctx, runtime) => {
        const out = await runRole(spec, threadOf(input), ctx, runtime);
        return { raw: out.raw, output: out.output } satisfies TurnOutput;
      },
    });
  });
}
