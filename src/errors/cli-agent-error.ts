/** @module A CLI agent (a child process) that failed: seed 001's error taxonomy. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/** Seed 001's four ways a CLI agent fails. */
export type CliAgentFailure = 'spawn_failed' | 'non_zero_exit' | 'timeout' | 'aborted';

const CODES = {
  spawn_failed: 'INTERNAL',
  non_zero_exit: 'INTERNAL',
  timeout: 'TIMEOUT',
  aborted: 'CANCELLED',
} as const;

/**
 * A CLI agent failed: its binary could not be started (`spawn_failed`), it exited with a
 * code other than 0 (`non_zero_exit`, with `exitCode` or `signal`), it ran past its timeout
 * (`timeout`; its whole process tree was killed), or its AbortSignal fired (`aborted`; the
 * tree was killed too). `stdout` and `stderr` hold what it printed, bounded to their ends.
 * The code follows the kind: `INTERNAL`, `INTERNAL`, `TIMEOUT` (retriable), `CANCELLED`.
 */
export class CliAgentError extends AxonError {
  readonly code: (typeof CODES)[CliAgentFailure];
  override readonly retriable: boolean;
  readonly kind: CliAgentFailure;
  readonly command: string;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;

  constructor(
    kind: CliAgentFailure,
    fields: {
      readonly name: string;
      readonly command: string;
      readonly exitCode?: number | null;
      readonly signal?: string | null;
      readonly stdout?: string;
      readonly stderr?: string;
      readonly detail?: string;
    },
    options: AxonErrorOptions = {},
  ) {
    const exitCode = fields.exitCode ?? null;
    const signal = fields.signal ?? null;
    const stdout = fields.stdout ?? '';
    const stderr = fields.stderr ?? '';
    const what =
      kind === 'non_zero_exit'
        ? exitCode === null
          ? `signal=${signal ?? '?'}`
          : `exitCode=${exitCode}`
        : kind;
    super(
      `${fields.name}: ${what}${fields.detail ? ` (${fields.detail})` : ''} stdout=${JSON.stringify(stdout.slice(-500))} stderr=${JSON.stringify(stderr.slice(-500))}`,
      {
        ...options,
        details: { ...options.details, kind, command: fields.command, exit_code: exitCode, signal },
      },
    );
    this.kind = kind;
    this.code = CODES[kind];
    this.retriable = kind === 'timeout';
    this.command = fields.command;
    this.exitCode = exitCode;
    this.signal = signal;
    this.stdout = stdout;
    this.stderr = stderr;
  }
}
