/**
 * @module `axon serve`: the HTTP server of API.md on the embedded defaults — a SQLite store
 * in the data dir, the scripted engine (and `openai` when configured), the examples' agents
 * and tools — configured by `serve-config.ts`. It resumes the runs a stopped server left
 * running, listens, and on its signal (SIGINT, SIGTERM) drains and resolves 0.
 */
import { join, relative } from 'node:path';
import type { Engine } from '../../engines/chat-request.js';
import { createOpenAIEngine } from '../../engines/openai-engine.js';
import { InvalidParamsError } from '../../errors/invalid-params-error.js';
import { createMemory } from '../../memory/memory-config.js';
import type { Memory } from '../../memory/memory-types.js';
import type { Logger } from '../../observability/logger.js';
import { createCliLogger } from '../cli-logger.js';
import { systemClock } from '../../context/clock.js';
import { configuredPolicy } from '../../policy/configured-policy.js';
import { redisRateLimiter, type RateLimiter } from '../../policy/rate-limiter.js';
import { createRuntime, type Runtime } from '../../runtime/runtime.js';
import type { RuntimeOptions } from '../../runtime/runtime-options.js';
import { postgresStore } from '../../store/postgres/postgres-store.js';
import { shownPostgres } from '../../store/postgres/postgres-url.js';
import { redisStore } from '../../store/redis/redis-store.js';
import { createServer, type AxonServer } from '../../server/create-server.js';
import type { RunStore } from '../../store/run-store.js';
import { sqliteStore } from '../../store/sqlite/sqlite-store.js';
import { EXAMPLE_DURABLE_AGENTS, EXAMPLE_TOOLS, EXAMPLES } from '../../../examples/index.js';
import { loadDurableAgents } from './served-durable.js';
import { checkA2aDefault } from './served-a2a.js';
import { withCode } from './served-code.js';
import { WorkflowEngine } from '../../workflows/workflow-engine.js';
import { connectRedis, parseClusterNodes } from '../../store/redis/redis-connection.js';
import { aborted, type CliIo } from '../cli-io.js';
import { isCliError } from '../cli-error.js';
import { EXIT } from '../exit-codes.js';
import { describeProblem, ServeConfigError } from './config-problems.js';
import { ConflictError } from '../../errors/conflict-error.js';
import { markDataDir } from './data-dir-lock.js';
import { reachBackends } from './reach-backends.js';
import { fleetTarget, shownRedis, storeTarget } from './redis-config.js';
import {
  guardedPaths,
  loadServeConfig,
  STORE_FILE,
  type ServeConfig,
  type ServeEnv,
  type ServeFlags,
} from './serve-config.js';
import { EXAMPLE_WORKFLOW, servedWorkflows } from './served-workflows.js';
import { keepSchedules, ScheduleRefusedError } from './served-schedules.js';

/** Options of {@link serveCommand}. */
export interface ServeCommandOptions {
  readonly flags: ServeFlags;
  /** The version `/openapi.json` reports. */
  readonly version: string;
  /** Aborted when the process is asked to stop (the CLI wires SIGINT and SIGTERM to it). */
  readonly signal: AbortSignal;
  /** Default `process.env`. */
  readonly env?: ServeEnv;
  /** Default `process.cwd()`. */
  readonly cwd?: string;
}

/**
 * The runtime options `axon serve` and `axon worker` share, from `config`: API.md's embedded
 * defaults (the examples' agents and tools, the scripted engine) plus the configured engine,
 * price table (`prices`, costing every engine), policy and memory. `close` releases what was
 * opened, for a caller that cannot go on. A memory backend axon does not have is
 * `InvalidParamsError` naming the key (`createMemory`'s).
 */
export function configuredRuntimeOptions(
  config: ServeConfig,
  logger: Logger,
): { readonly options: RuntimeOptions; readonly close: () => Promise<void> } {
  const engines: Engine[] = config.openai
    ? [createOpenAIEngine({ name: 'openai', ...config.openai })]
    : [];
  // With Redis (a fleet), per-user rate limits are counted there: every API process and
  // worker of the fleet sees the same counts.
  const policy = config.policy
    ? configuredPolicy(
        config.policy,
        config.redis ? { rateLimiter: sharedLimiter(config.redis, logger) } : {},
      )
    : undefined;
  // `prices` costs the examples' own engines too (the trip planner writes with one).
  const priceTable = config.priceTable ?? undefined;
  const examples = Object.values(EXAMPLES).map((build) => build(priceTable ? { priceTable } : {}));
  let memory: Memory | undefined;
  try {
    memory = config.memory ? createMemory(config.memory) : undefined;
  } catch (err) {
    void policy?.close?.();
    throw err;
  }
  return {
    options: {
      dataDir: config.dataDir,
      // The operator's files are never a run's to read: no sandbox root may hold them.
      fs: {
        ...(config.fsRoots === null ? {} : { roots: config.fsRoots }),
        guarded: guardedPaths(config.configFile, config.memory),
      },
      logger,
      agents: [...examples.flatMap((e) => e.agents), ...config.agents],
      tools: [...examples.flatMap((e) => e.tools), ...EXAMPLE_TOOLS, ...config.tools],
      ...(config.container ? { container: config.container } : {}),
      engines,
      // It costs every engine priced from the shipped table: the scripted default, openai,
      // the workflows' engines given to createRuntime with these options.
      ...(priceTable ? { priceTable } : {}),
      ...(policy ? { policy } : {}),
      ...(memory ? { memory } : {}),
    },
    close: async () => {
      await Promise.allSettled([memory?.close(), policy?.close?.()]);
    },
  };
}

