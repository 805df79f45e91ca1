/**
 * @module The runtime facade: registries, contexts, and the invoke / delegate / stream /
 * callTool entry points. It composes the actor system, the step runner, placement and the
 * store; it does not do their work.
 */
import type { Tracer } from '@opentelemetry/api';
import { createActor } from 'xstate';
import type { Clock } from '../context/clock.js';
import {
  type ContextNarrowing,
  type CreateContextOptions,
  type ExecContext,
  type TokenUsage,
} from '../context/exec-context.js';
import { createContext } from '../context/create-context.js';
import type { IdSource } from '../context/id-source.js';
import type { StreamTap } from '../context/stream-sink.js';
import { CancelledError } from '../errors/cancelled-error.js';
import { ConflictError } from '../errors/conflict-error.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import { PermissionDeniedError } from '../errors/permission-denied-error.js';
import { createLogger, type Logger } from '../observability/logger.js';
import { defaultTracer } from '../observability/tracer.js';
import { memoryStore } from '../store/memory-store.js';
import type { RunRecord } from '../store/records.js';
import type { RunStore } from '../store/run-store.js';
import type { ToolDefinition } from '../tools/define-tool.js';
import { ToolRegistry, type ToolInfo } from '../tools/tool-registry.js';
import type { ToolResult } from '../tools/tool-result.js';
import { reportToBreaker, refuseByBreaker } from '../supervisors/breaker-guard.js';
import { BreakerTable } from '../supervisors/breaker-table.js';
import type { BreakerOptions } from '../supervisors/circuit-breaker.js';
import { assertDepth, DEFAULT_MAX_DEPTH } from '../supervisors/depth-limit.js';
import { ActorSystem } from './actor-system.js';
import { agentMachine, type AgentActor, type AgentStats } from './agent-machine.js';
import { AgentStatsBatch } from './agent-stats-batch.js';
import type { AgentDefinition, AgentRuntime, AgentTarget } from './agent-runtime.js';
import {
  isAgentOutcome,
  toAgentInput,
  type AgentInput,
  type AgentOutcome,
  type AgentResult,
} from './agent-result.js';
import { executeInline } from './inline-placement.js';
import { callTool } from './tool-call.js';
import { WorkerPool, type WorkerPoolOptions } from './worker-pool.js';
import { executeInWorker } from './worker-placement.js';
import { RunStream } from './run-stream.js';
import { closeRun, openRun, runStatusFor, sumUsage, type RunRecordsDeps } from './run-records.js';
import { runStep, type StepOutcome, type StepRunnerDeps } from './step-runner.js';
import { toAgentResult } from './to-agent-result.js';

/** Options of {@link createRuntime}. */
export interface RuntimeOptions {
  /** Where runs, steps and event logs go; default an in-memory store. */
  readonly store?: RunStore;
  readonly clock?: Clock;
  readonly ids?: IdSource;
  /** Default: the global OpenTelemetry tracer provider's `axon` tracer. */
  readonly tracer?: Tracer;
  /** Default: a pino logger on stderr at `AXON_LOG_LEVEL` (or `warn`), secrets redacted. */
  readonly logger?: Logger;
  readonly agents?: readonly AgentDefinition[];
  readonly tools?: readonly ToolDefinition[];
  /** Maximum delegation depth (the root step is depth 1); default 5. */
  readonly maxDepth?: number;
  /** The pool id inline steps report; default `local`. */
  readonly poolId?: string;
  /** The worker-thread pool of worker-placed agents (started on first use). */
  readonly workers?: WorkerPoolOptions;
  /** A circuit breaker per agent (POLICY-3002); default Nerva's (3 failures, 60 s); `false` for none. */
  readonly breakers?: BreakerOptions | false;
}

/**
 * An axon runtime: agents and tools, run as step actors under supervision, with every event
 * in the store's log.
 */
