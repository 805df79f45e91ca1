/**
 * @module The runtime facade: registries, contexts, and the invoke / delegate / stream /
 * callTool / chat entry points that agents and services call, over the operations of API.md
 * it inherits from {@link RunOperations}. Its parts are assembled by `runtime-parts.ts`;
 * it does not do their work.
 */
import type {
  ContextNarrowing,
  CreateContextOptions,
  ExecContext,
} from '../context/exec-context.js';
import type { Span, Tracer } from '@opentelemetry/api';
import type { ChatCall, ChatCallOptions } from '../engines/chat-call.js';
import type { BreakerState } from '../supervisors/circuit-breaker.js';
import type { Engine } from '../engines/chat-request.js';
import type { ChatResult } from '../engines/chat-tokens.js';
import { contextError } from '../context/assert-context.js';
import { CancelledError } from '../errors/cancelled-error.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { ConflictError } from '../errors/conflict-error.js';
import type { DurableAgentDefinition } from '../actors/durable-agent.js';
import { checkAddress } from '../durable/actor-address.js';
import { ActorHandle } from '../durable/actor-handle.js';
import type { SignalResult } from '../durable/actor-signals.js';
import type { ScheduleInput } from '../durable/actor-schedules.js';
import type { DurableAgents } from '../durable/durable-agents.js';
import type { ScheduleRecord } from '../store/actor-records.js';
import { NotFoundError } from '../errors/not-found-error.js';
import type { AgentMemory } from '../memory/memory-types.js';
import type { Logger } from '../observability/logger.js';
import { renderTraceTree } from '../observability/trace-tree.js';
import type { FsOpInput, FsResult } from '../policy/fs-broker.js';
import type { FactRecord } from '../store/records.js';
import { buildTraceTree } from '../store/step-tree.js';
import type { ToolDefinition } from '../tools/define-tool.js';
import type { JsonSchema } from '../tools/json-schema.js';
import type { ToolInfo } from '../tools/tool-registry.js';
import type { ToolResult } from '../tools/tool-result.js';
import type { ActorSystem } from '../actors/actor-system.js';
import type { AgentActor } from '../actors/agent-machine.js';
import type { AgentSnapshot } from '../actors/agent-registry.js';
import type { AgentDefinition, AgentRuntime, AgentTarget } from '../actors/agent-runtime.js';
import type { AgentInput, AgentResult } from '../actors/agent-result.js';
import { emitStepFact } from '../runs/facts.js';
import { RunStream } from '../runs/run-stream.js';
import { invokeChain, invokeTree } from '../steps/agent-invocation.js';
import { chatInStep } from '../steps/engine-call.js';
import { runFsOp } from '../steps/fs-op.js';
import { runLlmStep, type LlmStepResult } from '../steps/llm-step.js';
import type { LlmCallOutput, LlmPlanOutput } from '../steps/llm-steps.js';
import { callTool } from '../steps/tool-call.js';
import { RunOperations } from './run-operations.js';
import { assembleRuntime } from './runtime-parts.js';
import type { RuntimeOptions } from './runtime-options.js';

export type { RuntimeOptions } from './runtime-options.js';

/** Options of `invoke` and `stream`. */
export interface InvokeOptions {
  /**
   * The span the agent's step span is a child of, instead of the context's (how the front
   * door nests an invocation under its `runtime.invoke` stage); default `ctx.span`.
   */
  readonly parentSpan?: Span;
}

/**
 * An axon runtime: agents and tools, run as step actors under supervision, with every event
 * in the store's log.
 */
export class Runtime extends RunOperations implements AgentRuntime {
  readonly system: ActorSystem;
  readonly logger: Logger;
  readonly maxDepth: number;
  /** {@inheritDoc AgentRuntime.memory} */
  readonly memory: AgentMemory;
  #catalogVersion = 0;

