/**
 * @module The parts a runtime is made of, assembled once from its options: the actor system,
 * the store, the registries, the breakers and the policy gate, and the dependencies each
 * module below (placement, runs, steps) is given. The facade (`runtime.ts`,
 * `run-operations.ts`) only delegates to these; nothing here runs a step.
 */
import { heldMessages } from '../durable/held-messages.js';
import { DurableAgents } from '../durable/durable-agents.js';
import { apiSide } from '../durable/fleet-actors.js';
import { runtimeContainers, type RuntimeContainers } from './runtime-containers.js';
import { createContext } from '../context/create-context.js';
import type { CreateContextOptions, ExecContext } from '../context/exec-context.js';
import { createEngineRegistry, type EngineRegistry } from '../engines/engine-registry.js';
import { InternalError } from '../errors/internal-error.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { memoryHotTier } from '../memory/hot-tier.js';
import type { Memory } from '../memory/memory-types.js';
import { TieredMemory } from '../memory/tiered-memory.js';
import { createLogger, type Logger } from '../observability/logger.js';
import { redactingTracer } from '../observability/redacting-tracer.js';
import { defaultTracer } from '../observability/tracer.js';
import { noopPolicy, type PolicyEngine } from '../policy/policy-engine.js';
import { memoryRateLimiter, redisRateLimiter } from '../policy/rate-limiter.js';
import { memoryStore } from '../store/memory/memory-store.js';
import { redactingStore } from '../store/redacting-store.js';
import type { RunStore } from '../store/run-store.js';
import { BreakerTable } from '../supervisors/breaker-table.js';
import { DEFAULT_MAX_DEPTH } from '../supervisors/depth-limit.js';
import { SchemaRegistry } from '../tools/schema-registry.js';
import { ToolRegistry } from '../tools/tool-registry.js';
import { ActorSystem } from '../actors/actor-system.js';
import { AgentRegistry } from '../actors/agent-registry.js';
import type { AgentRuntime } from '../actors/agent-runtime.js';
import { StepFeeds } from '../actors/step-feeds.js';
import { choosePool, placementOf, type PoolCandidate } from '../placement/pool-choice.js';
import { maxThreadsOf } from '../placement/worker/worker-pool-options.js';
import { WorkerPool, type WorkerPoolOptions } from '../placement/worker/worker-pool.js';
import type { FlowApiDeps } from '../runs/flow-api.js';
import { LostSteps } from '../runs/lost-steps.js';
import { createSandbox, type Sandbox } from '../policy/sandbox.js';
import { PolicyGate } from '../runs/policy-gate.js';
import { RunCalls } from '../runs/run-calls.js';
import type { RunRecordsDeps } from '../runs/run-records.js';
import type { ResumeDeps } from '../runs/run-resume.js';
import type { StepRunnerDeps } from '../runs/step-request.js';
import { runAgent, type AgentInvocationHost } from '../steps/agent-invocation.js';
import { runCheckpointStep } from '../steps/checkpoint-step.js';
import type { EngineCallDeps } from '../steps/engine-call.js';
import { runFsOp, type FsOpDeps } from '../steps/fs-op.js';
import { runGateEvalStep } from '../steps/gate-eval.js';
import { runLlmStep, type LlmStepRunDeps } from '../steps/llm-step.js';
import { drawsOnBudgets, RunLedgers, StoredRunBudget, stepBudgets } from '../steps/run-budgets.js';
import { submitStep } from '../steps/step-submission.js';
import type { SubmissionHost } from '../steps/submission-host.js';
import { callTool, type ToolCallDeps } from '../steps/tool-call.js';
import { localPool, type PoolInfo } from '../placement/pool-info.js';
import { FleetLink, storeForFleet } from '../placement/fleet/fleet-link.js';
import { memoryLeases, redisLeases, type Leases } from './leases.js';
import { checkInspect, checkPoolTags, type RuntimeOptions } from './runtime-options.js';
import { RuntimeTools } from './runtime-tools.js';

