/**
 * @module Nerva's subprocess runtime: an agent that is a program speaking JSON. The
 * invocation's input goes to its stdin as JSON; its stdout (at most 1 MB) is the result as
 * JSON; exit code 2 means "wrong handler"; anything else but 0 is a failure.
 */
import type { ExecContext } from '../context/exec-context.js';
import { CliAgentError } from '../errors/cli-agent-error.js';
import { InternalError } from '../errors/internal-error.js';
import type { ProcessBehaviour, ProcessInput, ProcessResult } from './process-behaviour.js';
import { spawnStreaming } from './spawn-process.js';

/** Options of {@link createSubprocessAgent}. */
export interface SubprocessAgentOptions {
  /** The name errors carry; default the command. */
  readonly name?: string;
  readonly command: string;
  readonly args?: readonly string[];
  /** Default 30 000 ms (Nerva's); then the process tree is killed (SIGKILL). */
  readonly timeoutMs?: number;
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
}

/** Nerva's cap on a subprocess agent's stdout. */
export const SUBPROCESS_MAX_STDOUT = 1024 * 1024;

/** The exit code by which a subprocess agent says the request is not for it. */
export const WRONG_HANDLER_EXIT = 2;

const STATUSES = new Set(['success', 'needs_data', 'needs_credentials', 'wrong_handler']);

/**
 * A subprocess agent. Its stdout is read as one JSON value: an object with a `status` of
 * `success` (then its `output`), `needs_data`, `needs_credentials` or `wrong_handler` (then
 * its `message` and `data`); any other JSON value is the output itself. Exit code 2 is
 * `wrong_handler` whatever it printed. A stdout past 1 MB kills the process and fails.
 * Nothing is streamed: the answer is one JSON document.
 */
export function createSubprocessAgent(options: SubprocessAgentOptions): ProcessBehaviour {
  if (typeof options.command !== 'string' || options.command === '') {
    throw new TypeError('createSubprocessAgent: command must be a non-empty string');
  }
  const timeoutMs = options.timeoutMs ?? 30_000;
  if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new RangeError(
      `createSubprocessAgent: timeoutMs must be a positive number, got ${timeoutMs}`,
    );
  }
  const name = options.name ?? options.command;
  return {
    name,
    // eslint-disable-next-line require-yield -- a behaviour with no tokens: one JSON answer
    async *run(
      input: ProcessInput,
      ctx: ExecContext,
    ): AsyncGenerator<string, ProcessResult, undefined> {
      const run = spawnStreaming({
        name,
        command: options.command,
        args: [...(options.args ?? [])],
        stdin: JSON.stringify({ message: input.message, args: input.args ?? {} }),
        ...(options.env ? { env: options.env } : {}),
        ...(options.cwd ? { cwd: options.cwd } : {}),
        timeoutMs,
        signal: ctx.signal,
        maxStdoutBytes: SUBPROCESS_MAX_STDOUT,
        failOverStdout: true,
      });
      let stdout: string;
      try {
        let r = await run.next();
        while (!r.done) r = await run.next();
        stdout = r.value.stdout;
      } catch (err) {
        if (
          err instanceof CliAgentError &&
          err.kind === 'non_zero_exit' &&
          err.exitCode === WRONG_HANDLER_EXIT
        ) {
          return {
            status: 'wrong_handler',
            message: err.stdout.trim() || `${name} is not the handler for this request`,
            data: null,
          };
        }
        throw err;
      }
      return toResult(name, options.command, stdout);
    },
  };
}

function toResult(name: string, command: string, stdout: string): ProcessResult {
  let value: unknown;
  try {
    value = JSON.parse(stdout);
  } catch (err) {
    throw new InternalError(
      `${name} (${command}) exited 0 but its stdout is not JSON: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err, details: { stdout: stdout.slice(0, 500) } },
    );
  }
  const status = (value as { status?: unknown } | null)?.status;
  if (typeof status !== 'string' || !STATUSES.has(status))
    return { status: 'success', output: value };
  const r = value as { status: string; output?: unknown; message?: unknown; data?: unknown };
  if (status === 'success') return { status: 'success', output: r.output ?? null };
  return {
    status: status as 'needs_data' | 'needs_credentials' | 'wrong_handler',
    message: typeof r.message === 'string' ? r.message : '',
    data:
      typeof r.data === 'object' && r.data !== null ? (r.data as Record<string, unknown>) : null,
  };
}
