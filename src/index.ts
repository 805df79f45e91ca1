/**
 * @module axon's public API. Everything a service embeds is re-exported here by name;
 * nothing inside `src/` imports this file.
 */
export {
  createRuntime,
  Runtime,
  type InvokeOptions,
  type RuntimeOptions,
} from './runtime/runtime.js';
export {
  defineAgent,
  DEFAULT_AGENT_TIMEOUT_MS,
  type AgentSpec,
  type InlineAgentSpec,
  type WorkerAgentSpec,
  type ProcessAgentSpec,
  type ContainerAgentSpec,
} from './actors/define-agent.js';
export {
  CONTAINER_DEFAULTS,
  DEFAULT_CONTAINER_IMAGE,
  type ContainerOptions,
  type ContainerEngineName,
} from './placement/container/container-options.js';
export {
  buildContainerImage,
  type BuildImageOptions,
} from './placement/container/container-image.js';
export type { ChatCall, ChatCallOptions } from './engines/chat-call.js';
export type { LlmStepResult } from './steps/llm-step.js';
export {
  MAX_TOOL_ROUNDS,
  llmStepInputSchema,
  type LlmStepInput,
  type LlmCallOutput,
  type LlmPlanOutput,
  type LlmToolRun,
  type RejectedSuggestion,
} from './steps/llm-steps.js';
export {
  WorkerPool,
  WORKER_POOL_DEFAULTS,
  type WorkerPoolOptions,
} from './placement/worker/worker-pool.js';
export { WORKER_STREAM_CREDIT } from './placement/worker/worker-placement.js';
export type {
  AgentDefinition,
  InlineAgentDefinition,
  WorkerAgentDefinition,
  ProcessAgentDefinition,
  ContainerAgentDefinition,
  AgentHandler,
  AgentHandlerSource,
  AgentFunctionHandler,
  AgentGeneratorHandler,
  AgentRuntime,
  AgentTarget,
} from './actors/agent-runtime.js';
export {
  needsData,
  needsCredentials,
  wrongHandler,
  isAgentOutcome,
  type AgentInput,
  type AgentResult,
  type AgentStatus,
  type AgentOutcome,
} from './actors/agent-result.js';
export type { AgentStats, AgentActor } from './actors/agent-machine.js';
export { STATS_BATCH_MS } from './actors/agent-stats-batch.js';
export { RunStream } from './runs/run-stream.js';
export {
  ActorSystem,
  type ActorEntry,
  type ActorKind,
  type InspectionEvent,
  type InspectionObserver,
} from './actors/actor-system.js';
export { stepMachine, type StepLifecycleState } from './actors/step-machine.js';
export { StepActor } from './actors/step-actor.js';

export {
  ExecContext,
  type Budgets,
  type ContextNarrowing,
  type CreateContextOptions,
  type MemoryScope,
  type TokenUsage,
} from './context/exec-context.js';
export { createContext } from './context/create-context.js';
export { wireContextSchema, type WireContext } from './context/wire-context.js';
export {
  BudgetLedger,
  Reservation,
  type BudgetAmounts,
  type BudgetLimits,
  type BudgetRemaining,
} from './context/budget-ledger.js';
export { systemClock, SimulatedClock, type Clock, type TimerHandle } from './context/clock.js';
export { createSeededRandom } from './context/seeded-random.js';
export {
  defaultIdSource,
  createSequentialIdSource,
  type IdSource,
  type IdKind,
} from './context/id-source.js';
export {
  canUseAgent,
  canUseTool,
  hasRole,
  createPermissions,
  narrowPermissions,
  type Permissions,
  type PermissionsNarrowing,
} from './context/permissions.js';
export type { StreamSink, SinkEvent, StreamTap } from './context/stream-sink.js';
export { parseTraceparent, formatTraceparent, type TraceParent } from './context/traceparent.js';

export * from './errors/public-errors.js';
export {
  RestartSupervisor,
  RESTART_DEFAULTS,
  type RestartOptions,
  type RestartVerdict,
} from './supervisors/restart-supervisor.js';
export {
  CircuitBreaker,
  BREAKER_DEFAULTS,
  breakerMachine,
  type BreakerOptions,
  type BreakerState,
} from './supervisors/circuit-breaker.js';

