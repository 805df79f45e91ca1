/**
 * @module Running the `axon` command line: parses the arguments (commander, `cli-program.ts`),
 * runs the command and resolves its exit code (`exit-codes.ts`).
 */
import { CommanderError } from 'commander';
import type { CliIo } from './cli-io.js';
import { isCliError } from './cli-error.js';
import { createProgram } from './cli-program.js';
import { EXIT } from './exit-codes.js';

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
