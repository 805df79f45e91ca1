/** @module The `axon` command line: parses arguments and dispatches to commands. */
import { parseArgs } from 'node:util';
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
  --seed <n>         Seed of the scripted engine (default 42)
  --token-ms <n>     Delay per scripted token in ms (default AXON_SCRIPTED_TOKEN_MS or 5)
  --json             Print every event as a JSON line
  --no-trace         Do not print the trace tree

Global options:
  -h, --help         Show this help
  -v, --version      Show the version

Environment:
  AXON_LOG_LEVEL          pino level of the logs on stderr (default warn)
  AXON_SCRIPTED_TOKEN_MS  delay per scripted token (default 5)
`;

function intOption(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
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
      options: {
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
        message: { type: 'string' },
        seed: { type: 'string' },
        'token-ms': { type: 'string' },
        json: { type: 'boolean' },
        trace: { type: 'boolean', default: true },
        'no-trace': { type: 'boolean' },
      },
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
  if (values.help || command === undefined || command === 'help') {
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
