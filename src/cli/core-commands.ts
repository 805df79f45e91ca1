/**
 * @module The commands `axon` had before it read runs: `run <example>`, `serve`, `worker` and
 * `list` — their options, help and actions, each handing its flags to its command module
 * (`run-command.ts`, `serve-command.ts`, `worker-command.ts`), which it imports only when
 * the command runs: the help and the other commands load none of them.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { EXAMPLE_NAMES, RUN_ROUTERS, SERVE_DEFAULTS, type RunRouter } from './cli-defaults.js';
import { CliError } from './cli-error.js';
import { commandAction, type CommandContext } from './command-context.js';
import { dataDirOf } from './sources/source-options.js';

const RUN_AFTER = `
The run, its steps and their events are written to the data dir's store: axon runs list,
axon trace <run_id> and the trace UI of an axon serve on that data dir show it.
Environment: AXON_SCRIPTED_TOKEN_MS (delay per scripted token, default 5),
AXON_DATA_DIR (as --data-dir).
It exits 0 when the run succeeds, 1 when it does not (or the example is unknown).
`;

const SERVE_AFTER = `
A flag overrides the environment, which overrides the config file.
At start it waits up to --connect-timeout-ms for its Redis and PostgreSQL to answer; one
that does not, or refuses (no such database or role), is one line naming it, exit 2.
On SIGINT or SIGTERM it drains (running steps end, streams get their last event, the
store closes) and exits 0; before it serves, it stops at once with 130. A second signal
exits at once with 130.

Environment:
  AXON_HOST, AXON_PORT, AXON_DATA_DIR   as the flags above
  AXON_API_KEYS           API keys: key:user_id[:read+write+admin+metrics], comma-separated
                          (replaces the config file's auth.keys)
  AXON_KEEP_ALIVE_MS      interval of the SSE keep-alive comments (default 15000)
  AXON_REDIS_URL          as --redis
  AXON_REDIS_CLUSTER      as --redis-cluster
  AXON_POSTGRES_URL       as --postgres
  AXON_CONNECT_TIMEOUT_MS as --connect-timeout-ms
  AXON_LOG_LEVEL          level of the logs on stderr (default warn)
It prints what it serves on stdout; its logs go to stderr, pino's JSON lines (readable
lines when stderr is a terminal).
`;

const WORKER_AFTER = `
At start it waits up to --connect-timeout-ms for its Redis and PostgreSQL to answer; one
that does not, or refuses, is one line naming it, exit 2. SIGINT or SIGTERM before it
takes steps stops it at once with 130.

Environment:
  AXON_REDIS_URL          as --redis
  AXON_REDIS_CLUSTER      as --redis-cluster
  AXON_POSTGRES_URL       as --postgres
  AXON_CONNECT_TIMEOUT_MS as --connect-timeout-ms
  AXON_LOG_LEVEL          level of the logs on stderr (default warn; info names each step
                          it takes and hands back)
It prints what it serves on stdout; its logs go to stderr, pino's JSON lines (readable
lines when stderr is a terminal).
`;

/** A flag value that must be a non-negative integer (`CliError` `USAGE` otherwise). */
function intOption(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  // Digits only: Number() would also take '', ' 7', '0x10' and '1e3'.
  const n = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n))
    throw new CliError('USAGE', `--${name} must be a non-negative integer, got "${value}"`);
  return n;
}

/** The value of `--router`, checked. */
function routerOption(value: string | undefined): RunRouter | undefined {
  if (value === undefined) return undefined;
  if (!(RUN_ROUTERS as readonly string[]).includes(value)) {
    throw new CliError(
      'USAGE',
      `--router must be one of ${RUN_ROUTERS.join(', ')}, got "${value}"`,
    );
  }
  return value as RunRouter;
}