  /** @internal Use {@link createRuntime}. */
  constructor(options: RuntimeOptions = {}) {
    super(assembleRuntime(options));
    // Agent handlers get this runtime as their `runtime`.
    this.parts.attach(this);
    const { system, logger, maxDepth, memory, gate } = this.parts;
    this.system = system;
    this.logger = logger;
    this.maxDepth = maxDepth;
    this.memory = {
      recall: (query, ctx, recallOptions) => memory.recall(query, ctx, recallOptions),
      store: async (event, ctx) => {
        // Checkpoint 3, during execution: what an agent writes to memory.
        if (gate.applies(ctx)) await gate.check('store_memory', event.tier ?? 'hot', ctx);
        await memory.store(event, ctx);
      },
      consolidate: (ctx) => memory.consolidate(ctx),
    };
    for (const agent of options.agents ?? []) this.registerAgent(agent);
    for (const tool of options.tools ?? []) this.registerTool(tool);
  }

  /**
   * Registers an agent and starts its actor; a duplicate name is refused with `ConflictError`.
   * A durable agent (`defineAgent({ durable })`) is addressed by key: `runtime.actor(name, key)`.
   */
  registerAgent(agent: AgentDefinition | DurableAgentDefinition): this {
    if (agent.kind === 'durable_agent') {
      if (this.parts.agents.get(agent.name)) {
        throw new ConflictError(`agent "${agent.name}" is registered already`);
      }
      this.parts.agents.register(this.parts.durable.register(agent));
      this.#catalogVersion++;
      return this;
    }
    this.parts.agents.register(agent);
    if (agent.placement === 'container') {
      const { name, module, export: exported } = agent;
      this.parts.containers.prewarm({ kind: 'agent', name, module, export: exported });
    }
    this.#catalogVersion++;
    return this;
  }

  /**
   * Resolves once container placement's engine answers here (and the container program is
   * bundled); rejects with `POOL_UNAVAILABLE` saying what to install when none does.
   */
  async checkContainers(): Promise<void> {
    await this.parts.containers.host.pool().engine();
  }

  /** Registers a function tool; a duplicate name is refused with `ConflictError`. */
  registerTool(tool: ToolDefinition): this {
    if ((tool as Partial<ToolDefinition> | null)?.kind !== 'tool') {
      throw new TypeError('registerTool: expected a tool definition from defineTool()');
    }
    this.parts.tools.register(tool);
    if (tool.container)
      this.parts.containers.prewarm({ kind: 'tool', name: tool.name, ...tool.container });
    this.#catalogVersion++;
    return this;
  }

  /**
   * Grows by one with each agent or function tool registered: a reader of
   * {@link listAgents} and {@link discoverTools} (the front door's registry) reads them again
   * only when it changed.
   */
  get catalogVersion(): number {
    return this.#catalogVersion;
  }

  /**
   * Registers a JSON Schema (2020-12) under `uri`, for facts that name it in `schema_uri`
   * (NERVE-4004). The same schema again changes nothing; another one under a taken URI is
   * refused with `ConflictError`; an invalid schema with `SchemaViolationError`.
   */
  registerSchema(uri: string, schema: JsonSchema): this {
    this.parts.runs.schemas.register(uri, schema);
    return this;
  }

  /**
   * Registers an engine; a duplicate name is refused with `ConflictError`. An engine made
   * without a price table of its own is costed from the runtime's `priceTable`, if it has one.
   */
  registerEngine(engine: Engine): this {
    this.parts.engines.register(engine);
    return this;
  }

  /** Registered engines' names. */
  listEngines(): string[] {
    return this.parts.engines.names();
  }

  /** Registered agents' names and descriptions. */
  listAgents(): { readonly name: string; readonly description: string }[] {
    return this.parts.agents.list();
  }

  /**
   * Every tool `ctx` may call — function tools and those of the tool managers — with their
   * JSON Schemas (NERVE-4011).
   */
  listTools(ctx: ExecContext = this.createContext()): Promise<ToolInfo[]> {
    return this.parts.catalog.all.discover(ctx);
  }

  /** The function tools `ctx` may call, with their JSON Schemas, at once. */
  discoverTools(ctx: ExecContext = this.createContext()): ToolInfo[] {
    return this.parts.tools.list(ctx);
  }

