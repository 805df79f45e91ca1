/**
 * @module The shape of `axon serve`'s configuration (`serve-config.ts` reads and merges it):
 * the file's strict schema, the fields the environment and the flags may also set, the
 * defaults, and what the sources merge into.
 */
import { durableAgentConfigSchema, type DurableAgentConfig } from './served-durable.js';
import type { AgentDefinition } from '../../actors/agent-runtime.js';
import type { ContainerOptions } from '../../placement/container/container-options.js';
import type { ToolDefinition } from '../../tools/define-tool.js';
import { agentConfigSchema, containerConfigSchema, toolConfigSchema } from './served-behaviours.js';
import { z } from 'zod';
import { priceTableSchema, type PriceTable } from '../../engines/price-table.js';
import { memoryConfigSchema, type MemoryConfigInput } from '../../memory/memory-config.js';
import { SCHEMA_NAME } from '../../store/postgres/postgres-migrations.js';
import { policyConfigSchema, type PolicyConfig } from '../../policy/policy-config.js';
import { apiKeySchema, type ApiKey } from '../../server/auth.js';
import type { WorkflowDefinition } from '../../workflows/workflow-definition.js';
import { CLUSTER_NODES, type RedisConfig } from './redis-config.js';
import { schedulesConfigSchema, type ScheduleConfig } from './served-schedules.js';
import { codeConfigSchema, type CodeEntry } from './served-code.js';
import { mcpConfigSchema } from './served-mcp.js';
import { a2aConfigSchema } from './served-a2a.js';
import type { A2aOptions } from '../../server/a2a/a2a-options.js';
import type { McpOptions } from '../../server/mcp/mcp-route.js';

export { SERVE_DEFAULTS, STORE_FILE } from '../cli-defaults.js';

/** The memory tiers' file inside the data dir, when the `memory` section names none. */
export const MEMORY_FILE = 'memory.db';

const wholePositive = z.number().int().positive();
/** The fields the environment and the flags may also set, by their key in the file. */
export const FIELDS = {
  'server.host': z.string().min(1),
  'server.port': z.number().int().min(0).max(65_535),
  'server.keep_alive_ms': wholePositive,
  data_dir: z.string().min(1),
  'engines.openai.url': z.string().regex(/^https?:\/\/\S+$/, 'must be an http(s) URL'),
  'engines.openai.model': z.string().min(1),
  'redis.url': z.string().regex(/^rediss?:\/\/\S+$/, 'must be a redis:// or rediss:// URL'),
  'redis.cluster': z
    .string()
    .regex(CLUSTER_NODES, 'must be host:port[,host:port...], the nodes of a Redis Cluster'),
  'store.postgres': z
    .string()
    .regex(/^postgres(ql)?:\/\/\S+$/, 'must be a postgres:// or postgresql:// URL'),
  connect_timeout_ms: wholePositive,
} as const;
export type Field = keyof typeof FIELDS;