export * from './streams/events.js';
export {
  BoundedChannel,
  bounded,
  fromChannel,
  DROPPABLE_TYPES,
  DEFAULT_CHANNEL_CAPACITY,
} from './streams/bounded-channel.js';

export {
  defineTool,
  defineJsonSchemaTool,
  DEFAULT_TOOL_TIMEOUT_MS,
  type ToolDefinition,
  type ToolSpec,
  type ContainerToolSpec,
  type JsonSchemaToolSpec,
  type JsonSchema,
} from './tools/define-tool.js';
export type { ToolResult, ToolStatus } from './tools/tool-result.js';
export type { ToolInfo, ToolManager, ToolCallResult } from './tools/tool-manager.js';
export { ToolRegistry } from './tools/tool-registry.js';
export {
  createMcpToolManager,
  McpToolManager,
  type McpToolManagerOptions,
  type McpToolOutput,
} from './tools/mcp-tool-manager.js';
export {
  createCompositeToolManager,
  CompositeToolManager,
  type CompositeToolManagerOptions,
  type DuplicateTool,
} from './tools/composite-tool-manager.js';
export { compileJsonSchema, checkJsonSchema } from './tools/json-schema.js';

export {
  createCliAdapter,
  type CliAdapter,
  type CliAdapterOptions,
} from './adapters/cli-adapter.js';
export {
  cursorAdapter,
  hermesAdapter,
  createCursorAdapter,
  createHermesAdapter,
  type PresetOptions,
} from './adapters/presets.js';
export {
  createSubprocessAgent,
  SUBPROCESS_MAX_STDOUT,
  WRONG_HANDLER_EXIT,
  type SubprocessAgentOptions,
} from './adapters/subprocess-agent.js';
export type {
  ProcessBehaviour,
  ProcessInput,
  ProcessResult,
} from './adapters/process-behaviour.js';
export type { AgentFn, ThreadContext, ThreadStep } from './adapters/thread-context.js';
export {
  extract,
  mergeExtractConfig,
  type ExtractConfig,
  type ExtractOptions,
} from './adapters/extract.js';
export { createRole, type Role, type RoleOutput } from './adapters/create-role.js';

export {
  createScriptedEngine,
  SCRIPTED_DEFAULT_MAX_TOKENS,
  type ScriptedEngineOptions,
} from './engines/scripted-engine.js';
export { chatTokens, type ChatResult, type ChatTokensOptions } from './engines/chat-tokens.js';
export type {
  Engine,
  ChatMessage,
  ChatParams,
  ChatRequest,
  ChatTool,
  ChatToolCall,
  EngineCallOptions,
  EngineReply,
} from './engines/chat-request.js';
export type { CallFacts } from './context/call-facts.js';
export { createOpenAIEngine, type OpenAIEngineOptions } from './engines/openai-engine.js';
export {
  startOpenAICompatibleServer,
  type OpenAICompatibleServer,
  type OpenAICompatibleServerOptions,
  type ServerFault,
} from './engines/openai-compatible-server.js';
export {
  PRICE_TABLE,
  priceOf,
  costOf,
  extendPriceTable,
  loadPriceTable,
  type PriceTable,
  type ModelPrice,
} from './engines/price-table.js';
export { withPriceTable } from './engines/with-price-table.js';
export { promptHash, paramsHash, modelHash } from './engines/request-hash.js';
export {
  EngineRegistry,
  DEFAULT_ENGINE,
  enginesFromEnv,
  type EngineRegistryOptions,
} from './engines/engine-registry.js';
export { canonicalJson, canonicalHash, sha256Hex } from './context/canonical-json.js';

