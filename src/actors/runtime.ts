/**
 * @module The runtime facade: registries, contexts, and the invoke / delegate / stream /
 * callTool entry points. It composes the actor system, the step runner, placement and the
 * store; it does not do their work.
 *
 * It is past 500 lines on purpose: every operation of API.md is a method here, so an
 * embedded service has what the server exposes, each a documented one-line delegation to
 * the module that does the work (`flow-api`, `step-submission`, `run-resume`, …).
 */
import {
  type ContextNarrowing,
  type CreateContextOptions,
  type ExecContext,
} from '../context/exec-context.js';
import { createContext } from '../context/create-context.js';
import { CancelledError } from '../errors/cancelled-error.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import type { Engine } from '../engines/chat-request.js';
import type { ChatResult } from '../engines/chat-tokens.js';
import { createEngineRegistry, type EngineRegistry } from '../engines/engine-registry.js';
import { createLogger, type Logger } from '../observability/logger.js';
import { defaultTracer } from '../observability/tracer.js';
import { memoryStore } from '../store/memory-store.js';
import { redactingStore } from '../store/redacting-store.js';
import { redactingTracer } from '../observability/redacting-tracer.js';
import type { StepEvent } from '../streams/events.js';
import { memoryHotTier } from '../memory/hot-tier.js';
import type { AgentMemory, Memory } from '../memory/memory-types.js';
import { TieredMemory } from '../memory/tiered-memory.js';
import type {
  ApprovalRecord,
  CallRecording,
  CheckpointRecord,
  FactQuery,
  FactRecord,
  FlowRecord,
  RunRecord,
  StepRecord,
} from '../store/records.js';
import type { RunStore } from '../store/run-store.js';
import type { ToolDefinition } from '../tools/define-tool.js';
import { ToolRegistry, type ToolInfo } from '../tools/tool-registry.js';
import type { ToolResult } from '../tools/tool-result.js';
import { BreakerTable } from '../supervisors/breaker-table.js';
import { DEFAULT_MAX_DEPTH } from '../supervisors/depth-limit.js';
import { ActorSystem } from './actor-system.js';
import type { AgentActor } from './agent-machine.js';
import { AgentRegistry, type AgentSnapshot } from './agent-registry.js';
import type { AgentDefinition, AgentRuntime, AgentTarget } from './agent-runtime.js';
import type { AgentInput, AgentResult } from './agent-result.js';
import { invokeChain, invokeTree, runAgent, type AgentInvocationHost } from './agent-invocation.js';
import {
  RunLedgers,
  stepBudgets,
  submitStep,
  type SubmissionHost,
  type SubmittedStep,
} from './step-submission.js';
import { callTool, type ToolCallDeps } from './tool-call.js';
import { RunCalls } from './run-calls.js';
import { runFsOp, type FsOpDeps } from './fs-op.js';
import type { FsOpInput, FsResult } from '../policy/fs-broker.js';
import { PolicyGate } from './policy-gate.js';
import { noopPolicy, type PolicyEngine } from '../policy/policy-engine.js';
import { memoryRateLimiter } from '../policy/rate-limiter.js';
import { runCheckpointStep } from './checkpoint-step.js';
import { runGateEvalStep } from './gate-eval.js';
import { followStep as followStepLog, StepFeeds, type FollowOptions } from './step-follow.js';
import { decideApproval, type DecidedApproval } from './approvals.js';
import { resumeRun, resumeRuns, type ResumedRun, type ResumeDeps } from './run-resume.js';
import { RuntimeTools } from './runtime-tools.js';
import type { RuntimeOptions } from './runtime-options.js';

export type { RuntimeOptions } from './runtime-options.js';
import {
  appendFact,
  emitStepFact,
  cancelRun,
  cancelStep,
  checkpointRun,
  completeRun,
  createFlow,
  createFlowRun,
  listRunFacts,
  listFlowFacts,
  type FlowApiDeps,
} from './flow-api.js';
import {
  chatInStep,
  type ChatCall,
  type ChatCallOptions,
  type EngineCallDeps,
} from './engine-call.js';
import { runLlmStep, type LlmStepResult, type LlmStepRunDeps } from './llm-step.js';
import type { LlmCallOutput, LlmPlanOutput } from './llm-steps.js';
import { WorkerPool, type WorkerPoolOptions } from './worker-pool.js';
import { RunStream } from './run-stream.js';
import type { RunRecordsDeps } from './run-records.js';
import type { StepRunnerDeps } from './step-runner.js';