/** The file's keys (strict: an unknown key is refused). */
export const serveConfigSchema = z.strictObject({
  server: z
    .strictObject({
      host: FIELDS['server.host'].optional(),
      port: FIELDS['server.port'].optional(),
      keep_alive_ms: FIELDS['server.keep_alive_ms'].optional(),
      body_limit_bytes: wholePositive.optional(),
      max_steps_per_run: wholePositive.optional(),
      drain_ms: wholePositive.optional(),
      sse_flush_ms: z.number().int().min(0).optional(),
      /** SSE streams open at once, in all and per user (429 past them). */
      max_streams: wholePositive.optional(),
      max_streams_per_user: wholePositive.optional(),
      /** The `Host` names answered (`name` or `name:port`); see createServer's allowedHosts. */
      allowed_hosts: z.array(z.string().min(1)).optional(),
    })
    .optional(),
  data_dir: FIELDS.data_dir.optional(),
  /**
   * The sandbox of runs' file operations: the folders a run's `fs_policy.roots` may narrow
   * inside (default `<data_dir>/sandbox`). None may hold the data dir or this file.
   */
  fs: z.strictObject({ roots: z.array(z.string().min(1)).min(1) }).optional(),
  /**
   * The fleet's Redis: the store and the pools' queues (`axon serve --redis`, `axon worker`) —
   * one server (`url`) or a Redis Cluster (`cluster`, its nodes), not both.
   */
  redis: z
    .strictObject({
      url: FIELDS['redis.url'].optional(),
      cluster: z
        .union([FIELDS['redis.cluster'], z.array(z.string().regex(CLUSTER_NODES)).min(1)])
        .optional(),
      prefix: z.string().min(1).optional(),
    })
    .refine((r) => (r.url === undefined) !== (r.cluster === undefined), {
      message: "give url or cluster (a Redis Cluster's nodes), one of them",
    })
    .optional(),
  /**
   * How long start-up waits for the fleet's Redis and the PostgreSQL store to answer, ms
   * (default 5000): a connection refused is tried again until then; past it, one line and
   * exit 2. A server that answers with a refusal (no such database or role, a wrong
   * password) fails at once.
   */
  connect_timeout_ms: FIELDS.connect_timeout_ms.optional(),
  /** The store of runs when not SQLite in the data dir: PostgreSQL (`axon serve --postgres`). */
  store: z
    .strictObject({
      postgres: FIELDS['store.postgres'],
      /** The schema of its tables (default `axon`). */
      schema: z.string().regex(SCHEMA_NAME, 'must be a lower-case SQL identifier').optional(),
    })
    .optional(),
  auth: z.strictObject({ keys: z.array(apiKeySchema) }).optional(),
  engines: z
    .strictObject({
      openai: z
        .strictObject({
          url: FIELDS['engines.openai.url'],
          model: FIELDS['engines.openai.model'].optional(),
          /** The environment variable holding the key, so the file holds no secret. */
          key_env: z
            .string()
            .regex(/^[A-Za-z_]\w*$/, 'must be the name of an environment variable')
            .optional(),
        })
        .optional(),
    })
    .optional(),
  /**
   * Added to the shipped price table: the runtime's price table, which costs every engine
   * `axon serve` and `axon worker` have (`scripted`, `openai`, the workflows' and the
   * examples' own).
   */
  prices: priceTableSchema.optional(),
  policy: z
    .union([z.string().min(1), policyConfigSchema], {
      error: 'expected the path of a policy YAML file, or a policy object',
    })
    .optional(),
  memory: memoryConfigSchema.optional(),
  /** Workflows to serve (docs/workflows.md); checked by `workflowsFromConfig`. */
  workflows: z.record(z.string(), z.unknown()).optional(),
  /** Container placement's options, and agents and tools run in containers (`served-behaviours.ts`). */
  container: containerConfigSchema.optional(),
  agents: z.array(agentConfigSchema).optional(),
  tools: z.array(toolConfigSchema).optional(),
  /** The project's agents, tools and workflows defined in code (`served-code.ts`). */
  code: codeConfigSchema.optional(),
  /** Schedules of durable agents, each kept as `sched_<name>` (`served-schedules.ts`). */
  schedules: schedulesConfigSchema.optional(),
  /** Durable agents of the operator's modules (`served-durable.ts`). */
  durable_agents: z.array(durableAgentConfigSchema).optional(),
  /** The MCP server: `/mcp` on axon serve, each session's run's budgets (`served-mcp.ts`). */
  mcp: mcpConfigSchema.optional(),
  /** The A2A server: its agent card and `/a2a` (`served-a2a.ts`, docs/a2a.md). */
  a2a: a2aConfigSchema.optional(),
  /**
   * The OpenAI API in front of the agents (`/v1/models`, `/v1/chat/completions`;
   * docs/openai-api.md): served unless `false`.
   */
  openai_api: z.boolean({ error: 'expected true or false' }).optional(),
});
/** The file's contents, checked. */
export type ServeConfigFile = z.output<typeof serveConfigSchema>;

/** The flags of `axon serve`, as given. */
export interface ServeFlags {
  readonly host?: string | undefined;
  readonly port?: string | undefined;
  readonly dataDir?: string | undefined;
  readonly config?: string | undefined;
  readonly redis?: string | undefined;
  /** `--redis-cluster host:port,...`: the fleet's Redis Cluster. */
  readonly redisCluster?: string | undefined;
  /** `--postgres <url>`: the store in PostgreSQL. */
  readonly postgres?: string | undefined;
  /** `--connect-timeout-ms <n>`: how long start-up waits for Redis and PostgreSQL. */
  readonly connectTimeoutMs?: string | undefined;
}