export {
  memoryStore,
  MemoryRunStore,
  DEFAULT_MAX_RUNS,
  type MemoryStoreOptions,
} from './store/memory/memory-store.js';
export type { RunStore } from './store/run-store.js';
export {
  postgresStore,
  PostgresRunStore,
  POSTGRES_SCHEMA_VERSION,
  type PostgresStoreOptions,
} from './store/postgres/postgres-store.js';
export {
  sqliteStore,
  SqliteRunStore,
  DEFAULT_SQLITE_PATH,
  migrate,
  type SqliteStoreOptions,
  type SqliteDurability,
} from './store/sqlite/sqlite-store.js';
export { MIGRATIONS, type Migration } from './store/sqlite/sqlite-migrations.js';
export { redisStore, RedisRunStore, type RedisStoreOptions } from './store/redis/redis-store.js';
export { flowInputSchema, runInputSchema, type FlowInput, type RunInput } from './runs/flow-api.js';
export { factInputSchema, type FactInput } from './runs/facts.js';
export { stepSubmissionSchema, type SubmittedStep } from './steps/step-submission.js';
export type { StepPlacement, SubmissionCaller } from './steps/submission-host.js';
export type { JoinedRun, JoinRunOptions } from './steps/run-join.js';
export { shareImmutable } from './store/deep-copy.js';
export { FleetWorker, type FleetWorkerOptions, type StopReport } from './fleet/fleet-worker.js';
export type { FleetOptions } from './placement/fleet/fleet-link.js';
export { stepJobSchema, type StepJob } from './placement/fleet/fleet-jobs.js';
export type { QueueFigures } from './placement/fleet/fleet-registry.js';
export type {
  PoolCandidate,
  PoolPlacement,
  PoolRequirements,
  StepNeeds,
} from './placement/pool-choice.js';
export { gateEvalInputSchema, type GateEvalInput } from './steps/gate-eval.js';
export type { FollowOptions } from './runs/step-follow.js';
export { wireBudgetsSchema } from './runs/request-bodies.js';
export type { AgentSnapshot } from './actors/agent-registry.js';
export type * from './store/records.js';
// Durable agents (issue 46): actors addressed by key, with state, mailboxes, waits, schedules.
export type * from './durable/public-durable.js';
export type { RecordedEngineOutput, RecordedToolOutput } from './runs/run-calls.js';
export { buildTraceTree } from './store/step-tree.js';

export { renderTraceTree, type TraceNode } from './observability/trace-tree.js';
export {
  createLogger,
  redactSecrets,
  DEFAULT_REDACT_KEYS,
  type CreateLoggerOptions,
  type Logger,
} from './observability/logger.js';