/** What a runtime is made of (see {@link assembleRuntime}). */
export interface RuntimeParts {
  readonly system: ActorSystem;
  /** The store, redacting what `redact` names. */
  readonly store: RunStore;
  readonly logger: Logger;
  readonly maxDepth: number;
  /** Wakes the followers of step logs (`followStep`). */
  readonly feeds: StepFeeds;
  /** The open follows of each step, for `cancel_on_disconnect`. */
  readonly follows: Map<string, number>;
  readonly agents: AgentRegistry;
  readonly tools: ToolRegistry;
  readonly catalog: RuntimeTools;
  readonly engines: EngineRegistry;
  readonly breakers: BreakerTable;
  readonly gate: PolicyGate;
  readonly policy: PolicyEngine;
  readonly memory: Memory;
  /** Leases (`leases.ts`): the fleet's in its Redis, the store's (SQLite), or this process's. */
  readonly leases: Leases;
  /** Whether other processes see {@link leases} (a fleet's, or the store's). */
  readonly leasesShared: boolean;
  /** What the step runner needs. */
  readonly steps: StepRunnerDeps;
  /** What run records and the flow operations need. */
  readonly runs: RunRecordsDeps & FlowApiDeps;
  readonly host: AgentInvocationHost;
  readonly submissions: SubmissionHost;
  readonly engineDeps: EngineCallDeps;
  readonly llmDeps: LlmStepRunDeps;
  readonly fsDeps: FsOpDeps;
  /** Container placement: its pool and warm containers. */
  readonly containers: RuntimeContainers;
  /** Whether `close()` has begun; every new piece of work is refused after. */
  readonly closed: () => boolean;
  /** Closes the runtime's own parts (not the agents' registry or tools). */
  readonly close: () => Promise<void>;
  /** A root context on the runtime's clock and ids. */
  createContext(options?: Omit<CreateContextOptions, 'clock' | 'ids'>): ExecContext;
  /** What a tool call needs, as of now (it reads whether the runtime is closed). */
  toolDeps(): ToolCallDeps;
  /** What resuming runs and deciding approvals need. */
  resumeDeps(): ResumeDeps;
  /** Throws `InvalidParamsError` once the runtime is closed. */
  assertOpen(): void;
  /** Names the runtime that agent handlers get as their `runtime` argument. */
  attach(runtime: AgentRuntime): void;
  /** The runtime's pools as they are now (embedded: `local`; with a fleet, its live pools). */
  pools(): PoolInfo[];
  /** The runtime's link to its fleet, if it has one. */
  readonly fleet: FleetLink | null;
  /** Durable agents: actors by key, their mailboxes, wakes and schedules (issue 46). */
  readonly durable: DurableAgents;
}

/** The sandbox of `createRuntime`'s `fs` option; a `RangeError` names what is wrong with it. */
function sandboxOf(fs: RuntimeOptions['fs'], dataDir: string): Sandbox {
  const given: unknown = fs;
  if (given !== undefined && (typeof given !== 'object' || given === null)) {
    throw new TypeError('createRuntime: fs must be an object ({ roots?, guarded? })');
  }
  const unknown = Object.keys(fs ?? {}).filter((k) => k !== 'roots' && k !== 'guarded');
  if (unknown.length > 0) {
    throw new TypeError(`createRuntime: fs takes roots and guarded, not ${unknown.join(', ')}`);
  }
  try {
    return createSandbox({
      dataDir,
      ...(fs?.roots === undefined ? {} : { roots: fs.roots }),
      ...(fs?.guarded === undefined ? {} : { guarded: fs.guarded }),
    });
  } catch (err) {
    if (err instanceof RangeError) throw new RangeError(`createRuntime: ${err.message}`);
    throw err;
  }
}

/**
 * Assembles a runtime's parts from its options. The runtime that agent handlers get as their
 * `runtime` argument is named after, with `attach` (it is built on these parts).
 *
 * Throws `RangeError` for a `maxDepth` that is not an integer >= 1, and whatever the worker
 * pool's options are refused with when `workers` is given.
 */