/** The store in PostgreSQL: its URL, the schema of its tables, and where it was named. */
export interface PostgresConfig {
  readonly url: string;
  readonly schema: string;
  /** Where the URL came from, for messages: `--postgres`, `AXON_POSTGRES_URL`, `axon.yaml store.postgres`. */
  readonly source: string;
}

/** The environment variables read (`process.env`, or a test's). */
export type ServeEnv = Readonly<Record<string, string | undefined>>;

/** The OpenAI-compatible engine to register as `openai`. */
export interface OpenAIEngineConfig {
  readonly baseURL: string;
  readonly model: string;
  readonly apiKey?: string;
}

/** Everything `axon serve` is built from, every source merged. */
export interface ServeConfig {
  /** The file read (absolute), or `null` when there was none. */
  readonly configFile: string | null;
  readonly host: string;
  readonly port: number;
  /** Absolute. The store is `<dataDir>/axon.db`; the default `fs_op` sandbox is under it. */
  readonly dataDir: string;
  /** The file's `fs.roots`, absolute; `null`: the default sandbox (`<dataDir>/sandbox`). */
  readonly fsRoots: readonly string[] | null;
  readonly keepAliveMs?: number;
  readonly bodyLimitBytes?: number;
  readonly maxStepsPerRun?: number;
  readonly drainMs?: number;
  readonly sseFlushMs?: number;
  readonly maxStreams?: number;
  readonly maxStreamsPerUser?: number;
  readonly allowedHosts?: readonly string[];
  /** Empty: no keys, every caller `anonymous`, loopback only. */
  readonly keys: readonly ApiKey[];
  /** The fleet's Redis (the store and the pools' queues), or `null`: SQLite, steps run here. */
  readonly redis: RedisConfig | null;
  /** The store in PostgreSQL, or `null`: SQLite in the data dir, or Redis. */
  readonly postgres: PostgresConfig | null;
  /** How long start-up waits for the Redis and the PostgreSQL named to answer, ms. */
  readonly connectTimeoutMs: number;
  readonly openai: OpenAIEngineConfig | null;
  /**
   * `prices` added to the shipped table, or the table `AXON_PRICE_TABLE` names (which takes
   * its place): the runtime's price table (`createRuntime({ priceTable })`), so it costs
   * every engine the server has. `null`: neither is given, each engine keeps the shipped one.
   */
  readonly priceTable: PriceTable | null;
  readonly policy: PolicyConfig | null;
  /** The `memory` section with its paths made absolute, or `null` for the runtime's default. */
  readonly memory: MemoryConfigInput | null;
  /** The workflows of the file's `workflows:` key (none without one). */
  readonly workflows: readonly WorkflowDefinition[];
  /** `container:`: container placement's options (`null`: the defaults). */
  readonly container: ContainerOptions | null;
  /** `agents:` and `tools:`: behaviours run in containers. */
  readonly agents: readonly AgentDefinition[];
  readonly tools: readonly ToolDefinition[];
  /**
   * `code:`: the modules and exports of the project's agents, tools and workflows, loaded at
   * start (`withCode` adds them to the three above).
   */
  readonly code: readonly CodeEntry[];
  /** `schedules:`: schedules of durable agents (none without the key). */
  readonly schedules: readonly ScheduleConfig[];
  /** `durable_agents:`: the modules and exports of the operator's durable agents (loaded at start). */
  readonly durableAgents: readonly DurableAgentConfig[];
  /** `mcp:`: `/mcp`'s options and each MCP session's run's budgets (`{}`: the defaults). */
  readonly mcp: McpOptions;
  /** `a2a:`: the A2A server's options (`{}`: the defaults). */
  readonly a2a: A2aOptions;
  /** `openai_api:`: whether `/v1/models` and `/v1/chat/completions` are served (default `true`). */
  readonly openaiApi: boolean;
  /** The line of a key of the file (`memory.warm.backend`), for errors found later. */
  lineOf(key: string): number | null;
}