/**
 * A rate limiter on the fleet's Redis under its prefix (`<prefix>rate:`, where runs' steps
 * per minute are counted too), on a connection of its own that closing it closes.
 */
function sharedLimiter(redis: NonNullable<ServeConfig['redis']>, logger: Logger): RateLimiter {
  const client = connectRedis(
    redis.url !== null
      ? { url: redis.url }
      : { cluster: parseClusterNodes(redis.cluster, 'redis.cluster') },
    { maxRetriesPerRequest: 2, lazyConnect: true },
  );
  client.on('error', (err) => {
    logger.warn({ err }, 'rate limits: a Redis connection failed');
  });
  return {
    ...redisRateLimiter(client, systemClock, `${redis.prefix}rate:`),
    close: () => {
      client.disconnect();
      return Promise.resolve();
    },
  };
}

/**
 * The runtime `axon serve` runs: {@link configuredRuntimeOptions} over a SQLite store in the
 * data dir — or, with `redis`, the Redis store and the fleet's pools, where its submitted
 * steps go. `postgres`: the store `config.postgres` names, opened already (`reachBackends`).
 * Whatever it opened (and `postgres`) is closed again if a later part cannot be made.
 */
export async function serveRuntime(
  config: ServeConfig,
  logger: Logger,
  extraEngines: readonly Engine[] = [],
  postgres: RunStore | null = null,
): Promise<Runtime> {
  let parts: ReturnType<typeof configuredRuntimeOptions>;
  try {
    parts = configuredRuntimeOptions(config, logger);
  } catch (err) {
    await postgres?.close();
    throw err;
  }
  // A fleet's records are in its Redis unless PostgreSQL is named (then only its queues,
  // streams and registry are).
  const store = config.postgres
    ? (postgres ??
      postgresStore({ connection: config.postgres.url, schema: config.postgres.schema }))
    : config.redis
      ? redisStore({ ...storeTarget(config.redis), prefix: config.redis.prefix })
      : sqliteStore(join(config.dataDir, STORE_FILE));
  try {
    return createRuntime({
      ...parts.options,
      engines: [...(parts.options.engines ?? []), ...extraEngines],
      store,
      ...(config.redis ? { fleet: fleetTarget(config.redis) } : {}),
    });
  } catch (err) {
    await Promise.allSettled([store.close(), parts.close()]);
    throw err;
  }
}

/** `dir` as the user would type it: relative to `cwd` when inside it. */
function shownPath(dir: string, cwd: string): string {
  const rel = relative(cwd, dir);
  return rel === '' ? '.' : rel.startsWith('..') ? dir : rel;
}

/** Why `listen` failed, for the errors a user can fix. */
const LISTEN_ERRORS: Readonly<Record<string, string>> = {
  EADDRINUSE: 'the port is in use (--port 0 picks a free one)',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'this machine has no such address',
};