export class Runtime implements AgentRuntime {
  readonly system: ActorSystem;
  readonly store: RunStore;
  readonly logger: Logger;
  readonly maxDepth: number;
  readonly #deps: StepRunnerDeps;
  readonly #runDeps: RunRecordsDeps;
  readonly #agents = new Map<
    string,
    { readonly def: AgentDefinition; readonly actor: AgentActor; readonly stats: AgentStatsBatch }
  >();
  readonly #tools = new ToolRegistry();
  readonly #workerOptions: WorkerPoolOptions;
  readonly #breakers: BreakerTable;
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
    this.#breakers = new BreakerTable(this.system.clock, options.breakers ?? {});
    this.store = options.store ?? memoryStore();
    this.logger = options.logger ?? createLogger();
    this.#deps = {
      store: this.store,
      system: this.system,
      tracer: options.tracer ?? defaultTracer(),
      logger: this.logger,
      poolId: options.poolId ?? 'local',
    };
    this.#runDeps = {
      store: this.store,
      clock: this.system.clock,
      ids: this.system.ids,
      logger: this.logger,
    };
    // Given worker options are checked now; the default pool starts on first use.
    if (options.workers) this.#workers = this.#newWorkerPool();
    for (const agent of options.agents ?? []) this.registerAgent(agent);
    for (const tool of options.tools ?? []) this.registerTool(tool);
  }

  /** Registers an agent and starts its actor; a duplicate name is refused with `ConflictError`. */
  registerAgent(agent: AgentDefinition): this {
    if ((agent as Partial<AgentDefinition> | null)?.kind !== 'agent') {
      throw new TypeError('registerAgent: expected an agent definition from defineAgent()');
    }
    if (this.#agents.has(agent.name))
      throw new ConflictError(`an agent named "${agent.name}" is already registered`);
    const actor = this.spawnAgent(agent.name, `agent:${agent.name}`);
    this.#agents.set(agent.name, {
      def: agent,
      actor,
      stats: new AgentStatsBatch(actor, this.system.clock),
    });
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

  /** Registered agents' names and descriptions. */
  listAgents(): { readonly name: string; readonly description: string }[] {
    return [...this.#agents.values()].map(({ def }) => ({
      name: def.name,
      description: def.description,
    }));
  }

  /** The tools `ctx` may call, with their JSON Schemas. */
  discoverTools(ctx: ExecContext = this.createContext()): ToolInfo[] {
    return this.#tools.discover(ctx);
  }

  /**
   * Call statistics of a registered agent, from its actor. Invocations reach the actor in
   * batches (see `AgentStatsBatch`); reading the statistics delivers what has gathered, so
   * they are always current.
   */
  agentStats(
    name: string,
  ): AgentStats & { readonly state: 'idle' | 'busy'; readonly active: number } {
    const entry = this.#agents.get(name);
    if (!entry) throw new NotFoundError('agent', name);
    entry.stats.flush();
    const snap = entry.actor.getSnapshot();
    const { totalCalls, successes, failures, lastInvokedAt, avgDurationMs, active } = snap.context;
    return {
      state: snap.value,
      active,
      totalCalls,
      successes,
      failures,
      lastInvokedAt,
      avgDurationMs,
    };
  }

  /**
   * Spawns an idle agent actor, registered in the actor system under `id` (default a new
   * actor id). Registered agents each have one; services may spawn more (per session, say).
   */
  spawnAgent(name: string, id: string = this.system.ids.id('actor')): AgentActor {
    const actor = createActor(agentMachine, { id, input: { name } });
    actor.subscribe({
      error: (err) => {
        this.system.reportFailure(id, err);
      },
    });
    actor.start();
    this.system.register({ id, kind: 'agent', name, ref: actor });
    return actor;
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
    return this.#invokeTree<TOutput>(agent, input, ctx, undefined, null);
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
    return this.#invokeTree<TOutput>(agent, input, parentCtx, narrowing, null);
  }

  /**
   * Invokes agents in order within one run; each output becomes the next agent's message
   * (strings as they are, anything else as JSON). Stops at the first result that is not a
   * success and returns it; otherwise returns the last.
   */
  async invokeChain<TOutput = unknown>(
    agents: readonly AgentTarget[],
    input: string | AgentInput,
    ctx: ExecContext = this.createContext(),
  ): Promise<AgentResult<TOutput>> {
    this.#assertOpen();
    if (agents.length === 0)
      throw new InvalidParamsError('invokeChain: agents must not be empty', { param: 'agents' });
    const defs = agents.map((a) => this.#resolveAgent(a));
    const run = await openRun(this.#runDeps, ctx, defs.map((d) => d.name).join(' > '));
    let message = toAgentInput(input);
    let result: AgentResult<TOutput> | null = null;
    const usages: TokenUsage[] = [];
    try {
      for (const def of defs) {
        result = await this.#runAgent<TOutput>(def, message, ctx, undefined, run.runId, null);
        usages.push(result.usage);
        if (result.status !== 'success') break;
        const out: unknown = result.output;
        message = { message: typeof out === 'string' ? out : JSON.stringify(out) };
      }
    } finally {
      if (run.owned) {
        await closeRun(this.#runDeps, run, runStatusFor(result), sumUsage(usages));
      }
    }
    return result as AgentResult<TOutput>;
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
      (tap) => this.#invokeTree<TOutput>(agent, input, ctx, undefined, tap),
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
    return callTool<TOutput>(
      {
        steps: this.#deps,
        runs: this.#runDeps,
        tools: this.#tools,
        breakers: this.#breakers,
        closed: this.#closed,
      },
      name,
      args,
      ctx,
    );
  }

  /** The run record, or `null`. */
  getRun(runId: string): Promise<RunRecord | null> {
    return this.store.getRun(runId);
  }

  /** Stops every agent actor and closes the store. Further invocations are refused. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const { stats } of this.#agents.values()) stats.flush();
    for (const entry of this.system.list('agent')) {
      entry.ref.stop();
      this.system.unregister(entry.id);
    }
    this.#breakers.stop();
    await this.#workers?.destroy();
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

  #resolveAgent(agent: AgentTarget): AgentDefinition {
    if (typeof agent === 'string') {
      const entry = this.#agents.get(agent);
      if (!entry) throw new NotFoundError('agent', agent);
      return entry.def;
    }
    if (typeof agent !== 'object' || (agent as { kind?: unknown }).kind !== 'agent') {
      throw new InvalidParamsError(
        'agent must be a registered name or a definition from defineAgent',
        { param: 'agent' },
      );
    }
    return agent;
  }

  async #invokeTree<TOutput>(
    agent: AgentTarget,
    input: string | AgentInput,
    ctx: ExecContext,
    narrowing: ContextNarrowing | undefined,
    tap: StreamTap | null,
  ): Promise<AgentResult<TOutput>> {
    this.#assertOpen();
    const def = this.#resolveAgent(agent);
    const agentInput = toAgentInput(input);
    const run = await openRun(this.#runDeps, ctx, def.name);
    let result: AgentResult<TOutput> | null = null;
    try {
      result = await this.#runAgent<TOutput>(def, agentInput, ctx, narrowing, run.runId, tap);
      return result;
    } finally {
      if (run.owned) {
        await closeRun(this.#runDeps, run, runStatusFor(result), result?.usage ?? null);
      }
    }
  }

  async #runAgent<TOutput>(
    def: AgentDefinition,
    input: AgentInput,
    parentCtx: ExecContext,
    narrowing: ContextNarrowing | undefined,
    runId: string,
    tap: StreamTap | null,
  ): Promise<AgentResult<TOutput>> {
    if (!parentCtx.canUseAgent(def.name)) throw new PermissionDeniedError('agent', def.name);
    assertDepth(parentCtx, def.name, this.maxDepth);
    const stats = this.#agents.get(def.name)?.stats;
    stats?.started(this.system.clock.now());
    const breaker = this.#breakers.get('agent', def.name);
    const admitted = breaker?.tryAcquire() ?? true;
    let outcome: StepOutcome | null = null;
    let special: AgentOutcome | null = null;
    try {
      outcome = await runStep(this.#deps, {
        type: 'agent',
        name: def.name,
        input,
        runId,
        parentCtx,
        narrowing,
        timeoutMs: def.timeoutMs,
        operation: 'invoke_agent',
        // No tap of its own: the step streams to its parent context's.
        tap: tap ?? undefined,
        placement: def.placement,
        execute: async (ctx, step) => {
          if (!admitted && breaker) refuseByBreaker(breaker, step);
          const out =
            def.placement === 'inline'
              ? await executeInline(def, input, ctx, step, this)
              : await executeInWorker(def, input, ctx, step, this, this.#workerPool());
          if (!isAgentOutcome(out)) return out;
          special = out;
          return { status: out.status, message: out.message, data: out.data };
        },
      });
    } finally {
      stats?.finished(outcome?.status === 'succeeded', outcome?.durationMs ?? 0);
      if (breaker && admitted) reportToBreaker(breaker, outcome);
    }
    return toAgentResult<TOutput>(def.name, outcome, special);
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
