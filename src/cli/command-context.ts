/**
 * @module What every `axon` command gets from `runCli` (its streams, environment, version and
 * stop signal), and {@link commandAction}: how a command's action reports its exit code and
 * turns a `CliError` into its one line on stderr.
 */
import type { Command } from 'commander';
import type { CliIo } from './cli-io.js';
import { isCliError } from './cli-error.js';

/** The environment a command reads. */
export type CliEnv = Readonly<Record<string, string | undefined>>;

/** What a command's action gets. */
export interface CommandContext {
  readonly io: CliIo;
  /** `io.env`, else `process.env`. */
  readonly env: CliEnv;
  /** The package version (`axon --version`, the server's `/openapi.json`). */
  readonly version: string;
  /** Aborted on Ctrl-C or SIGTERM (`main.ts`); absent for a library caller. */
  readonly signal: AbortSignal | undefined;
  /** Where relative paths resolve; `process.cwd()`. */
  readonly cwd: string;
  /** Records the exit code `runCli` resolves. */
  setExitCode(code: number): void;
}

/** `axon runs list` for the `list` command under `runs`: the names below the program. */
export function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c = command; c.parent !== null; c = c.parent) names.unshift(c.name());
  return ['axon', ...names].join(' ');
}

/**
 * The action of `command`: runs `body` and records the exit code it resolves. A `CliError`
 * it throws is written as `axon <command>: <message>` and exits with its code; anything
 * else goes up to `runCli`.
 *
 * @example
 * list.action(commandAction(ctx, list, () => listRuns(list.opts(), ctx)));
 */
export function commandAction(
  ctx: CommandContext,
  command: Command,
  body: () => Promise<number>,
): () => Promise<void> {
  return async () => {
    try {
      ctx.setExitCode(await body());
    } catch (err) {
      if (!isCliError(err)) throw err;
      ctx.io.stderr.write(`${commandPath(command)}: ${err.message}\n`);
      ctx.setExitCode(err.exitCode);
    }
  };
}