const plural = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? '' : 's'}`;

/**
 * Runs `axon serve` until `options.signal` aborts, then drains (no new steps, the running ones
 * end, their streams get their last event, the store closes) and resolves 0. Resolves 2 for
 * a configuration the server cannot run with (one line on stderr naming the key), or a Redis
 * or PostgreSQL that does not answer within `connect_timeout_ms` or refuses it (one line
 * naming it, its URL with the password masked, and why); 1 when it cannot start (the port
 * taken, the store unreadable); 130 when the signal comes before it serves.
 *
 * @example
 * const stop = new AbortController();
 * process.once('SIGTERM', () => stop.abort());
 * process.exitCode = await serveCommand({ flags: { port: '7070' }, version, signal: stop.signal }, processIo);
 */
export async function serveCommand(options: ServeCommandOptions, io: CliIo): Promise<number> {
  const cwd = options.cwd ?? process.cwd();
  const fail = (code: number, message: string): number => {
    io.stderr.write(`axon serve: ${message}\n`);
    return code;
  };
  let config: ServeConfig;
  let logger: Logger;
  try {
    // With the project's code (`code:`) loaded: a module that cannot be is exit 2 too.
    config = await withCode(
      loadServeConfig({ flags: options.flags, cwd, ...(options.env ? { env: options.env } : {}) }),
    );
    // Made here so that a bad AXON_LOG_LEVEL is a line, not a stack trace (as in `axon run`).
    logger = createCliLogger(io.stderr, options.env ?? process.env);
  } catch (err) {
    if (err instanceof ServeConfigError || err instanceof RangeError) return fail(2, err.message);
    throw err;
  }
  // Before anything is made: the Redis and PostgreSQL named answer, within the wait.
  const stopped = (): number => {
    const reason: unknown = options.signal.reason;
    io.stdout.write(
      `axon serve: ${typeof reason === 'string' ? reason : 'stop'}: stopped before it was serving\n`,
    );
    return EXIT.INTERRUPTED;
  };
  let postgres: RunStore | null;
  try {
    const reached = await reachBackends(config, {
      timeoutMs: config.connectTimeoutMs,
      signal: options.signal,
    });
    if (reached.stopped) return stopped();
    postgres = reached.store;
  } catch (err) {
    if (isCliError(err)) return fail(err.exitCode, err.message);
    throw err;
  }
  // With --redis too: inline roles' turns run here, pool roles' on the fleet's replicas
  // (`axon worker` with the same config has the workflows' agents).
  const served = servedWorkflows(config.workflows);
  let runtime: Runtime;
  try {
    runtime = await serveRuntime(config, logger, served.engines, postgres);
  } catch (err) {
    if (err instanceof InvalidParamsError && config.configFile !== null && err.param) {
      // createMemory names the key (`memory.warm.backend`); the file knows its line.
      const source = shownPath(config.configFile, cwd);
      const line = config.lineOf(err.param);
      return fail(2, describeProblem({ source, line, key: '', message: err.message }));
    }
    // An option an engine, the memory or createRuntime refuses.
    if (err instanceof InvalidParamsError || err instanceof RangeError || err instanceof TypeError)
      return fail(2, err.message);
    return fail(1, `cannot start: ${err instanceof Error ? err.message : String(err)}`);
  }

  let server: AxonServer;
  let workflows: WorkflowEngine | undefined;
  let schedules: readonly string[] = [];
  try {
    // Before anything is resumed: a default A2A agent that is no skill stops it here.
    checkA2aDefault(
      runtime,
      config.a2a,
      config.configFile === null ? 'axon.yaml' : shownPath(config.configFile, cwd),
      (key) => config.lineOf(key),
    );
    // API.md's durable agents, here and not in configuredRuntimeOptions (which the CLI's
    // runtimes on a data dir share): the server takes up the actors' work its store holds.
    // Not on a fleet keeping its records in PostgreSQL: its replicas cannot run actors there
    // (docs/durable-agents.md, "On a fleet").
    if (!(config.redis && config.postgres)) {
      for (const agent of EXAMPLE_DURABLE_AGENTS) runtime.registerAgent(agent);
    } else if (config.durableAgents.length > 0) {
      throw new ServeConfigError(
        config.durableAgents.map((entry) => ({
          source: entry.source,
          line: entry.line,
          key: 'durable_agents',
          message:
            'durable agents on a fleet keeping its records in PostgreSQL are not implemented (an actor lease cannot fence writes there): keep the records in Redis',
        })),
      );
    }
    for (const agent of await loadDurableAgents(config.durableAgents)) runtime.registerAgent(agent);
    schedules = (await keepSchedules(runtime, config.schedules)).map((s) => s.schedule_id);
    const engine = new WorkflowEngine(runtime, served.workflows);
    workflows = engine;
    // Before taking work: a restarted server picks up what it left running (NERVE-4005) —
    // but the threads, which the workflow engine resumes under their leases below. With a
    // fleet its steps run on the workers, which go on with them themselves.
    const resumed = config.redis
      ? []
      : (await runtime.resumeRuns({ except: (run) => engine.drives(run) })).filter(
          (r) => r.interrupted.length > 0,
        );
    if (config.redis) {
      try {
        await runtime.refreshPools();
      } catch (err) {
        await runtime.close();
        return fail(1, `cannot reach ${shownRedis(config.redis)}: ${(err as Error).message}`);
      }
    }
    if (resumed.length > 0) {
      const steps = resumed.reduce((n, r) => n + r.interrupted.length, 0);
      const again = resumed.reduce((n, r) => n + r.rerun.length, 0);
      io.stdout.write(
        `axon serve: resumed ${plural(resumed.length, 'run')} a stop interrupted: ${plural(steps, 'step')} closed with WORKER_RESET, ${again} submitted again\n`,
      );
    }
    // After the runs: a thread a stop left running is resumed from its last finished turn.
    const recovered = await engine.recover();
    const threads = [
      recovered.resumed.length > 0 ? `resumed ${plural(recovered.resumed.length, 'thread')}` : '',
      recovered.crashed.length > 0
        ? `${plural(recovered.crashed.length, 'thread')} ended crashed (resume: false)`
        : '',
      recovered.requeued.length > 0
        ? `queued ${plural(recovered.requeued.length, 'waiting thread')} again`
        : '',
      recovered.elsewhere.length > 0
        ? `${plural(recovered.elsewhere.length, 'thread')} left to the engine that holds ${recovered.elsewhere.length === 1 ? 'it' : 'them'}`
        : '',
    ].filter((x) => x !== '');
    if (threads.length > 0) {
      io.stdout.write(`axon serve: workflows: ${threads.join(', ')}\n`);
    }
    // A signal while it resumed: it stops rather than listen only to drain.
    if (options.signal.aborted) {
      await engine.close();
      await runtime.close();
      return stopped();
    }
    server = await createServer(runtime, {
      ...(served.workflows.length > 0 ? { workflows } : {}),
      host: config.host,
      port: config.port,
      keys: config.keys,
      version: options.version,
      ...(config.keepAliveMs === undefined ? {} : { keepAliveMs: config.keepAliveMs }),
      ...(config.bodyLimitBytes === undefined ? {} : { bodyLimitBytes: config.bodyLimitBytes }),
      ...(config.maxStepsPerRun === undefined ? {} : { maxStepsPerRun: config.maxStepsPerRun }),
      ...(config.drainMs === undefined ? {} : { drainMs: config.drainMs }),
      ...(config.sseFlushMs === undefined ? {} : { sseFlushMs: config.sseFlushMs }),
      ...(config.maxStreams === undefined ? {} : { maxStreams: config.maxStreams }),
      ...(config.maxStreamsPerUser === undefined
        ? {}
        : { maxStreamsPerUser: config.maxStreamsPerUser }),
      ...(config.allowedHosts === undefined ? {} : { allowedHosts: config.allowedHosts }),
      mcp: config.mcp,
      a2a: config.a2a,
      openaiApi: { enabled: config.openaiApi },
    });
  } catch (err) {
    await workflows?.close();
    await runtime.close();
    if (err instanceof ScheduleRefusedError) {
      const key = `schedules.${err.index}`;
      const source = config.configFile === null ? 'axon.yaml' : shownPath(config.configFile, cwd);
      return fail(
        2,
        describeProblem({ source, line: config.lineOf(key), key: '', message: err.message }),
      );
    }
    // A durable agent of `durable_agents:` that cannot be loaded, or whose name is taken.
    if (err instanceof ServeConfigError) return fail(2, err.message);
    if (err instanceof ConflictError) return fail(2, `durable_agents: ${err.message}`);
    if (err instanceof RangeError || err instanceof TypeError) return fail(2, err.message);
    const e = err as NodeJS.ErrnoException;
    const why = e.code === undefined ? undefined : LISTEN_ERRORS[e.code];
    if (why !== undefined) return fail(1, `cannot listen on ${config.host}:${config.port}: ${why}`);
    throw err;
  }

  const from = config.configFile ? `config ${shownPath(config.configFile, cwd)}` : 'no config file';
  const inPostgres = config.postgres
    ? `store in PostgreSQL at ${shownPostgres(config.postgres.url)}, schema ${config.postgres.schema}`
    : null;
  const data = config.redis
    ? inPostgres
      ? `${inPostgres}; fleet on ${shownRedis(config.redis)}`
      : `store and fleet on ${shownRedis(config.redis)}`
    : (inPostgres ?? `data in ${shownPath(config.dataDir, cwd)}`);
  const auth = config.keys.length > 0 ? " -H 'Authorization: Bearer <key>'" : '';
  const names = served.workflows.map((w) => w.name).join(', ');
  const replaced = served.exampleReplaced ? ` (${EXAMPLE_WORKFLOW} from the config file)` : '';
  io.stdout.write(
    `axon serve: listening on ${server.url} (${data}, ${from})\n` +
      `axon serve: workflows: ${names}${replaced}\n` +
      (schedules.length > 0 ? `axon serve: schedules: ${schedules.join(', ')}\n` : '') +
      `trace UI: ${server.url}/ui\n` +
      `try: curl -s${auth} ${server.url}/v1/pools\n`,
  );
  // The SQLite store in the data dir is this server's while it runs (`data-dir-lock.ts`).
  const unmark = config.redis || config.postgres ? null : markDataDir(config.dataDir, server.url);

  await aborted(options.signal);
  const reason: unknown = options.signal.reason;
  const why = typeof reason === 'string' ? reason : 'stop';
  io.stdout.write(`axon serve: ${why}: draining (a second signal stops at once)\n`);
  await server.close();
  unmark?.();
  io.stdout.write('axon serve: stopped\n');
  return 0;
}
