/** @module The `axon` command line: parses arguments and dispatches to commands. */
import { parseArgs } from 'node:util';
import { LOG_LEVELS } from '../observability/logger.js';
import { EXAMPLES } from '../../examples/index.js';
import type { CliIo } from './cli-io.js';
import { runCommand, RUN_ROUTERS, type RunRouter } from './run-command.js';
import { serveCommand } from './serve-command.js';
import { workerCommand } from './worker-command.js';

/** The text of `axon --help`. */
export const HELP = `axon — an actor-model runtime for LLM agents

Usage:
  axon <command> [options]

Commands:
  run <example>    Send an example's message through the front door: stream it, print its trace tree
  serve            Serve the HTTP API (docs/http-api.md) until Ctrl-C or SIGTERM
  worker           Run one replica of a pool of the fleet (docs/fleet.md) until Ctrl-C or SIGTERM
  list             List the examples
  help             Show this help

Options of run:
  --message <text>   The message to send instead of the example's default
  --seed <n>         Seed of the run, which its agents and tools derive data from (default 42)
  --token-ms <n>     Delay per scripted token in ms (default AXON_SCRIPTED_TOKEN_MS or 5)
  --json             Print every event as a JSON line
  --no-trace         Do not print the trace tree
  --router <kind>    rules (the example's, the default) or embedding (its agents' descriptions, similarity >= 0.1)

Options of serve (a flag overrides the environment, which overrides the config file):
  --host <address>   Where to listen (default 127.0.0.1; another address needs API keys)
  --port <n>         The port, 0 for a free one (default 7070)
  --data-dir <dir>   Where the SQLite store (axon.db) and fs_op sandboxes live (default ./.axon)
  --config <file>    The YAML configuration (default ./axon.yaml, if there is one)
  --redis <url>      Keep runs in Redis and send submitted steps to the fleet's pools
                     (start \`axon worker\`s on the same Redis); default: SQLite, steps run here
  On SIGINT or SIGTERM it drains (running steps end, streams get their last event, the
  store closes) and exits 0; a second signal exits at once with 130.

Options of worker:
  --pool <id>          The pool this replica serves (required)
  --tags <a,b>         The pool's tags, which affinity placement looks for
  --concurrency <n>    Steps it runs at once (default 4)
  --redis <url>        The fleet's Redis (default AXON_REDIS_URL, the config's redis.url,
                       else redis://127.0.0.1:6379)
  --config <file>      The YAML configuration: engines, policy, memory (as serve's)
  --vram-mb <n>        GPU memory it offers (default: what nvidia-smi reports, if any)
  --features <a,b>     Features it offers, shown in its pool's capabilities
  --grace-ms <n>       On SIGINT or SIGTERM, how long running steps may take to finish
                       before they are handed back to the queue (default 30000)
  --lock-ms <n>        How long a step's job lock lives: a killed replica's steps go to
                       another replica after it (default 30000)
  --stalled-ms <n>     How often it checks its pool for stalled steps (default 30000)
  --heartbeat-ms <n>   How often it writes its heartbeat (default 1000)
  --ttl-ms <n>         How long a heartbeat lives: a dead replica leaves GET /v1/pools after
                       it (default 5000)

Global options:
  -h, --help         Show this help
  -v, --version      Show the version

Environment:
  AXON_LOG_LEVEL          level of the logs on stderr (default warn): one of
                          ${LOG_LEVELS.join(', ')}
  AXON_SCRIPTED_TOKEN_MS  delay per scripted token (default 5)
  AXON_ENGINE_URL         an OpenAI-compatible endpoint, registered as the engine openai;
                          AXON_ENGINE_MODEL (default gpt-4o-mini), AXON_ENGINE_KEY and
                          AXON_PRICE_TABLE (a YAML price table file) go with it
  serve only:
  AXON_HOST, AXON_PORT, AXON_DATA_DIR   as the flags above
  AXON_API_KEYS           API keys: key:user_id[:read+write+admin], comma-separated
                          (replaces the config file's auth.keys)
  AXON_KEEP_ALIVE_MS      interval of the SSE keep-alive comments (default 15000)
  serve and worker:
  AXON_REDIS_URL          as --redis
`;

/** Every option the CLI accepts; {@link HELP} documents each one. */
export const OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
  message: { type: 'string' },
  seed: { type: 'string' },
  'token-ms': { type: 'string' },
  json: { type: 'boolean' },
  'no-trace': { type: 'boolean' },
  router: { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  'data-dir': { type: 'string' },
  config: { type: 'string' },
  redis: { type: 'string' },
  pool: { type: 'string' },
  tags: { type: 'string' },
  concurrency: { type: 'string' },
  'vram-mb': { type: 'string' },
  features: { type: 'string' },
  'grace-ms': { type: 'string' },
  'lock-ms': { type: 'string' },
  'stalled-ms': { type: 'string' },
  'heartbeat-ms': { type: 'string' },
  'ttl-ms': { type: 'string' },
} as const;

