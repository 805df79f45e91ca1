/** @module The options of `createRuntime`. */
import type { DurableAgentDefinition } from '../actors/durable-agent.js';
import type { DurableOptions } from '../durable/durable-agents.js';
import type { ContainerOptions } from '../placement/container/container-options.js';
import type { Memory } from '../memory/memory-types.js';
import type { Tracer } from '@opentelemetry/api';
import type { PolicyEngine } from '../policy/policy-engine.js';
import type { RateLimiter } from '../policy/rate-limiter.js';
import type { Clock } from '../context/clock.js';
import type { IdSource } from '../context/id-source.js';
import type { Engine } from '../engines/chat-request.js';
import type { PriceTable } from '../engines/price-table.js';
import type { Logger } from '../observability/logger.js';
import type { RunStore } from '../store/run-store.js';
import type { BreakerOptions } from '../supervisors/circuit-breaker.js';
import type { ToolDefinition } from '../tools/define-tool.js';
import type { JsonSchema } from '../tools/json-schema.js';
import type { ToolManager } from '../tools/tool-manager.js';
import type { AgentDefinition } from '../actors/agent-runtime.js';
import type { XStateInspect } from '../actors/interpreted-lifecycle.js';
import type { WorkerPoolOptions } from '../placement/worker/worker-pool.js';
import type { FleetOptions } from '../placement/fleet/fleet-link.js';

