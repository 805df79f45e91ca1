/**
 * @module The `axon` command line: parses the arguments (commander, `cli-program.ts`), runs
 * the command and resolves its exit code (`exit-codes.ts`).
 */
import { CommanderError, type Command } from 'commander';
import type { CliIo, CliStream } from './cli-io.js';
import { isCliError } from './cli-error.js';
import { createProgram } from './cli-program.js';
import { EXIT } from './exit-codes.js';

/** The program, to read its commands and help, writing to `stream` (not a terminal). */
function quietProgram(stream: CliStream): Command {
  return createProgram({
    io: { stdout: stream, stderr: stream, env: {} },
    env: {},
    version: '',
    signal: undefined,
    cwd: process.cwd(),
    setExitCode: () => undefined,
  });
}

/**
 * The help `axon --help` prints (`path` empty), or `axon <path> --help` (`['runs', 'list']`),
 * as it reads where the output is not a terminal. `undefined` for an unknown command.
 */
export function helpText(path: readonly string[] = []): string | undefined {
  const out: string[] = [];
  const program = quietProgram({ write: (t: string) => out.push(t) });
  let command = program;
  for (const name of path) {
    const next = command.commands.find((c) => c.name() === name);
    if (!next) return undefined;
    command = next;
  }
  command.outputHelp();
  return out.join('');
}

/** The text of `axon --help`. */
export const HELP: string = helpText() ?? '';

/**
 * Runs the CLI with `argv` (without `node` and the script) and resolves the exit code: 0 on
 * success, 1 when the command failed, 2 on a usage error, 3 when `runs` or `trace` cannot
 * reach their server or data dir (see `exit-codes.ts`). Output goes through `io` only.
 *
 * @example
 * process.exitCode = await runCli(process.argv.slice(2), processIo, '1.0.0', signal);
 */
export async function runCli(
  argv: readonly string[],
  io: CliIo,
  version: string,
  signal?: AbortSignal,
): Promise<number> {
  let code: number = EXIT.OK;
  const program = createProgram({
    io,
    env: io.env ?? process.env,
    version,
    signal,
    cwd: process.cwd(),
    setExitCode: (c) => {
      code = c;
    },
  });
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return code;
  } catch (err) {
    // Help and --version "exit" 0; every other commander exit is a usage error, its line
    // and the help already on stderr.
    if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    if (isCliError(err)) {
      io.stderr.write(`axon: ${err.message}\n`);
      return err.exitCode;
    }
    // A refused option value deep in a command (createRuntime's checks) is a usage error.
    if (err instanceof TypeError) {
      io.stderr.write(`axon: ${err.message}\n`);
      return EXIT.USAGE;
    }
    io.stderr.write(`axon: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    return EXIT.FAILED;
  }
}

/** An option as `node:util`'s `parseArgs` takes it. */
export interface ParseArgsOption {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
}

/**
 * Every option some command accepts, in `parseArgs`' form (`--no-trace` as the boolean
 * `no-trace`), for a check of a command line written elsewhere (docker-compose.yml); which
 * command takes which is the program's business.
 */
export const OPTIONS: Readonly<Record<string, ParseArgsOption>> = (() => {
  const out: Record<string, ParseArgsOption> = {
    help: { type: 'boolean', short: 'h' },
    version: { type: 'boolean', short: 'v' },
  };
  const program = quietProgram({ write: () => true });
  const walk = (commands: readonly Command[]): void => {
    for (const command of commands) {
      for (const option of command.options) {
        if (option.hidden || option.long === undefined) continue;
        const type = option.required || option.optional ? 'string' : 'boolean';
        out[option.long.slice(2)] = { type };
      }
      walk(command.commands);
    }
  };
  walk(program.commands);
  return out;
})();