/** The commands each command's own option belongs to: any other command refuses it. */
const OWNER: Readonly<Partial<Record<keyof typeof OPTIONS, string | readonly string[]>>> = {
  message: 'run',
  seed: 'run',
  'token-ms': 'run',
  json: 'run',
  'no-trace': 'run',
  router: 'run',
  host: 'serve',
  port: 'serve',
  'data-dir': 'serve',
  config: ['serve', 'worker'],
  redis: ['serve', 'worker'],
  pool: 'worker',
  tags: 'worker',
  concurrency: 'worker',
  'vram-mb': 'worker',
  features: 'worker',
  'grace-ms': 'worker',
  'lock-ms': 'worker',
  'stalled-ms': 'worker',
  'heartbeat-ms': 'worker',
  'ttl-ms': 'worker',
};

/** Whether `option` belongs to `command`. */
function belongs(option: keyof typeof OWNER, command: string): boolean {
  const owner = OWNER[option];
  return typeof owner === 'string' ? owner === command : (owner ?? []).includes(command);
}

/** How many arguments each command takes after its name. */
const ARITY: Readonly<Record<string, number>> = { run: 1, serve: 0, worker: 0, list: 0, help: 0 };

/** The first argument past those `command` takes; none for an unknown command. */
function extraArgument(command: string, args: readonly string[]): string | undefined {
  const arity = ARITY[command];
  return arity === undefined ? undefined : args[arity];
}

function intOption(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  // Digits only: Number() would also take '', ' 7', '0x10' and '1e3'.
  const n = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n))
    throw new TypeError(`--${name} must be a non-negative integer, got "${value}"`);
  return n;
}

/** The value of `--router`, checked. */
function routerOption(value: string | undefined): RunRouter | undefined {
  if (value === undefined) return undefined;
  if (!(RUN_ROUTERS as readonly string[]).includes(value)) {
    throw new TypeError(`--router must be one of ${RUN_ROUTERS.join(', ')}, got "${value}"`);
  }
  return value as RunRouter;
}

/**
 * Runs the CLI with `argv` (without `node` and the script) and resolves the exit code:
 * 0 on success, 1 when the command failed, 2 on a usage error.
 */
export async function runCli(
  argv: readonly string[],
  io: CliIo,
  version: string,
  signal?: AbortSignal,
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: OPTIONS,
    });
  } catch (err) {
    io.stderr.write(`axon: ${(err as Error).message}\n\n${HELP}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (values.version) {
    io.stdout.write(`${version}\n`);
    return 0;
  }
  if (values.help) {
    io.stdout.write(HELP);
    return 0;
  }
  const extra = command === undefined ? undefined : extraArgument(command, rest);
  if (command !== undefined && extra !== undefined) {
    // Refused like an unknown flag: one line, then the usage.
    io.stderr.write(`axon ${command}: unexpected argument "${extra}"\n\n${HELP}`);
    return 2;
  }
  const misplaced = (Object.keys(OWNER) as (keyof typeof OWNER)[]).find(
    (name) => values[name] !== undefined && !belongs(name, command ?? ''),
  );
  if (command !== undefined && misplaced !== undefined) {
    const owner = [OWNER[misplaced] ?? ''].flat().join(' and ');
    io.stderr.write(`axon ${command}: --${misplaced} applies to ${owner} only\n\n${HELP}`);
    return 2;
  }
  if (command === undefined || command === 'help') {
    io.stdout.write(HELP);
    return 0;
  }
  try {
    switch (command) {
      case 'list':
        for (const [name, build] of Object.entries(EXAMPLES))
          io.stdout.write(`${name}\t${build().description}\n`);
        return 0;
      case 'run': {
        const example = rest[0];
        if (!example) {
          io.stderr.write(`axon run: name an example (${Object.keys(EXAMPLES).join(', ')})\n`);
          return 2;
        }
        return await runCommand(
          {
            example,
            message: values.message,
            seed: intOption('seed', values.seed),
            tokenDelayMs: intOption('token-ms', values['token-ms']),
            json: values.json ?? false,
            trace: !values['no-trace'],
            router: routerOption(values.router),
            ...(signal ? { signal } : {}),
          },
          io,
        );
      }
      case 'serve':
        return await serveCommand(
          {
            flags: {
              host: values.host,
              port: values.port,
              dataDir: values['data-dir'],
              config: values.config,
              redis: values.redis,
            },
            version,
            // Without a signal (a library caller) it serves until the process ends.
            signal: signal ?? new AbortController().signal,
          },
          io,
        );
      case 'worker':
        return await workerCommand(
          {
            flags: {
              pool: values.pool,
              tags: values.tags,
              concurrency: values.concurrency,
              redis: values.redis,
              config: values.config,
              vramMb: values['vram-mb'],
              features: values.features,
              graceMs: values['grace-ms'],
              lockMs: values['lock-ms'],
              stalledMs: values['stalled-ms'],
              heartbeatMs: values['heartbeat-ms'],
              ttlMs: values['ttl-ms'],
            },
            signal: signal ?? new AbortController().signal,
          },
          io,
        );
      default:
        io.stderr.write(`axon: unknown command "${command}"\n\n${HELP}`);
        return 2;
    }
  } catch (err) {
    if (err instanceof TypeError) {
      io.stderr.write(`axon: ${err.message}\n`);
      return 2;
    }
    io.stderr.write(`axon: ${(err as Error).stack ?? String(err)}\n`);
    return 1;
  }
}