/** Adds `axon run <example>` to `program`. */
export function registerRunCommand(program: Command, ctx: CommandContext): void {
  const run = program
    .command('run')
    .description(
      "Send an example's message through the front door: stream it, print its trace tree",
    )
    .argument('<example>', `The example: ${EXAMPLE_NAMES.join(', ')} (axon list)`)
    .option('--message <text>', "The message to send instead of the example's default")
    .option(
      '--seed <n>',
      'Seed of the run, which its agents and tools derive data from (default 42)',
    )
    .option(
      '--token-ms <n>',
      'Delay per scripted token in ms (default AXON_SCRIPTED_TOKEN_MS or 5)',
    )
    .option('--json', 'Print every event as a JSON line, then the result')
    .option('--no-trace', 'Do not print the trace tree')
    .option(
      '--data-dir <dir>',
      `Write the run to the store (axon.db) in <dir>, where runs list, trace and the UI of axon serve show it (default AXON_DATA_DIR or ${SERVE_DEFAULTS.dataDir})`,
    )
    .option(
      '--router <kind>',
      "rules (the example's, the default) or embedding (its agents' descriptions, similarity >= 0.1)",
    )
    .addHelpText('after', RUN_AFTER);
  run.action(
    commandAction(ctx, run, async () => {
      const o = run.opts<Record<string, string | boolean | undefined>>();
      const str = (key: string): string | undefined => {
        const v = o[key];
        return typeof v === 'string' ? v : undefined;
      };
      const options = {
        example: run.processedArgs[0] as string,
        message: str('message'),
        seed: intOption('seed', str('seed')),
        tokenDelayMs: intOption('token-ms', str('tokenMs')),
        json: o['json'] === true,
        trace: o['trace'] !== false,
        router: routerOption(str('router')),
        dataDir: resolve(
          ctx.cwd,
          dataDirOf({ dataDir: str('dataDir') }, ctx) ?? SERVE_DEFAULTS.dataDir,
        ),
        ...(ctx.signal ? { signal: ctx.signal } : {}),
      };
      const { runCommand } = await import('./run/run-command.js');
      return runCommand(options, ctx.io);
    }),
  );
}

/** Adds `axon serve` to `program`. */
export function registerServeCommand(program: Command, ctx: CommandContext): void {
  const serve = program
    .command('serve')
    .description('Serve the HTTP API (docs/http-api.md) until Ctrl-C or SIGTERM')
    .option(
      '--host <address>',
      'Where to listen (default 127.0.0.1; another address needs API keys)',
    )
    .option('--port <n>', 'The port, 0 for a free one (default 7070)')
    .option(
      '--data-dir <dir>',
      'Where the SQLite store (axon.db) and fs_op sandboxes live (default ./.axon)',
    )
    .option('--config <file>', 'The YAML configuration (default ./axon.yaml, if there is one)')
    .option(
      '--redis <url>',
      "Keep runs in Redis and send submitted steps to the fleet's pools (start `axon worker`s on the same Redis); default: SQLite, steps run here",
    )
    .option(
      '--redis-cluster <host:port,...>',
      'As --redis, on a Redis Cluster: its nodes (every key under the hash tag of the prefix, default {axon}:)',
    )
    .option(
      '--postgres <url>',
      'Keep runs in PostgreSQL (postgres://…; the tables in schema axon, or store.schema of the config), not SQLite in the data dir; with --redis, the fleet keeps its records there and only its queues in Redis',
    )
    .option(
      '--connect-timeout-ms <n>',
      `How long start-up waits for the Redis and PostgreSQL named to answer, trying again, before it gives up with exit 2 (default ${SERVE_DEFAULTS.connectTimeoutMs})`,
    )
    .addHelpText('after', SERVE_AFTER);
  serve.action(
    commandAction(ctx, serve, async () => {
      const o = serve.opts<Record<string, string | undefined>>();
      const { serveCommand } = await import('./serve/serve-command.js');
      return serveCommand(
        {
          flags: {
            host: o['host'],
            port: o['port'],
            dataDir: o['dataDir'],
            config: o['config'],
            redis: o['redis'],
            redisCluster: o['redisCluster'],
            postgres: o['postgres'],
            connectTimeoutMs: o['connectTimeoutMs'],
          },
          version: ctx.version,
          // Without a signal (a library caller) it serves until the process ends.
          signal: ctx.signal ?? new AbortController().signal,
        },
        ctx.io,
      );
    }),
  );
}