  /**
   * Call statistics of a registered agent, from its actor. Invocations reach the actor in
   * batches (see `AgentStatsBatch`); reading the statistics delivers what has gathered, so
   * they are always current.
   */
  agentStats(name: string): AgentSnapshot {
    return this.parts.agents.snapshot(name);
  }

  /**
   * Spawns an idle agent actor, registered in the actor system under `id` (default a new
   * actor id). Registered agents each have one; services may spawn more (per session, say).
   */
  spawnAgent(name: string, id: string = this.system.ids.id('actor')): AgentActor {
    return this.parts.agents.spawn(name, id);
  }

  /** A root context using this runtime's clock and ids. */
  createContext(options: Omit<CreateContextOptions, 'clock' | 'ids'> = {}): ExecContext {
    return this.parts.createContext(options);
  }

  /**
   * Invokes an agent. With a context outside any run, a run is created for the invocation
   * and completed (or failed) with it.
   *
   * `input` is a string or an {@link AgentInput}, `{ message, args? }`; a string `s` reaches
   * the handler as `{ message: s }`. Whatever happens once the agent's step has begun (a
   * throw, a timeout, a cancel) resolves as the result's status. Rejects — nothing stored,
   * nothing run — on a call that cannot begin, as `delegate` does: `NotFoundError`
   * (`NOT_FOUND`, an agent nobody registered), `InvalidParamsError` (`INVALID_PARAMS`: an
   * input or context of the wrong shape, `details.param` naming it; a closed runtime),
   * `PermissionDeniedError`, a policy's refusal.
   *
   * @example
   * const result = await runtime.invoke('planner', 'Plan a trip to Berlin');
   * if (result.status === 'success') console.log(result.output);
   */
  invoke<TOutput = unknown>(
    agent: AgentTarget,
    input: string | AgentInput,
    ctx: ExecContext = this.createContext(),
    options: InvokeOptions = {},
  ): Promise<AgentResult<TOutput>> {
    // Not async itself: one promise fewer per invocation (#invokeTree never throws).
    return invokeTree<TOutput>(
      this.parts.host,
      agent,
      input,
      ctx,
      undefined,
      null,
      options.parentSpan,
    );
  }

  /** {@inheritDoc AgentRuntime.delegate} */
  delegate<TOutput = unknown>(
    agent: AgentTarget,
    input: string | AgentInput,
    parentCtx: ExecContext,
    narrowing?: ContextNarrowing,
  ): Promise<AgentResult<TOutput>> {
    const wrong = contextError(parentCtx, 'parentCtx');
    if (wrong) return Promise.reject(wrong);
    return invokeTree<TOutput>(this.parts.host, agent, input, parentCtx, narrowing, null);
  }

  /**
   * Invokes agents in order within one run; each output becomes the next agent's message
   * (strings as they are, anything else as JSON). Stops at the first result that is not a
   * success and returns it; otherwise returns the last. Rejects as {@link invoke} does when
   * it cannot begin: every agent is looked up, and the input checked, before anything runs.
   */
  invokeChain<TOutput = unknown>(
    agents: readonly AgentTarget[],
    input: string | AgentInput,
    ctx: ExecContext = this.createContext(),
  ): Promise<AgentResult<TOutput>> {
    return invokeChain<TOutput>(this.parts.host, agents, input, ctx);
  }

  /**
   * Streams an invocation: the typed events of the agent's step and, nested by actor path,
   * of every step below it. See {@link RunStream}; `capacity` bounds what its iteration
   * buffers (default 1 024 events). A call that cannot begin (see {@link invoke}) throws its
   * typed error from the iteration.
   */
  stream<TOutput = unknown>(
    agent: AgentTarget,
    input: string | AgentInput,
    ctx: ExecContext = this.createContext(),
    options: InvokeOptions & { readonly capacity?: number } = {},
  ): RunStream<TOutput> {
    return new RunStream<TOutput>(
      (tap) =>
        invokeTree<TOutput>(this.parts.host, agent, input, ctx, undefined, tap, options.parentSpan),
      () => {
        ctx.cancel(new CancelledError('stream cancelled'));
      },
      options.capacity,
      (err, where) => {
        this.logger.warn({ err, where }, 'a stream subscriber threw; it was isolated');
      },
    );
  }