export function assembleRuntime(options: RuntimeOptions): RuntimeParts {
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
  if (!(Number.isInteger(maxDepth) && maxDepth >= 1)) {
    throw new RangeError(`createRuntime: maxDepth must be an integer >= 1, got ${maxDepth}`);
  }
  const workerOptions: WorkerPoolOptions = options.workers ?? {};
  // Before anything is opened: a sandbox that would hold the data dir is refused here.
  const dataDir = options.dataDir ?? './.axon';
  const sandbox = sandboxOf(options.fs, dataDir);
  const system = new ActorSystem({
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.ids ? { ids: options.ids } : {}),
  });
  const { clock, ids } = system;
  const agents = new AgentRegistry(system);
  const breakers = new BreakerTable(clock, options.breakers ?? {});
  const redact = options.redact ?? [];
  const store = redactingStore(options.store ?? memoryStore(), redact);
  const logger = options.logger ?? createLogger({ redactKeys: redact });
  const feeds = new StepFeeds();
  const poolId = options.poolId ?? 'local';
  const replicaId = options.replicaId ?? null;
  const poolTags = checkPoolTags(options.poolTags);
  // With a fleet, submitted steps go to its pools; their streams wake followers here.
  const fleet = options.fleet
    ? new FleetLink(options.fleet, {
        logger,
        ...storeForFleet(options.fleet, options.store),
        appended: (id) => {
          feeds.appended(id);
        },
      })
    : null;
  if (fleet) {
    feeds.watch({
      opened: (id) => {
        fleet.follow(id);
      },
      closed: (id) => {
        fleet.unfollow(id);
      },
    });
  }
  // Embedded, the runtime is one pool; inline steps have no slot limit.
  const containers = runtimeContainers(options.container, logger, sandbox);
  const localPools = (): readonly PoolCandidate[] => [
    {
      pool_id: poolId,
      tags: poolTags,
      healthy: true,
      free_slots: Number.MAX_SAFE_INTEGER,
      active_slots: system.list('step').length,
      replica_id: replicaId,
      capabilities: { arch: process.arch, placements: containers.placements() },
    },
  ];
  // Where a run's steps may go: the fleet's live pools, or this runtime.
  const pools = fleet ? () => fleet.candidates() : localPools;
  const tracer = redactingTracer(options.tracer ?? defaultTracer(), redact);
  const steps: StepRunnerDeps = {
    store,
    system,
    tracer,
    logger,
    poolId,
    replicaId,
    feeds,
    placement: choosePool('auto', localPools()),
    inspect: checkInspect(options.inspect),
  };
  const runs: RunRecordsDeps & FlowApiDeps = {
    store,
    clock,
    ids,
    logger,
    system,
    open: new Set(),
    submittedTo: (runId) => runLedgers.has(runId),
    poolId,
    replicaId,
    pools,
    dispatch: fleet,
    sandbox,
    schemas: new SchemaRegistry(),
    toolSchema: async (name) => {
      try {
        return (await catalog.all.describe(name))?.parameters ?? null;
      } catch (err) {
        // A tool server that cannot answer now: the declaration cannot be compared.
        logger.warn({ err, tool: name }, 'could not describe a tool a flow declares');
        return null;
      }
    },
  };
  for (const [uri, schema] of Object.entries(options.schemas ?? {})) {
    runs.schemas.register(uri, schema);
  }
  const policy = options.policy ?? noopPolicy;
  const memory = options.memory ?? new TieredMemory({ hot: memoryHotTier({ clock }) });
  const gate = new PolicyGate({
    store,
    policy,
    clock,
    logger,
    // With a fleet, runs' steps per minute are counted in its Redis: every API process of
    // the fleet sees the same counts.
    limiter:
      options.rateLimiter ??
      (fleet
        ? redisRateLimiter(fleet.client, clock, `${fleet.keys.prefix}rate:`)
        : memoryRateLimiter(clock)),
  });
  const tools = new ToolRegistry(clock);
  const catalog = new RuntimeTools(tools, options.toolManagers ?? [], logger, clock);
  const engines = createEngineRegistry(options.engines ?? [], { priceTable: options.priceTable });
  const runLedgers = new RunLedgers();

  let closed = false;
  let attached: AgentRuntime | null = null;
  const self = (): AgentRuntime => {
    if (!attached) throw new InternalError('the runtime is not attached to its parts yet');
    return attached;
  };
  let workers: WorkerPool | null = null;
  const newWorkerPool = (): WorkerPool =>
    new WorkerPool(
      workerOptions,
      (err) => {
        logger.error({ err }, 'a worker thread failed');
      },
      clock,
    );
  const assertOpen = (): void => {
    if (closed) throw new InvalidParamsError('the runtime is closed');
  };
  const rootContext = (o: Omit<CreateContextOptions, 'clock' | 'ids'> = {}): ExecContext =>
    createContext({ logger, ...o, clock, ids });

  const host: AgentInvocationHost = {
    gate,
    steps,
    runs,
    breakers,
    maxDepth,
    get runtime() {
      return self();
    },
    stats: (name) => agents.stats(name),
    resolve: (agent) => agents.resolve(agent),
    assertOpen,
    // The default pool starts on first use.
    workerPool: () => (workers ??= newWorkerPool()),
    container: containers.host,
  };
  const engineDeps: EngineCallDeps = { gate, engines, breakers, tracer };
  const toolDeps = (): ToolCallDeps => ({
    steps,
    runs,
    tools,
    catalog: catalog.all,
    breakers,
    closed,
    gate,
    container: containers.host,
    runtime: self(),
  });
  const llmDeps: LlmStepRunDeps = {
    steps,
    runs,
    llm: {
      tools: catalog,
      chat: (call, ctx, chatOptions) => self().chat(call, ctx, chatOptions),
      callTool: (name, args, ctx) => self().callTool(name, args, ctx),
    },
  };
  const fsDeps: FsOpDeps = {
    steps,
    runs,
    gate,
    store,
    sandbox,
    brokers: new Map(),
  };
  const submissions: SubmissionHost = {
    gate,
    store,
    clock,
    logger,
    dispatch: fleet,
    choosePool: (run, needs, placement) =>
      choosePool(placement ?? placementOf(run.pool_policy), pools(), needs),
    placementNeeded: (kind, name) => {
      if (typeof name !== 'string') return undefined;
      if (kind === 'tool') return tools.get(name)?.container ? 'container' : undefined;
      return agents.get(name)?.placement === 'container' ? 'container' : undefined;
    },
    callsFor: (run, clientToken, resumed, decided) =>
      new RunCalls(
        store,
        clock,
        run,
        clientToken,
        replicaId,
        resumed,
        // The decision of the steps that run here: made already (a fleet's job), or by the
        // run's policy unless the submission placed the step here (a fleet's run may pin
        // another pool of the fleet).
        typeof decided === 'object'
          ? decided
          : choosePool(decided === 'here' ? 'auto' : placementOf(run.pool_policy), localPools()),
      ),
    contextFor: (run, step, remoteParent, identity) => {
      const shared = runLedgers.acquire(run);
      // On a store processes share (a fleet's), the run's ledger there is every process's.
      const stored =
        store.budgets && drawsOnBudgets(run)
          ? new StoredRunBudget(store.budgets, run, logger)
          : null;
      const ctx = rootContext({
        ...identity,
        runId: run.run_id,
        // A run's work is its user's; a run of nobody's takes the joining request's.
        userId: run.user_id ?? identity?.userId ?? null,
        budgets: stepBudgets(run, step, clock.now()),
        ledgerParent: shared.ledger,
        ...(stored ? { sharedBudget: stored } : {}),
        ...(remoteParent ? { remoteParent } : {}),
      });
      return {
        ctx,
        claimed: (stepId) => stored?.bind(stepId),
        release: shared.release,
      };
    },
    runAgent: (agent, input, ctx, runId, submission) =>
      runAgent(host, agents.resolve(agent), input, ctx, undefined, runId, null, submission),
    callTool: (name, args, ctx, submission) => callTool(toolDeps(), name, args, ctx, submission),
    runLlm: (type, input, ctx, submission) => runLlmStep(llmDeps, type, input, ctx, submission),
    runFsOp: (input, ctx, submission) => runFsOp(fsDeps, input, ctx, submission),
    runCheckpoint: (label, ctx, runId, submission) =>
      runCheckpointStep(steps, runs, label, ctx, runId, submission),
    runGateEval: (input, ctx, runId, submission) =>
      runGateEvalStep(steps, input, ctx, runId, submission),
  };
  const resumeDeps = (): ResumeDeps => ({
    store,
    system,
    clock,
    logger,
    submit: (runId, body) => {
      assertOpen();
      return submitStep(submissions, runId, body);
    },
    resubmit: (runId, body, resume) => submitStep(submissions, runId, body, resume),
    held: heldMessages(store, durable, clock),
  });

  const durable = new DurableAgents({ store, clock, ids, logger, submissions }, options.durable);
  // On a fleet, actors run on its replicas; this process queues their work.
  if (fleet) durable.attachFleet(apiSide(fleet, redisLeases(fleet.client, fleet.leasePrefix)));

  // On a fleet, the steps this process waits on or follows are looked at for a lost job.
  const lostSteps = fleet ? new LostSteps(runs, fleet) : null;

  // Given worker options are checked now; the default pool starts on first use.
  if (options.workers) workers = newWorkerPool();

  return {
    system,
    store,
    logger,
    maxDepth,
    feeds,
    follows: new Map(),
    agents,
    tools,
    catalog,
    engines,
    breakers,
    gate,
    policy,
    memory,
    leases: fleet
      ? redisLeases(fleet.client, `${fleet.keys.prefix}lease:`)
      : (store.leases ?? memoryLeases(clock)),
    leasesShared: fleet !== null || store.leases !== undefined,
    steps,
    runs,
    host,
    submissions,
    engineDeps,
    llmDeps,
    fsDeps,
    containers,
    closed: () => closed,
    close: async () => {
      if (closed) return;
      closed = true;
      await durable.close();
      await lostSteps?.close();
      await fleet?.close();
      agents.stop();
      breakers.stop();
      await workers?.destroy();
      await containers.close();
      await catalog.all.close();
      await policy.close?.();
      await memory.close();
      await store.close();
    },
    createContext: rootContext,
    toolDeps,
    resumeDeps,
    assertOpen,
    attach: (runtime) => {
      attached = runtime;
    },
    fleet,
    durable,
    pools: () =>
      fleet
        ? [...fleet.pools()]
        : [
            localPool({
              poolId,
              replicaId,
              tags: poolTags,
              system,
              engines: () => engines.names(),
              workers: () => workers,
              maxWorkerThreads: maxThreadsOf(workerOptions),
              placements: () => containers.placements(),
            }),
          ],
  };
}