/**
 * An axon runtime: agents and tools, run as step actors under supervision, with every event
 * in the store's log.
 */
export class Runtime implements AgentRuntime {
  readonly system: ActorSystem;
  readonly store: RunStore;
  readonly logger: Logger;
  readonly maxDepth: number;
  /** Wakes the followers of step logs (`followStep`). */
  readonly #feeds = new StepFeeds();
  readonly #deps: StepRunnerDeps;
  readonly #runDeps: RunRecordsDeps & FlowApiDeps;
  readonly #agents: AgentRegistry;
  readonly #tools: ToolRegistry;
  readonly #catalog: RuntimeTools;
  readonly #engines: EngineRegistry;
  readonly #host: AgentInvocationHost;
  readonly #submissions: SubmissionHost;
  readonly #engineDeps: EngineCallDeps;
  readonly #llmDeps: LlmStepRunDeps;
  readonly #workerOptions: WorkerPoolOptions;
  readonly #breakers: BreakerTable;
  readonly #gate: PolicyGate;
  readonly #runLedgers = new RunLedgers();
  readonly #fsDeps: FsOpDeps;
  readonly #policy: PolicyEngine;
  readonly #memory: Memory;
  /** {@inheritDoc AgentRuntime.memory} */
  readonly memory: AgentMemory;
  #workers: WorkerPool | null = null;
  #closed = false;