  /**
   * Checkpoint 1 for a request coming in through a front door (`orchestrator.handle`): asks
   * the policy about `route` on `target` (rate limits) in `ctx`, once — an `invoke` under
   * `ctx` afterwards does not ask again, so a request is counted once. Rejects with the
   * refusal's typed error.
   */
  admitRequest(target: string, ctx: ExecContext): Promise<void> {
    return this.parts.gate.admit(target, ctx);
  }

  /** The tracer the runtime's spans go to (redacting what its logger redacts). */
  get tracer(): Tracer {
    return this.parts.steps.tracer;
  }

  /**
   * The state of the circuit breaker of agent `name`: `closed` (or no breaker yet), `open`
   * or `half_open` — what the front door's registry reports as health.
   */
  breakerState(name: string): BreakerState {
    return this.parts.breakers.get('agent', name)?.state ?? 'closed';
  }

  /** {@inheritDoc AgentRuntime.callTool} */
  callTool<TOutput = unknown>(
    name: string,
    args: unknown,
    ctx: ExecContext,
  ): Promise<ToolResult<TOutput>> {
    return callTool<TOutput>(this.parts.toolDeps(), name, args, ctx);
  }

  /** {@inheritDoc AgentRuntime.chat} */
  chat(call: ChatCall, ctx: ExecContext, options: ChatCallOptions = {}): Promise<ChatResult> {
    if (this.parts.closed()) return Promise.reject(new InvalidParamsError('the runtime is closed'));
    // Outside a step there is no stream for the tokens: they are only in the result.
    const streaming = ctx.stepId === null ? { ...options, stream: false } : options;
    return chatInStep(this.parts.engineDeps, call, ctx, streaming);
  }

  /**
   * Runs an `llm_call` step (API.md): the engine's answer streamed as tokens; with `tools`,
   * the model's tool calls run as `tool_call` child steps (arguments validated first) and
   * their results go back to it, until it answers (NERVE-4010).
   *
   * @example
   * const r = await runtime.llmCall({ messages: [{ role: 'user', content: 'What is 2 + 40?' }], tools: ['add'] });
   */
  llmCall(
    input: unknown,
    ctx: ExecContext = this.createContext(),
  ): Promise<LlmStepResult<LlmCallOutput>> {
    this.parts.assertOpen();
    return runLlmStep<LlmCallOutput>(this.parts.llmDeps, 'llm_call', input, ctx);
  }

  /**
   * Runs an `llm_plan` step (API.md): the engine is offered the named tools' schemas; each
   * valid suggestion is emitted as `tool_suggest` and none is run; invalid ones are
   * reported in `rejected` and a `narration` (NERVE-4010, NERVE-4011).
   */
  llmPlan(
    input: unknown,
    ctx: ExecContext = this.createContext(),
  ): Promise<LlmStepResult<LlmPlanOutput>> {
    this.parts.assertOpen();
    return runLlmStep<LlmPlanOutput>(this.parts.llmDeps, 'llm_plan', input, ctx);
  }

  /** {@inheritDoc AgentRuntime.fs} */
  async fs(request: FsOpInput, ctx: ExecContext): Promise<FsResult> {
    this.parts.assertOpen();
    const r = await runFsOp(this.parts.fsDeps, request, ctx);
    if (r.error) throw r.error;
    return r.output as FsResult;
  }