/** Options of `createRuntime`. */
export interface RuntimeOptions {
  /** Where runs, steps and event logs go; default an in-memory store. */
  readonly store?: RunStore;
  readonly clock?: Clock;
  readonly ids?: IdSource;
  /** Default: the global OpenTelemetry tracer provider's `axon` tracer. */
  readonly tracer?: Tracer;
  /** Default: a pino logger on stderr at `AXON_LOG_LEVEL` (or `warn`), secrets redacted. */
  readonly logger?: Logger;
  readonly agents?: readonly (AgentDefinition | DurableAgentDefinition)[];
  readonly tools?: readonly ToolDefinition[];
  /** Maximum delegation depth (the root step is depth 1); default 5. */
  readonly maxDepth?: number;
  /** The pool id inline steps report; default `local`. */
  readonly poolId?: string;
  /**
   * The tags of this runtime's pool, which a run's `pool_policy` `affinity` must find;
   * default none. A run pinned to another pool, or asking for tags this pool lacks, is
   * refused with `PoolUnavailableError` at creation (the fleet brings more pools).
   */
  readonly poolTags?: readonly string[];
  /**
   * The replica this runtime is within its pool, a determinism input of engine calls that
   * `strict_replay` compares (NERVE-4022); default `null` (embedded: one replica).
   */
  readonly replicaId?: string;
  /**
   * Send submitted steps to a worker fleet over Redis instead of running them here: each goes
   * to the pool its run's `pool_policy` chooses among the live pools (BullMQ, `axon worker`;
   * docs/fleet.md). The store must be one the workers share (`redisStore` on the same Redis).
   * Default none: steps run in this process.
   */
  readonly fleet?: FleetOptions;
  /**
   * The policy asked at the three checkpoints (routing, invocation, execution); default
   * `noopPolicy`. See `yamlPolicy`, `configuredPolicy`, `adaptivePolicy`. The runtime closes
   * it on `close()`.
   */
  readonly policy?: PolicyEngine;
  /**
   * Where runs' `steps_per_minute` are counted; default this process. A
   * `redisRateLimiter` shares the counts across processes.
   */
  readonly rateLimiter?: RateLimiter;
  /**
   * The runtime's data folder; default `./.axon`. The default sandbox is
   * `<dataDir>/sandbox/`, and no sandbox root may hold the data dir.
   */
  readonly dataDir?: string;
  /**
   * The sandbox of `fs_op` steps (POLICY-3001): the folders runs may use, which a run's
   * `fs_policy.roots` only narrow inside (a root outside is refused when the run is created,
   * `INVALID_PARAMS`; relative ones resolve under the first folder). `roots` default to
   * `[<dataDir>/sandbox]`; relative ones resolve against the working directory. `guarded`:
   * paths no root may hold besides the data dir (a config file holding keys, say). A root
   * that holds the data dir or a guarded path, as written or through a link, is a
   * `RangeError` here.
   *
   * @example
   * createRuntime({ dataDir: '/var/lib/axon', fs: { roots: ['/srv/axon-files'] } });
   */
  readonly fs?: { readonly roots?: readonly string[]; readonly guarded?: readonly string[] };
  /**
   * Field names (any depth, any case) redacted from the runtime's logs, its spans'
   * attributes and everything it stores (step inputs and outputs, event payloads, facts,
   * recorded tool results): they are kept as `[REDACTED]`. The running step keeps the real
   * values. A logger you pass yourself redacts what you configured it with.
   */
  readonly redact?: readonly string[];
  /** The worker-thread pool of worker-placed agents (started on first use). */
  readonly workers?: WorkerPoolOptions;
  /**
   * Container placement of agents and tools (`placement: 'container'`): the engine, the
   * image, each container's limits, warm containers. Checked at once (`RangeError`); the
   * engine is looked for at the first container step (or warm start).
   */
  readonly container?: ContainerOptions;
  /**
   * A circuit breaker per agent, tool and engine (POLICY-3002); default Nerva's (3
   * failures, 60 s); `false` for none.
   */
  readonly breakers?: BreakerOptions | false;
  /**
   * Engines for `chat`, `llm_call` and `llm_plan`, by name. The scripted engine is always
   * there as `scripted` (the default), and `openai` when `AXON_ENGINE_URL` is set, unless
   * an engine given here has that name.
   */
  readonly engines?: readonly Engine[];
  /**
   * The price table that costs every engine priced from the shipped table: the default
   * `scripted`, the environment's `openai`, each engine of `engines` (or `registerEngine`)
   * made without a `priceTable` of its own. An engine given its own table keeps it. Default
   * the table `AXON_PRICE_TABLE` names (a YAML or JSON file added to the shipped table),
   * else none. Its version is each call's `provenance.price_table`. A table that would cost
   * no engine (each has its own) is refused with `UnusedPriceTableError`, a bad one with
   * `RangeError` naming the entry.
   *
   * @example
   * createRuntime({
   *   priceTable: extendPriceTable(PRICE_TABLE, {
   *     version: 'acme-2026-11',
   *     models: { scripted: { inputPerMTok: 1, outputPerMTok: 2 } },
   *   }),
   * });
   */
  readonly priceTable?: PriceTable;
  /**
   * More sources of tools (MCP servers, …), after the function tools: the first
   * registration of a name wins; a hidden duplicate is logged as a warning.
   */
  readonly toolManagers?: readonly ToolManager[];
  /**
   * JSON Schemas (2020-12) by URI, for facts that name one in `schema_uri`: such a fact must
   * match it, and a URI with no schema is refused. More with `runtime.registerSchema`.
   */
  readonly schemas?: Readonly<Record<string, JsonSchema>>;
  /**
   * What agents get as `runtime.memory` (seed 002); default a `TieredMemory` with only an
   * in-process hot tier. See `createMemory` for one from configuration. Closed with the
   * runtime.
   */
  readonly memory?: Memory;
  /**
   * XState's inspection callback (what `createActor(machine, { inspect })` and
   * `@statelyai/inspect`'s `inspector.inspect` take). With it, every step runs on a real,
   * interpreted XState actor of the step machine that the callback watches; without it (the
   * default) steps run on the transition table compiled from the same machine, which logs
   * the same events byte for byte at a fraction of the cost (see docs/concepts.md, "Steps").
   *
   * @example
   * import { createBrowserInspector } from '@statelyai/inspect';
   * const runtime = createRuntime({ inspect: createBrowserInspector().inspect });
   */
  readonly inspect?: XStateInspect;
  /**
   * Durable agents (issue 46): how many actors stay awake in memory at most (`maxAwake`,
   * default 100 000; past it the least recently used idle ones sleep in the store).
   */
  readonly durable?: DurableOptions;
}

/** The runtime's pool tags, checked: each a non-empty string. */
export function checkPoolTags(tags: readonly string[] | undefined): readonly string[] {
  if (tags === undefined) return [];
  const given: unknown = tags;
  if (!Array.isArray(given) || !given.every((t) => typeof t === 'string' && t.length > 0)) {
    throw new TypeError('createRuntime: poolTags must be an array of non-empty strings');
  }
  return tags.slice();
}

/** The runtime's XState inspection callback, checked: a function, or none. */
export function checkInspect(inspect: XStateInspect | undefined): XStateInspect | undefined {
  if (inspect !== undefined && typeof inspect !== 'function') {
    throw new TypeError(
      'createRuntime: inspect must be a function (an XState inspection callback)',
    );
  }
  return inspect;
}