  /** @internal Use {@link createRuntime}. */
  constructor(options: RuntimeOptions = {}) {
    const maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
    if (!(Number.isInteger(maxDepth) && maxDepth >= 1)) {
      throw new RangeError(`createRuntime: maxDepth must be an integer >= 1, got ${maxDepth}`);
    }
    this.maxDepth = maxDepth;
    this.#workerOptions = options.workers ?? {};

    this.system = new ActorSystem({
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.ids ? { ids: options.ids } : {}),
    });
    this.#agents = new AgentRegistry(this.system);
    this.#breakers = new BreakerTable(this.system.clock, options.breakers ?? {});
    const redact = options.redact ?? [];
    this.store = redactingStore(options.store ?? memoryStore(), redact);
    this.logger = options.logger ?? createLogger({ redactKeys: redact });
    this.#deps = {
      store: this.store,
      system: this.system,
      tracer: redactingTracer(options.tracer ?? defaultTracer(), redact),
      logger: this.logger,
      poolId: options.poolId ?? 'local',
      replicaId: options.replicaId ?? null,
      feeds: this.#feeds,
    };
    this.#runDeps = {
      store: this.store,
      clock: this.system.clock,
      ids: this.system.ids,
      logger: this.logger,
      system: this.system,
      open: new Set(),
      poolId: this.#deps.poolId,
      replicaId: this.#deps.replicaId ?? null,
    };
    this.#policy = options.policy ?? noopPolicy;
    const memory = (this.#memory =
      options.memory ?? new TieredMemory({ hot: memoryHotTier({ clock: this.system.clock }) }));
    this.#gate = new PolicyGate({
      store: this.store,
      policy: this.#policy,
      clock: this.system.clock,
      logger: this.logger,
      limiter: options.rateLimiter ?? memoryRateLimiter(this.system.clock),
    });
    this.#host = {
      gate: this.#gate,
      steps: this.#deps,
      runs: this.#runDeps,
      breakers: this.#breakers,
      maxDepth,
      runtime: this,
      stats: (name) => this.#agents.stats(name),
      resolve: (agent) => this.#agents.resolve(agent),
      assertOpen: () => {
        this.#assertOpen();
      },
      workerPool: () => this.#workerPool(),
    };
    this.#tools = new ToolRegistry(this.system.clock);
    this.#catalog = new RuntimeTools(
      this.#tools,
      options.toolManagers ?? [],
      this.logger,
      this.system.clock,
    );
    this.#engines = createEngineRegistry(options.engines ?? []);
    this.#engineDeps = {
      gate: this.#gate,
      engines: this.#engines,
      breakers: this.#breakers,
      tracer: this.#deps.tracer,
    };
    this.#llmDeps = {
      steps: this.#deps,
      runs: this.#runDeps,
      llm: {
        tools: this.#catalog,
        chat: (call, ctx, chatOptions) => this.chat(call, ctx, chatOptions),
        callTool: (name, args, ctx) => this.callTool(name, args, ctx),
      },
    };
    this.#submissions = {
      gate: this.#gate,
      store: this.store,
      logger: this.logger,
      callsFor: (run, clientToken, resumed) =>
        new RunCalls(
          this.store,
          this.system.clock,
          run,
          clientToken,
          options.replicaId ?? null,
          resumed,
        ),
      contextFor: (run, step) => {
        const shared = this.#runLedgers.acquire(run);
        const ctx = this.createContext({
          runId: run.run_id,
          budgets: stepBudgets(run, step, this.system.clock.now()),
          ledgerParent: shared.ledger,
        });
        return { ctx, release: shared.release };
      },
      runAgent: (agent, input, ctx, runId, submission) =>
        runAgent(
          this.#host,
          this.#agents.resolve(agent),
          input,
          ctx,
          undefined,
          runId,
          null,
          submission,
        ),
      callTool: (name, args, ctx, submission) =>
        callTool(this.#toolDeps(), name, args, ctx, submission),
      runLlm: (type, input, ctx, submission) =>
        runLlmStep(this.#llmDeps, type, input, ctx, submission),
      runFsOp: (input, ctx, submission) => runFsOp(this.#fsDeps, input, ctx, submission),
      runCheckpoint: (label, ctx, runId, submission) =>
        runCheckpointStep(this.#deps, this.#runDeps, label, ctx, runId, submission),
      runGateEval: (input, ctx, runId, submission) =>
        runGateEvalStep(this.#deps, input, ctx, runId, submission),
    };
    this.#fsDeps = {
      steps: this.#deps,
      runs: this.#runDeps,
      gate: this.#gate,
      store: this.store,
      dataDir: options.dataDir ?? './.axon',
      brokers: new Map(),
    };
    this.memory = {
      recall: (query, ctx) => memory.recall(query, ctx),
      store: async (event, ctx) => {
        // Checkpoint 3, during execution: what an agent writes to memory.
        if (this.#gate.applies(ctx))
          await this.#gate.check('store_memory', event.tier ?? 'hot', ctx);
        await memory.store(event, ctx);
      },
      consolidate: (ctx) => memory.consolidate(ctx),
    };
    // Given worker options are checked now; the default pool starts on first use.
    if (options.workers) this.#workers = this.#newWorkerPool();
    for (const agent of options.agents ?? []) this.registerAgent(agent);
    for (const tool of options.tools ?? []) this.registerTool(tool);
  }

  /** Registers an agent and starts its actor; a duplicate name is refused with `ConflictError`. */
  registerAgent(agent: AgentDefinition): this {
    this.#agents.register(agent);
    return this;
  }

  /** Registers a function tool; a duplicate name is refused with `ConflictError`. */
  registerTool(tool: ToolDefinition): this {
    if ((tool as Partial<ToolDefinition> | null)?.kind !== 'tool') {
      throw new TypeError('registerTool: expected a tool definition from defineTool()');
    }
    this.#tools.register(tool);
    return this;
  }

  /** Registers an engine; a duplicate name is refused with `ConflictError`. */
  registerEngine(engine: Engine): this {
    this.#engines.register(engine);
    return this;
  }

  /** Registered engines' names. */
  listEngines(): string[] {
    return this.#engines.names();
  }

  /** Registered agents' names and descriptions. */
  listAgents(): { readonly name: string; readonly description: string }[] {
    return this.#agents.list();
  }

  /**
   * Every tool `ctx` may call — function tools and those of the tool managers — with their
   * JSON Schemas (NERVE-4011).
   */
  listTools(ctx: ExecContext = this.createContext()): Promise<ToolInfo[]> {
    return this.#catalog.all.discover(ctx);
  }

  /** The function tools `ctx` may call, with their JSON Schemas, at once. */
  discoverTools(ctx: ExecContext = this.createContext()): ToolInfo[] {
    return this.#tools.list(ctx);
  }

  /**
   * Call statistics of a registered agent, from its actor. Invocations reach the actor in
   * batches (see `AgentStatsBatch`); reading the statistics delivers what has gathered, so
   * they are always current.
   */
  agentStats(name: string): AgentSnapshot {
    return this.#agents.snapshot(name);
  }

  /**
   * Spawns an idle agent actor, registered in the actor system under `id` (default a new
   * actor id). Registered agents each have one; services may spawn more (per session, say).
   */
  spawnAgent(name: string, id: string = this.system.ids.id('actor')): AgentActor {
    return this.#agents.spawn(name, id);
  }

  /** A root context using this runtime's clock and ids. */
  createContext(options: Omit<CreateContextOptions, 'clock' | 'ids'> = {}): ExecContext {
    return createContext({
      logger: this.logger,
      ...options,
      clock: this.system.clock,
      ids: this.system.ids,
    });
  }

  /**
   * Invokes an agent. With a context outside any run, a run is created for the invocation
   * and completed (or failed) with it.
   *
   * @example
   * const result = await runtime.invoke('planner', 'Plan a trip to Berlin');
   * if (result.status === 'success') console.log(result.output);
   */
  invoke<TOutput = unknown>(
    agent: AgentTarget,
    input: string | AgentInput,
    ctx: ExecContext = this.createContext(),
  ): Promise<AgentResult<TOutput>> {
    // Not async itself: one promise fewer per invocation (#invokeTree never throws).
    return invokeTree<TOutput>(this.#host, agent, input, ctx, undefined, null);
  }

  /** {@inheritDoc AgentRuntime.delegate} */
  delegate<TOutput = unknown>(
    agent: AgentTarget,
    input: string | AgentInput,
    parentCtx: ExecContext,
    narrowing?: ContextNarrowing,
  ): Promise<AgentResult<TOutput>> {
    if (!(parentCtx as ExecContext | undefined)) {
      return Promise.reject(
        new InvalidParamsError('delegate: parentCtx is required', { param: 'parentCtx' }),
      );
    }
    return invokeTree<TOutput>(this.#host, agent, input, parentCtx, narrowing, null);
  }

  /**
   * Invokes agents in order within one run; each output becomes the next agent's message
   * (strings as they are, anything else as JSON). Stops at the first result that is not a
   * success and returns it; otherwise returns the last.
   */
  invokeChain<TOutput = unknown>(
    agents: readonly AgentTarget[],
    input: string | AgentInput,
    ctx: ExecContext = this.createContext(),
  ): Promise<AgentResult<TOutput>> {
    return invokeChain<TOutput>(this.#host, agents, input, ctx);
  }

  /**
   * Streams an invocation: the typed events of the agent's step and, nested by actor path,
   * of every step below it. See {@link RunStream}; `capacity` bounds what its iteration
   * buffers (default 1 024 events).
   */
  stream<TOutput = unknown>(
    agent: AgentTarget,
    input: string | AgentInput,
    ctx: ExecContext = this.createContext(),
    options: { readonly capacity?: number } = {},
  ): RunStream<TOutput> {
    return new RunStream<TOutput>(
      (tap) => invokeTree<TOutput>(this.#host, agent, input, ctx, undefined, tap),
      () => {
        ctx.cancel(new CancelledError('stream cancelled'));
      },
      options.capacity,
    );
  }

  /** {@inheritDoc AgentRuntime.callTool} */
  callTool<TOutput = unknown>(
    name: string,
    args: unknown,
    ctx: ExecContext,
  ): Promise<ToolResult<TOutput>> {
    return callTool<TOutput>(this.#toolDeps(), name, args, ctx);
  }

  #toolDeps(): ToolCallDeps {
    return {
      steps: this.#deps,
      runs: this.#runDeps,
      tools: this.#tools,
      catalog: this.#catalog.all,
      breakers: this.#breakers,
      closed: this.#closed,
      gate: this.#gate,
    };
  }

  /** {@inheritDoc AgentRuntime.chat} */
  chat(call: ChatCall, ctx: ExecContext, options: ChatCallOptions = {}): Promise<ChatResult> {
    if (this.#closed) return Promise.reject(new InvalidParamsError('the runtime is closed'));
    // Outside a step there is no stream for the tokens: they are only in the result.
    const streaming = ctx.stepId === null ? { ...options, stream: false } : options;
    return chatInStep(this.#engineDeps, call, ctx, streaming);
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
    this.#assertOpen();
    return runLlmStep<LlmCallOutput>(this.#llmDeps, 'llm_call', input, ctx);
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
    this.#assertOpen();
    return runLlmStep<LlmPlanOutput>(this.#llmDeps, 'llm_plan', input, ctx);
  }

  /** Stores a flow by content (NERVE-4001); see `createFlow` in `flow-api.ts`. */
  createFlow(body: unknown): Promise<{ readonly flow: FlowRecord; readonly created: boolean }> {
    return createFlow(this.#runDeps, body);
  }

  getFlow(flowId: string): Promise<FlowRecord | null> {
    return this.store.getFlow(flowId);
  }

  getFlowByHash(hash: string): Promise<FlowRecord | null> {
    return this.store.getFlowByHash(hash);
  }

  /** Starts a run of a flow (`POST /v1/flows/{flow_id}/runs`). */
  createRun(flowId: string, body: unknown = {}): Promise<RunRecord> {
    return createFlowRun(this.#runDeps, flowId, body);
  }

  /** Appends a fact to a run, checked against its flow's schema (NERVE-4004). */
  appendFact(runId: string, body: unknown): Promise<FactRecord> {
    return appendFact(this.#runDeps, runId, body);
  }

  /** {@inheritDoc AgentRuntime.fs} */
  async fs(request: FsOpInput, ctx: ExecContext): Promise<FsResult> {
    this.#assertOpen();
    const r = await runFsOp(this.#fsDeps, request, ctx);
    if (r.error) throw r.error;
    return r.output as FsResult;
  }

  /** {@inheritDoc AgentRuntime.emitFact} */
  emitFact(fact: Parameters<AgentRuntime['emitFact']>[0], ctx: ExecContext): Promise<FactRecord> {
    return emitStepFact(this.#runDeps, fact, ctx);
  }

  /** A run's facts in append order, by type, after a fact, up to a limit. */
  listFacts(runId: string, query: Omit<FactQuery, 'runId' | 'flowId'> = {}): Promise<FactRecord[]> {
    return listRunFacts(this.#runDeps, runId, query);
  }

  /** A flow's facts across all its runs, in append order, by type, after a fact, up to a limit. */
  listFlowFacts(
    flowId: string,
    query: Omit<FactQuery, 'runId' | 'flowId'> = {},
  ): Promise<FactRecord[]> {
    return listFlowFacts(this.#runDeps, flowId, query);
  }

  /** Checkpoints a run: its live steps' snapshots and its logs' offsets (NERVE-4005). */
  checkpoint(runId: string, options: { readonly label?: string } = {}): Promise<CheckpointRecord> {
    return checkpointRun(this.#runDeps, runId, options);
  }

  /** Cancels a run: every live step ends `CANCELLED`, then the run is `cancelled`. */
  cancelRun(
    runId: string,
  ): Promise<{ readonly status: 'cancelling'; readonly done: Promise<void> }> {
    return cancelRun(this.#runDeps, runId);
  }

  /** Marks a running run with no live steps `completed`. */
  completeRun(runId: string): Promise<RunRecord> {
    return completeRun(this.#runDeps, runId);
  }

  /** Cancels a live step: it ends `CANCELLED`. */
  cancelStep(stepId: string): Promise<{ readonly status: 'cancelling' }> {
    return cancelStep(this.#runDeps, stepId);
  }

  listCheckpoints(runId: string): Promise<CheckpointRecord[]> {
    return this.store.listCheckpoints(runId);
  }

  /**
   * Submits a step to a running run (`POST /v1/runs/{run_id}/steps`): resolves once it is
   * claimed by its `client_token` — a new step, now running, or the run's step that had the
   * token, which is not run again (NERVE-4003). See `submitStep` in `step-submission.ts`.
   */
  submitStep(runId: string, body: unknown): Promise<SubmittedStep> {
    this.#assertOpen();
    return submitStep(this.#submissions, runId, body);
  }

  /**
   * Picks up a run that a stopped runtime left running in this runtime's (durable) store:
   * steps left running are closed with `WORKER_RESET`, rebuilt from the run's latest
   * checkpoint and their logs, and the submitted ones among them run again under their
   * client tokens; finished steps stand (NERVE-4005). See `run-resume.ts`.
   *
   * @example
   * const runtime = createRuntime({ store: sqliteStore('./.axon/axon.db'), agents });
   * await runtime.resumeRuns(); // after a crash, before taking new work
   */
  resumeRun(runId: string): Promise<ResumedRun> {
    this.#assertOpen();
    return resumeRun(this.#resumeDeps(), runId);
  }

  /** {@link resumeRun} for every `running` run of the store. */
  resumeRuns(): Promise<ResumedRun[]> {
    this.#assertOpen();
    return resumeRuns(this.#resumeDeps());
  }

  #resumeDeps(): ResumeDeps {
    return {
      store: this.store,
      system: this.system,
      clock: this.system.clock,
      logger: this.logger,
      submit: (runId, body) => this.submitStep(runId, body),
      resubmit: (runId, body, resume) => submitStep(this.#submissions, runId, body, resume),
    };
  }

  /**
   * Approves a call that waits for approval (`body`: `{ by, reason? }`, `by` one of its
   * approvers): the suspended step goes on under its id, from the store — its earlier calls
   * served from the run's recording, not made again. See `approvals.ts`.
   *
   * @example
   * const [pending] = await runtime.listApprovals(runId);
   * const { step } = await runtime.approve(pending.approval_id, { by: 'ops-lead' });
   * await step?.done;
   */
  approve(approvalId: string, body: unknown): Promise<DecidedApproval> {
    this.#assertOpen();
    return decideApproval(this.#resumeDeps(), approvalId, 'approved', body);
  }

  /**
   * Rejects a call that waits for approval: its step fails with `POLICY_DENIED` and an
   * `escalation`; the call never runs.
   */
  reject(approvalId: string, body: unknown): Promise<DecidedApproval> {
    this.#assertOpen();
    return decideApproval(this.#resumeDeps(), approvalId, 'rejected', body);
  }

  getApproval(approvalId: string): Promise<ApprovalRecord | null> {
    return this.store.getApproval(approvalId);
  }

  /** A run's approvals, pending and decided, in the order they were asked for. */
  listApprovals(runId: string): Promise<ApprovalRecord[]> {
    return this.store.listApprovals(runId);
  }

  /** A step record (`GET /v1/steps/{step_id}`), or `null`. */
  getStep(stepId: string): Promise<StepRecord | null> {
    return this.store.getStep(stepId);
  }

  /** A run's steps in creation order. */
  listSteps(runId: string): Promise<StepRecord[]> {
    return this.store.listSteps(runId);
  }

  /**
   * Follows a step's log (API.md's `GET /v1/steps/{step_id}/stream`): every event with
   * `seq > afterSeq` (a client's `Last-Event-ID`), then each new one once it is durable,
   * ending after the step's `end` or `error` — at once for a step that has ended. A slow
   * reader holds nothing up: it reads the log at its own pace. Rejects with `NotFoundError`
   * for an unknown step.
   *
   * @example
   * for await (const ev of runtime.followStep(step.step_id, { afterSeq: 3 })) console.log(ev.seq, ev.type);
   */
  followStep(stepId: string, options: FollowOptions = {}): AsyncGenerator<StepEvent, void> {
    const deps = { store: this.store, clock: this.system.clock, feeds: this.#feeds };
    return followStepLog(deps, stepId, options);
  }

  /**
   * A step's logged events with `seq > afterSeq` (what an SSE client resuming with
   * `Last-Event-ID: afterSeq` is owed first), in order.
   */
  readStepEvents(stepId: string, afterSeq = 0): Promise<StepEvent[]> {
    return this.store.readEvents(stepId, afterSeq);
  }

  /** A run's recorded engine and tool calls (record mode), in the order first stored. */
  listRecordings(runId: string): Promise<CallRecording[]> {
    return this.store.listRecordings(runId);
  }

  /** The run record, or `null`. */
  getRun(runId: string): Promise<RunRecord | null> {
    return this.store.getRun(runId);
  }

  /** Stops every agent actor and closes the store. Further invocations are refused. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#agents.stop();
    this.#breakers.stop();
    await this.#workers?.destroy();
    await this.#catalog.all.close();
    await this.#policy.close?.();
    await this.#memory.close();
    await this.store.close();
  }

  /** The worker-thread pool, started on first use. */
  #workerPool(): WorkerPool {
    return (this.#workers ??= this.#newWorkerPool());
  }

  #newWorkerPool(): WorkerPool {
    return new WorkerPool(
      this.#workerOptions,
      (err) => {
        this.logger.error({ err }, 'a worker thread failed');
      },
      this.system.clock,
    );
  }

  #assertOpen(): void {
    if (this.#closed) throw new InvalidParamsError('the runtime is closed');
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