export {
  ALLOW,
  deny,
  noopPolicy,
  subjectOf,
  type PolicyAction,
  type PolicyActionKind,
  type PolicyDecision,
  type PolicyDenial,
  type PolicyEngine,
} from './policy/policy-engine.js';
export {
  loadPolicyYaml,
  parsePolicyConfig,
  policyConfigSchema,
  PolicyConfigError,
  type PolicyConfig,
  type PolicyConfigInput,
} from './policy/policy-config.js';
export {
  configuredPolicy,
  yamlPolicy,
  type ConfiguredPolicyOptions,
} from './policy/configured-policy.js';
export { adaptivePolicy, type AdaptivePolicyOptions } from './policy/adaptive-policy.js';
export {
  memoryRateLimiter,
  redisRateLimiter,
  type RateLimiter,
  type RateVerdict,
} from './policy/rate-limiter.js';
export {
  createFsBroker,
  fsOpInputSchema,
  type FsBroker,
  type FsBrokerOptions,
  type FsEntry,
  type FsOp,
  type FsOpInput,
  type FsPolicy,
  type FsResult,
} from './policy/fs-broker.js';
export { createSandbox, type Sandbox, type SandboxOptions } from './policy/sandbox.js';
export { redactingStore } from './store/redacting-store.js';
export { redactingTracer } from './observability/redacting-tracer.js';
export { decisionBodySchema, type DecidedApproval } from './runs/approvals.js';
export type { ApprovalDecision, ApprovalRecord, ApprovalStatus } from './store/records.js';
export {
  TieredMemory,
  extractiveSummary,
  engineSummarizer,
  type TieredMemoryOptions,
} from './memory/tiered-memory.js';
export {
  createMemory,
  memoryConfigSchema,
  type MemoryConfigInput,
  type MemoryDeps,
} from './memory/memory-config.js';
export { memoryHotTier, type MemoryHotTierOptions } from './memory/hot-tier.js';
export { redisHotTier, type RedisHotTierOptions } from './memory/redis-hot-tier.js';
export { sqliteWarmTier, DEFAULT_MEMORY_PATH } from './memory/sqlite-warm-tier.js';
export { redisWarmTier, type RedisWarmTierOptions } from './memory/redis-warm-tier.js';
export { sqliteColdTier, type SqliteColdTierOptions } from './memory/sqlite-cold-tier.js';
export {
  hashedEmbedder,
  openAIEmbedder,
  type Embedder,
  type OpenAIEmbedderOptions,
} from './memory/embedders.js';
export { VectorIndex, type VectorIndexOptions } from './memory/vector-index.js';
export { heuristicTokens, tiktokenCounter, type TokenCounter } from './memory/token-counter.js';
export { scopeKey, visibleKeys } from './memory/memory-scope.js';
export type {
  AgentMemory,
  ColdItem,
  ColdTier,
  ConsolidationReport,
  ConversationMessage,
  HotTier,
  Memory,
  MemoryContext,
  MemoryEvent,
  MemoryTier,
  WarmItem,
  WarmKind,
  WarmTier,
} from './memory/memory-types.js';
// The front door (issue 20): routers, registries, responders, middleware, the orchestrator.
export {
  createOrchestrator,
  Orchestrator,
  type Handled,
  type HandleOptions,
  type OrchestratorOptions,
  RUN_CONTEXT_KEYS,
} from './orchestrator/orchestrator.js';
export {
  defineMiddleware,
  respondWith,
  MIDDLEWARE_STAGES,
  type Middleware,
  type MiddlewareStage,
  type StageValues,
} from './orchestrator/middleware.js';
export {
  routeResult,
  clampScore,
  UNKNOWN_INTENT,
  type HandlerDescription,
  type HandlerSource,
  type RouteCandidate,
  type RouteResult,
  type Router,
} from './orchestrator/route-result.js';
export {
  createRuleRouter,
  type RouteRule,
  type RuleRouterOptions,
} from './orchestrator/rule-router.js';
export {
  createEmbeddingRouter,
  type EmbeddingRouterOptions,
} from './orchestrator/embedding-router.js';
export {
  createLlmRouter,
  type LlmRouterOptions,
  type RouterChat,
} from './orchestrator/llm-router.js';
export { createHybridRouter, type HybridRouterOptions } from './orchestrator/hybrid-router.js';
export {
  ENTRY_KINDS,
  type EntryCall,
  type EntryHealth,
  type EntryKind,
  type EntryPatch,
  type EntryStats,
  type NewEntry,
  type Registry,
  type RegistryEntry,
} from './orchestrator/registry.js';
export {
  createMemoryRegistry,
  MemoryRegistry,
  type MemoryRegistryOptions,
} from './orchestrator/memory-registry.js';
export {
  createSqliteRegistry,
  SqliteRegistry,
  type SqliteRegistryOptions,
} from './orchestrator/sqlite-registry.js';
export { registryHandlers } from './orchestrator/registry-handlers.js';
export {
  DEFAULT_CHANNEL,
  type Channel,
  type MediaBlock,
  type Responder,
  type Response,
  type ResponseChunk,
} from './orchestrator/responder.js';
export { createPassthroughResponder } from './orchestrator/passthrough-responder.js';
export { createToneResponder, type ToneResponderOptions } from './orchestrator/tone-responder.js';
export { createMultimodalResponder } from './orchestrator/multimodal-responder.js';
export { fitToChannel, stripMarkdown } from './orchestrator/channel-text.js';
export { sseChunk, websocketChunk } from './orchestrator/stream-chunks.js';
// Workflows (issue 21): roles taking turns in durable threads, steered by a moderator.
export {
  defineWorkflow,
  END,
  type AgentRoleSpec,
  type EngineRoleSpec,
  type Moderator,
  type RolePlacement,
  type ThreadSoFar,
  type ThreadTurn,
  type WorkflowDefinition,
  type WorkflowRoleSpec,
  type WorkflowSpec,
} from './workflows/workflow-definition.js';
export {
  createWorkflowEngine,
  WorkflowEngine,
  type RecoveredThreads,
  type TriggerOptions,
  type WorkflowInfo,
} from './workflows/workflow-engine.js';
export { workflowAgents } from './workflows/turn-agent.js';
export type { ThreadStatus, ThreadView, TurnView, EndReason } from './workflows/thread-records.js';
export { followThread, parseThreadCursor, type ThreadFrame } from './workflows/thread-stream.js';
