/**
 * @module Test helper: the `axon` program run in this process with its working directory set
 * (`runCli` takes `process.cwd()`, which a test cannot change), its output kept.
 */
import { CommanderError } from 'commander';
import { createProgram } from '../../../src/cli/cli-program.js';
import { EXIT } from '../../../src/cli/exit-codes.js';

/** How a command ended: its exit code and what it wrote on each stream. */
export interface CliOutcome {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `axon <argv>` as if started in `cwd`. */
export async function axonIn(cwd: string, argv: readonly string[]): Promise<CliOutcome> {
  const out: string[] = [];
  const err: string[] = [];
  let code: number = EXIT.OK;
  const program = createProgram({
    io: {
      stdout: { write: (t: string) => out.push(t) },
      stderr: { write: (t: string) => err.push(t) },
    },
    env: {},
    version: '0.0.0-test',
    signal: undefined,
    cwd,
    setExitCode: (c) => {
      code = c;
    },
  });
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (e) {
    if (!(e instanceof CommanderError)) throw e;
    code = e.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
  }
  return { code, stdout: out.join(''), stderr: err.join('') };
}