/** Adds `axon worker` to `program`. */
export function registerWorkerCommand(program: Command, ctx: CommandContext): void {
  const worker = program
    .command('worker')
    .description('Run one replica of a pool of the fleet (docs/fleet.md) until Ctrl-C or SIGTERM')
    .option('--pool <id>', 'The pool this replica serves (required)')
    .option('--tags <a,b>', "The pool's tags, which affinity placement looks for")
    .option('--concurrency <n>', 'Steps it runs at once (default 4)')
    .option(
      '--redis <url>',
      "The fleet's Redis (default AXON_REDIS_URL, the config's redis.url, else redis://127.0.0.1:6379)",
    )
    .option(
      '--redis-cluster <host:port,...>',
      "The fleet's Redis Cluster instead, by its nodes (default AXON_REDIS_CLUSTER, the config's redis.cluster)",
    )
    .option(
      '--postgres <url>',
      "The fleet's records in PostgreSQL, as its axon serve --postgres (default AXON_POSTGRES_URL, the config's store.postgres; else they are in Redis)",
    )
    .option(
      '--config <file>',
      "The YAML configuration: engines, policy, memory, workflows' roles (as serve's)",
    )
    .option(
      '--connect-timeout-ms <n>',
      `How long start-up waits for its Redis and PostgreSQL to answer, trying again, before it gives up with exit 2 (default ${SERVE_DEFAULTS.connectTimeoutMs})`,
    )
    .option('--vram-mb <n>', 'GPU memory it offers (default: what nvidia-smi reports, if any)')
    .option('--features <a,b>', "Features it offers, shown in its pool's capabilities")
    .option(
      '--grace-ms <n>',
      'On SIGINT or SIGTERM, how long running steps may take to finish before they are handed back to the queue (default 30000)',
    )
    .option(
      '--lock-ms <n>',
      "How long a step's job lock lives: a killed replica's steps go to another replica after it (default 30000)",
    )
    .option('--stalled-ms <n>', 'How often it checks its pool for stalled steps (default 30000)')
    .option('--heartbeat-ms <n>', 'How often it writes its heartbeat (default 1000)')
    .option(
      '--ttl-ms <n>',
      'How long a heartbeat lives: a dead replica leaves GET /v1/pools after it (default 5000)',
    )
    .addHelpText('after', WORKER_AFTER);
  worker.action(
    commandAction(ctx, worker, async () => {
      const o = worker.opts<Record<string, string | undefined>>();
      const { workerCommand } = await import('./worker-command.js');
      return workerCommand(
        {
          flags: {
            pool: o['pool'],
            tags: o['tags'],
            concurrency: o['concurrency'],
            redis: o['redis'],
            redisCluster: o['redisCluster'],
            postgres: o['postgres'],
            config: o['config'],
            connectTimeoutMs: o['connectTimeoutMs'],
            vramMb: o['vramMb'],
            features: o['features'],
            graceMs: o['graceMs'],
            lockMs: o['lockMs'],
            stalledMs: o['stalledMs'],
            heartbeatMs: o['heartbeatMs'],
            ttlMs: o['ttlMs'],
          },
          signal: ctx.signal ?? new AbortController().signal,
        },
        ctx.io,
      );
    }),
  );
}

const LIST_AFTER = `
One line each: its kind (agent, tool, workflow, durable agent, schedule, example), its name,
where it is declared (the config file's line, or examples/) and its description. The
examples are what axon serve registers by default and what axon run takes. The modules the
config names (code:, durable_agents:) are loaded as axon serve loads them: one that cannot
be, or a config axon serve would refuse, is one line naming its line, exit 2.
`;

/** Adds `axon list` to `program`. */
export function registerListCommand(program: Command, ctx: CommandContext): void {
  const list = program
    .command('list')
    .description(
      'List what axon serve registers here: agents, tools, workflows, durable agents, schedules, examples',
    )
    .option('--config <file>', 'The YAML configuration (default ./axon.yaml, if there is one)')
    .addHelpText('after', LIST_AFTER);
  list.action(
    commandAction(ctx, list, async () => {
      const config = list.opts<{ config?: string }>().config;
      const { listServed } = await import('./list-served.js');
      return listServed(config, ctx);
    }),
  );
}
