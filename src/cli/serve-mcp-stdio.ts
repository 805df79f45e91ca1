/**
 * @module `axon mcp` (docs/mcp.md): the agents and tools `axon serve` serves on a data dir, as
 * an MCP server over stdio — what an MCP host (Claude Desktop, an editor) starts as a child
 * process. The runtime is built as `axon serve` builds it (`serveRuntime`, the examples'
 * agents and tools, the config's container agents and tools, API.md's durable agents and
 * `durable_agents:`) over the SQLite store in the data dir; the session is one
 * {@link McpSession} whose run is the caller's (`anonymous`, as a server without keys has
 * it), so `axon serve` on that data dir, its trace UI and `axon trace` show it. It ends when
 * the host closes stdin (or on SIGINT / SIGTERM): calls in flight are cancelled, the run is
 * completed, the store closed; exit 0. Refused, exit 2, before anything is opened: a
 * configuration `axon serve` would refuse, one keeping the store elsewhere (PostgreSQL,
 * Redis), and a data dir a running `axon serve` holds (its `/mcp` serves the same).
 */
import { mkdirSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { EXAMPLE_DURABLE_AGENTS } from '../../examples/index.js';
import { AxonError } from '../errors/axon-error.js';
import type { Logger } from '../observability/logger.js';
import type { Runtime } from '../runtime/runtime.js';
import { PERMISSIONS, type Permission } from '../server/auth.js';
import { McpCatalog } from '../server/mcp/mcp-catalog.js';
import { McpSession } from '../server/mcp/mcp-session.js';
import { CliError } from './cli-error.js';
import type { CliIo } from './cli-io.js';
import { createCliLogger } from './cli-logger.js';
import type { CliEnv } from './command-context.js';
import { EXIT } from './exit-codes.js';
import { ServeConfigError } from './serve/config-problems.js';
import { serverOn } from './serve/data-dir-lock.js';
import { serveRuntime } from './serve/serve-command.js';
import { loadServeConfig, type ServeConfig } from './serve/serve-config.js';
import { loadDurableAgents } from './serve/served-durable.js';

/** Whose the session's run and actors are: the caller of `axon serve` without keys. */
const LOCAL_USER = 'anonymous';
/** The local user may do everything: the process is theirs. */
const EVERY_PERMISSION: ReadonlySet<Permission> = new Set(PERMISSIONS);
/** Calls in flight at most when the config sets no `server.max_steps_per_run`. */
const DEFAULT_MAX_CALLS = 64;

/** Options of {@link serveMcpStdio}. */
export interface McpStdioOptions {
  /** `--data-dir`, as given (else AXON_DATA_DIR, the config's `data_dir`, `./.axon`). */
  readonly dataDir: string | undefined;
  /** `--config`, as given (else `./axon.yaml` when there is one). */
  readonly config: string | undefined;
  readonly cwd: string;
  readonly env: CliEnv;
  /** The version `initialize` reports. */
  readonly version: string;
  /** Aborted on SIGINT / SIGTERM: the session ends as when stdin closes. */
  readonly signal: AbortSignal | undefined;
  /** Where the MCP messages come from and go: the process's stdin and stdout. */
  readonly input: Readable;
  readonly output: Writable;
}

/** The configuration, refused as `axon serve` refuses it (`CliError` `USAGE`). */
function configOf(options: McpStdioOptions): ServeConfig {
  let config: ServeConfig;
  try {
    config = loadServeConfig({
      flags: {
        ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
        ...(options.config === undefined ? {} : { config: options.config }),
      },
      env: options.env,
      cwd: options.cwd,
    });
  } catch (err) {
    if (err instanceof ServeConfigError) throw new CliError('USAGE', err.message, { cause: err });
    throw err;
  }
  if (config.redis || config.postgres) {
    throw new CliError(
      'USAGE',
      `the configuration keeps axon serve's store in ${config.postgres ? 'PostgreSQL' : 'Redis'}, not in a data dir: point the MCP host at that server's /mcp instead`,
    );
  }
  const server = serverOn(config.dataDir);
  if (server !== null) {
    throw new CliError(
      'USAGE',
      `axon serve (pid ${server.pid}) is running on the data dir ${config.dataDir}: point the MCP host at its ${server.url}/mcp instead (or stop it first)`,
    );
  }
  return config;
}

/** The runtime `axon serve` would run on `config`, with its durable agents. */
async function servedRuntime(config: ServeConfig, logger: Logger): Promise<Runtime> {
  mkdirSync(config.dataDir, { recursive: true });
  let runtime: Runtime;
  try {
    runtime = await serveRuntime(config, logger);
  } catch (err) {
    // An option the engines, the memory or createRuntime refuse, as `axon serve` says it.
    if (err instanceof AxonError || err instanceof RangeError || err instanceof TypeError) {
      throw new CliError('USAGE', err.message, { cause: err });
    }
    throw err;
  }
  try {
    for (const agent of EXAMPLE_DURABLE_AGENTS) runtime.registerAgent(agent);
    for (const agent of await loadDurableAgents(config.durableAgents)) runtime.registerAgent(agent);
  } catch (err) {
    await runtime.close();
    if (err instanceof ServeConfigError || err instanceof AxonError) {
      throw new CliError('USAGE', `durable_agents: ${err.message}`, { cause: err });
    }
    throw err;
  }
  return runtime;
}

/**
 * Serves the MCP session on `options.input` / `options.output` until the input ends or
 * `options.signal` aborts; resolves 0 then. Rejects with `CliError` (`USAGE`) for what it
 * refuses before it serves (see the module).
 *
 * @example
 * process.exitCode = await serveMcpStdio({ dataDir: '.axon', config: undefined, cwd, env: process.env, version, signal, input: process.stdin, output: process.stdout }, processIo);
 */
export async function serveMcpStdio(options: McpStdioOptions, io: CliIo): Promise<number> {
  const config = configOf(options);
  let logger: Logger;
  try {
    logger = createCliLogger(io.stderr, options.env);
  } catch (err) {
    if (err instanceof RangeError) throw new CliError('USAGE', err.message, { cause: err });
    throw err;
  }
  const runtime = await servedRuntime(config, logger);
  const session = new McpSession({
    runtime,
    catalog: new McpCatalog(runtime, logger),
    userId: LOCAL_USER,
    budgets: config.mcp.budgets,
    maxCalls: config.maxStepsPerRun ?? DEFAULT_MAX_CALLS,
    permissions: () => EVERY_PERMISSION,
    version: options.version,
    logger,
  });
  const ended = new Promise<void>((resolve) => {
    const end = (): void => {
      resolve();
    };
    options.input.once('end', end);
    options.input.once('close', end);
    options.signal?.addEventListener('abort', end, { once: true });
    if (options.signal?.aborted === true) end();
    // The transport closed by itself (a message past its buffer's bound).
    session.server.onclose = end;
  });
  try {
    await session.server.connect(new StdioServerTransport(options.input, options.output));
    await ended;
  } finally {
    await session.close();
    await runtime.close();
  }
  return EXIT.OK;
}