  /**
   * Run `runId`'s steps as a trace tree, in text: what ran, nested under what called it,
   * with durations, tokens, cost and error codes, each line tagged with the run's own trace
   * id (`[t_4bf92f.1]`: its first six hex digits, then the step's place in the tree). A step
   * still running reads `running`; a run with no steps gives an empty string. Rejects with
   * `NotFoundError` for an unknown run, `InvalidParamsError` for a `runId` that is not a
   * non-empty string.
   *
   * For the tree's nodes rather than its text: `buildTraceTree(await runtime.listSteps(runId))`.
   *
   * @example
   * const result = await runtime.invoke('boss', 'add things');
   * console.log(await runtime.traceTree(result.runId));
   * // [t_4bf92f] agent boss (3ms)
   * // +-- [t_4bf92f.1] agent calculator (2ms)
   * //     +-- [t_4bf92f.1.1] tool add (0ms)
   */
  async traceTree(runId: string): Promise<string> {
    if (typeof runId !== 'string' || runId.length === 0) {
      throw new InvalidParamsError('traceTree: runId must be a run id (a non-empty string)', {
        param: 'runId',
      });
    }
    const run = await this.store.getRun(runId);
    if (!run) throw new NotFoundError('run', runId);
    const steps = await this.store.listSteps(runId);
    return renderTraceTree(buildTraceTree(steps), { traceId: run.trace_id });
  }

  /** {@inheritDoc AgentRuntime.emitFact} */
  emitFact(fact: Parameters<AgentRuntime['emitFact']>[0], ctx: ExecContext): Promise<FactRecord> {
    return emitStepFact(this.parts.runs, fact, ctx);
  }

  /**
   * The actor `key` of durable agent `name` (of `options.userId`, default nobody's): one actor
   * everywhere the store is shared, across restarts. The handle holds nothing; an actor is
   * created with its first message. `NOT_FOUND` when no durable agent has that name, at once.
   *
   * @example
   * const support = runtime.actor('support', 'customer-42');
   * await support.send({ text: 'my order is late' });
   * console.log((await support.state())?.state);
   */
  actor<TInput = unknown, TOutput = unknown>(
    name: string,
    key: string,
    options: { readonly userId?: string | null } = {},
  ): ActorHandle<TInput, TOutput> {
    this.parts.durable.definition(name);
    const address = checkAddress({ name, key, userId: options.userId ?? null });
    return new ActorHandle<TInput, TOutput>(this.parts.durable, address, (stepId) =>
      this.followStep(stepId),
    );
  }

  /**
   * Sends event `event` with `data` to the actors that wait for it (`actor.waitFor`) — those of
   * `options.userId` (default nobody's) whose `match` fits; resolves how many it woke, and the
   * waits whose schema the data failed (not woken).
   */
  signal(
    event: string,
    data: unknown,
    options: { readonly userId?: string | null } = {},
  ): Promise<SignalResult> {
    return this.parts.durable.signal(options.userId ?? null, event, data);
  }

  /**
   * Schedules `input.message` to the actor (`input.agent`, `input.key`) at each time of
   * `input.cron` (see {@link ScheduleInput}); resolves the schedule. List, pause, resume and
   * remove them through `runtime.durable.schedules`.
   *
   * @example
   * await runtime.schedule({ cron: '0 9 * * 1-5', timezone: 'Europe/Berlin', agent: 'digest', key: 'team-a', message: {} });
   */
  schedule(
    input: ScheduleInput,
    options: { readonly userId?: string | null } = {},
  ): Promise<ScheduleRecord> {
    return this.parts.durable.schedules.create(options.userId ?? null, input);
  }

  /**
   * The durable agents of this runtime: their actors, schedules and events, as the HTTP API
   * and the CLI reach them.
   */
  get durable(): DurableAgents {
    return this.parts.durable;
  }

  /**
   * Picks up the durable agents' work a stopped runtime left in the store (messages left
   * being handled or queued, waits whose wake fired). Runs by itself on the first durable
   * agent registered; call it to know what it found.
   */
  recoverActors(): Promise<{ readonly actors: number; readonly wakes: number }> {
    return this.parts.durable.recover();
  }

  /** Stops every agent actor and closes the store. Further invocations are refused. */
  close(): Promise<void> {
    return this.parts.close();
  }
}

/**
 * Creates a runtime. Every option has an embedded default: an in-memory store, the system
 * clock, random ids, the global tracer, a redacting logger on stderr.
 *
 * @example
 * const runtime = createRuntime({ agents: [echo], tools: [add] });
 * const result = await runtime.invoke('echo', 'hello');
 */
export function createRuntime(options: RuntimeOptions = {}): Runtime {
  return new Runtime(options);
}
