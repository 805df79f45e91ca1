/**
 * @module The contract between agents and the runtime: handler signatures, the agent
 * definition, and what a handler can call back into.
 */
import type { ContextNarrowing, ExecContext } from '../context/exec-context.js';
import type { SinkEvent } from '../context/stream-sink.js';
import type { ToolResult } from '../tools/tool-result.js';
import type { AgentInput, AgentOutcome, AgentResult } from './agent-result.js';

/** A handler that returns its result. */
export type AgentFunctionHandler<TOutput = unknown> = (
  input: AgentInput,
  ctx: ExecContext,
  runtime: AgentRuntime,
) => Promise<TOutput | AgentOutcome> | TOutput | AgentOutcome;

/**
 * A handler that streams: each yielded string is a token, each yielded object a
 * `narration`, `metrics`, `fact` or `tool_suggest` event. Its return value is the output;
 * without one, the output is the tokens joined.
 */
export type AgentGeneratorHandler<TOutput = unknown> = (
  input: AgentInput,
  ctx: ExecContext,
  runtime: AgentRuntime,
) => AsyncGenerator<string | SinkEvent, TOutput | AgentOutcome | undefined, undefined>;

/** Either kind of handler. */
export type AgentHandler<TOutput = unknown> =
  AgentFunctionHandler<TOutput> | AgentGeneratorHandler<TOutput>;

/** A declared agent, ready to register with a runtime. */
export interface AgentDefinition<TOutput = unknown> {
  readonly kind: 'agent';
  readonly name: string;
  readonly description: string;
  readonly handler: AgentHandler<TOutput>;
  readonly timeoutMs: number;
  readonly placement: 'inline';
}

/** An agent, by registered name or by definition. */
export type AgentTarget = string | AgentDefinition;

/**
 * The runtime as a handler sees it (Nerva's `AgentRuntime`). Every call takes the context
 * explicitly; pass the handler's own `ctx` so the callee becomes its child.
 */
export interface AgentRuntime {
  /**
   * Runs `agent` as a child of `parentCtx`'s step: a child context (narrowed by
   * `narrowing`), `canUseAgent` checked, and the depth limit enforced.
   *
   * Rejects — with nothing run — on an unknown agent (`NotFoundError`), a permission the
   * context lacks (`PermissionDeniedError`), the depth limit (`DepthLimitError`) or a
   * widening narrowing (`WideningError`). Anything that happens once the step started
   * (a throw, a timeout, a cancel) resolves as an {@link AgentResult} with that status.
   */
  delegate<TOutput = unknown>(
    agent: AgentTarget,
    input: string | AgentInput,
    parentCtx: ExecContext,
    narrowing?: ContextNarrowing,
  ): Promise<AgentResult<TOutput>>;
  /**
   * Calls a registered tool as a `tool_call` child step. Never rejects: unknown tools,
   * refused permissions, schema violations, failures and timeouts are statuses.
   */
  callTool<TOutput = unknown>(
    name: string,
    args: unknown,
    ctx: ExecContext,
  ): Promise<ToolResult<TOutput>>;
}
