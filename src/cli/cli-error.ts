/**
 * @module The error a CLI command fails with when it can say why in one line: its `code`
 * decides the exit code (`exit-codes.ts`), its message is what the user reads.
 */
import { EXIT, type ExitCode } from './exit-codes.js';

/** Why a command failed. */
export type CliErrorCode =
  /** A bad option value or combination. */
  | 'USAGE'
  /** The run (or other record) asked for does not exist, or the caller may not see it. */
  | 'NOT_FOUND'
  /** The server answered with an error: a refused key, a failure of its own. */
  | 'REQUEST_FAILED'
  /** The server did not answer (or is not an axon server), or the data dir cannot be read. */
  | 'UNREACHABLE'
  /**
   * A store or Redis the command was given (`--postgres`, `--redis`, `--to`, ...) did not
   * answer at start, or refused the connection: nothing was done.
   */
  | 'NOT_REACHED';

const EXIT_OF: Readonly<Record<CliErrorCode, ExitCode>> = {
  USAGE: EXIT.USAGE,
  NOT_FOUND: EXIT.FAILED,
  REQUEST_FAILED: EXIT.FAILED,
  UNREACHABLE: EXIT.UNREACHABLE,
  NOT_REACHED: EXIT.USAGE,
};

/**
 * A failure the CLI prints as `axon <command>: <message>` and exits with {@link exitCode}.
 * Branch on `code`, not on the message.
 *
 * @example
 * throw new CliError('NOT_FOUND', `no run "${runId}" at ${url}`);
 */
export class CliError extends Error {
  override readonly name = 'CliError';
  readonly code: CliErrorCode;

  constructor(code: CliErrorCode, message: string, options?: { readonly cause?: unknown }) {
    super(message, options);
    this.code = code;
  }

  /** The process exit code of this failure. */
  get exitCode(): ExitCode {
    return EXIT_OF[this.code];
  }
}

/** True for a {@link CliError}. */
export function isCliError(err: unknown): err is CliError {
  return err instanceof CliError;
}
