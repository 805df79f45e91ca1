/** @module The `axon` command line: parses arguments and dispatches to commands. */
import { parseArgs } from 'node:util';
import { LOG_LEVELS } from '../observability/logger.js';
import { EXAMPLES } from '../../examples/index.js';
import type { CliIo } from './cli-io.js';
import { runCommand } from './run-command.js';

/** The text of `axon --help`. */
export const HELP = `axon — an actor-model runtime for LLM agents

Usage:
  axon <command> [options]

Commands:
  run <example>    Run an example: stream its tokens, then print its trace tree
  list             List the examples
  help             Show this help

Options of run:
  --message <text>   The message to send instead of the example's default
  --seed <n>         Seed of the run, which its agents and tools derive data from (default 42)
  --token-ms <n>     Delay per scripted token in ms (default AXON_SCRIPTED_TOKEN_MS or 5)
  --json             Print every event as a JSON line
  --no-trace         Do not print the trace tree

Global options:
  -h, --help         Show this help
  -v, --version      Show the version

Environment:
  AXON_LOG_LEVEL          level of the logs on stderr (default warn): one of
                          ${LOG_LEVELS.join(', ')}
  AXON_SCRIPTED_TOKEN_MS  delay per scripted token (default 5)
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
} as const;

/** The options only `run` reads: any other command refuses them. */
const RUN_ONLY = ['message', 'seed', 'token-ms', 'json', 'no-trace'] as const;

/** How many arguments each command takes after its name. */
const ARITY: Readonly<Record<string, number>> = { run: 1, list: 0, help: 0 };

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
  const misplaced = RUN_ONLY.find((name) => values[name] !== undefined);
  if (command !== 'run' && command !== undefined && misplaced !== undefined) {
    io.stderr.write(`axon ${command}: --${misplaced} applies to run only\n\n${HELP}`);
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
            ...(signal ? { signal } : {}),
          },
          io,
        );
      }
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
