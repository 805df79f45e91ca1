/**
 * @module The `axon` command line for its readers: {@link runCli} (`run-cli.ts`), the help
 * texts ({@link helpText}, {@link HELP}) and every option ({@link OPTIONS}), which build the
 * program at import — the executable (`main.ts`) imports `run-cli.ts` alone and builds it once.
 */
import type { Command } from 'commander';
import type { CliStream } from './cli-io.js';
import { createProgram } from './cli-program.js';

export { runCli } from './run-cli.js';

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
