/**
 * @module The contract between agents and the runtime: handler signatures, the agent
 * definition, and what a handler can call back into.
 */
import type { ProcessBehaviour } from '../adapters/process-behaviour.js';
import type { ContextNarrowing, ExecContext } from '../context/exec-context.js';
import type { SinkEvent } from '../context/stream-sink.js';
import type { ChatResult } from '../engines/chat-tokens.js';
import type { AgentMemory } from '../memory/memory-types.js';
import type { FsOpInput, FsResult } from '../policy/fs-broker.js';
import type { FactRecord } from '../store/records.js';
import type { ToolResult } from '../tools/tool-result.js';
import type { ChatCall, ChatCallOptions } from '../engines/chat-call.js';
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

/**
 * A module export that holds the handlers of several agents (a workflow, for its roles'
 * agents): a worker thread asks it for the handler of the agent it runs, by name.
 */
export interface AgentHandlerSource {
  handlerFor(agent: string): AgentHandler | undefined;
}

/** What every declared agent has, wherever it runs. */
interface AgentDefinitionBase {
  readonly kind: 'agent';
  readonly name: string;
  readonly description: string;
  readonly timeoutMs: number;
}

/** An agent whose handler runs on the caller's thread. */
export interface InlineAgentDefinition<TOutput = unknown> extends AgentDefinitionBase {
  readonly placement: 'inline';
  readonly handler: AgentHandler<TOutput>;
}

/**
 * An agent whose handler runs in the runtime's worker-thread pool. Functions do not cross
 * threads, so the handler is named: the export `export` of the module `module` (a file URL
 * such as `import.meta.url`, an absolute path, or a package specifier). The export is a
 * handler, an agent definition whose handler is used, or an {@link AgentHandlerSource} that
 * holds the handlers of several agents (a workflow's roles) and is asked for this one's.
 */
export interface WorkerAgentDefinition extends AgentDefinitionBase {
  readonly placement: 'worker';
  readonly module: string;
  readonly export: string;
}

/**
 * An agent that runs a child process per invocation (a CLI agent, a subprocess agent): its
 * handler, made from the behaviour, runs on the caller's thread and streams the process's
 * output.
 */
export interface ProcessAgentDefinition extends AgentDefinitionBase {
  readonly placement: 'process';
  readonly behaviour: ProcessBehaviour;
  readonly handler: AgentGeneratorHandler;
}

/**
 * An agent whose handler runs in a container (container placement): the export `export` of
 * the JavaScript module at `module` (an absolute path on the host; its folder is mounted
 * read-only in the container). Its input, events, host calls and result cross as JSON.
 */
export interface ContainerAgentDefinition extends AgentDefinitionBase {
  readonly placement: 'container';
  readonly module: string;
  readonly export: string;
}

/** A declared agent, ready to register with a runtime. */
export type AgentDefinition<TOutput = unknown> =
  | InlineAgentDefinition<TOutput>
  | WorkerAgentDefinition
  | ProcessAgentDefinition
  | ContainerAgentDefinition;

/** An agent, by registered name or by definition. */
export type AgentTarget = string | AgentDefinition;

/**
 * The runtime as a handler sees it (Nerva's `AgentRuntime`). Every call takes the context
 * explicitly; pass the handler's own `ctx` so the callee becomes its child.
 */
export interface AgentRuntime {
  /**
   * Runs `agent` as a child of `parentCtx`'s step: a child context (narrowed by
   * `narrowing`), `canUseAgent` checked, and the depth limit enforced. `input` is a string
   * or `{ message, args? }` (an {@link AgentInput}; pass the handler's own `input` to hand
   * the request on as it came).
   *
   * Rejects — with nothing run — on a call that cannot begin: an unknown agent
   * (`NotFoundError`, `NOT_FOUND`), an input or context of the wrong shape
   * (`InvalidParamsError`, `INVALID_PARAMS`, naming it in `details.param`), a permission the
   * context lacks (`PermissionDeniedError`), the depth limit (`DepthLimitError`) or a
   * widening narrowing (`WideningError`). Left uncaught in a handler, the rejection ends the
   * handler's step with that code. Anything that happens once the step started (a throw, a
   * timeout, a cancel) resolves as an {@link AgentResult} with that status.
   */
  delegate<TOutput = unknown>(
    agent: AgentTarget,
    input: string | AgentInput,
    parentCtx: ExecContext,
    narrowing?: ContextNarrowing,
  ): Promise<AgentResult<TOutput>>;
  /**
   * Calls a registered tool as a `tool_call` child step. Refused before any step, it
   * rejects as {@link AgentRuntime.delegate} does: an unknown tool (`NotFoundError`,
   * `NOT_FOUND`), a tool the context may not call (`PermissionDeniedError`), a name that is
   * not a string or no context (`InvalidParamsError`). Once its step began it resolves, and
   * every ending is a status: `error` with `SCHEMA_VIOLATION` when the arguments fail the
   * tool's schema (the tool never runs), `error` for a failure, a policy's refusal or an
   * open breaker, `timeout`. (A tool manager's own `call` never rejects; it answers
   * `not_found` and `permission_denied` as statuses.)
   */
  callTool<TOutput = unknown>(
    name: string,
    args: unknown,
    ctx: ExecContext,
  ): Promise<ToolResult<TOutput>>;
  /**
   * Calls a registered engine (default `scripted`) inside the step of `ctx`: its tokens go
   * into the step's stream (unless `options.stream` is `false`), its use is reserved and
   * committed on the step's budgets, and the step's provenance reports it (NERVE-4020).
   * From a worker thread the call is made by the host, on the step's own context.
   *
   * Rejects with `NotFoundError` (no such engine), `CircuitOpenError` (its breaker is open;
   * the step gets an `escalation`), `BudgetExceededError` (before any request), or the
   * engine's typed error (`EngineError`, `RateLimitedError`, `TimeoutError`).
   */
  chat(call: ChatCall, ctx: ExecContext, options?: ChatCallOptions): Promise<ChatResult>;
  /**
   * Records a fact of the run of `ctx`'s step (NERVE-4004): checked against the flow's
   * `fact_schemas[type]` when there is one, stored as a fact emitted by the step, then
   * published as the step's `fact` event — stored first, so what a subscriber sees is in the
   * store. Rejects with `SchemaViolationError` (nothing stored or published), or
   * `InvalidParamsError` outside a step.
   */
  emitFact(
    fact: { readonly type: string; readonly data: unknown; readonly schema_uri?: string | null },
    ctx: ExecContext,
  ): Promise<FactRecord>;
  /**
   * A file operation (`read`, `write`, `list`, `stat`, `delete`) as an `fs_op` child step,
   * through the FS broker of the run's `fs_policy` (POLICY-3001). Resolves API.md's output
   * (`{ content }`, `{ bytes }`, `{ entries }`, `{ type, size, mtime }`, `{ deleted }`);
   * rejects with the step's typed error: `PolicyDeniedError` (outside the sandbox, not
   * allowed, over the quota, no `fs_policy`), `NotFoundError`, `SchemaViolationError`.
   */
  fs(request: FsOpInput, ctx: ExecContext): Promise<FsResult>;
  /**
   * Tiered memory (seed 002), scoped by the context given: `recall(query, ctx)`,
   * `store(event, ctx)` (a `store_memory` action for the policy), `consolidate(ctx)`. In a
   * worker thread the calls go to the host's memory, on the step's context there.
   */
  readonly memory: AgentMemory;
}
