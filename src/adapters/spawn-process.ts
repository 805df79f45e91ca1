/**
 * @module Running a child process for an agent: its own process group (so a timeout or an
 * abort kills the whole tree), stdout streamed chunk by chunk with backpressure, stdout and
 * stderr captured within bounds, and every failure one of seed 001's four kinds.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { CliAgentError } from '../errors/cli-agent-error.js';

/** How to run a process. */
export interface SpawnSpec {
  /** The agent's name in errors. */
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  /** Written to stdin, which is then closed; `null` closes stdin at once. */
  readonly stdin: string | null;
  /** Merged over this process's environment. */
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  /** stdout kept for the result at most (the rest is dropped, and `truncated` set). */
  readonly maxStdoutBytes: number;
  /** stdout past this many bytes fails the run as `non_zero_exit` instead of truncating. */
  readonly failOverStdout?: boolean;
}

/** How a process ended (exit code 0 only; anything else throws). */
export interface SpawnResult {
  readonly stdout: string;
  readonly stderr: string;
  readonly truncated: boolean;
}

/** Characters of stderr kept at most (its end), and of stdout an error carries (its end). */
const ERROR_TAIL = 16 * 1024;

/** Kills the process group of `child` (the child and everything it started). */
function killTree(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // The group is gone already; fall back to the child itself.
    child.kill('SIGKILL');
  }
}

/**
 * Runs `spec`, yielding stdout as it arrives (decoded UTF-8 text, split anywhere), and
 * returns the captured output when the process exits 0. Throws {@link CliAgentError}:
 * `spawn_failed`, `non_zero_exit`, `timeout`, `aborted`.
 */
export async function* spawnStreaming(
  spec: SpawnSpec,
): AsyncGenerator<string, SpawnResult, undefined> {
  const fail = (
    kind: ConstructorParameters<typeof CliAgentError>[0],
    extra: Record<string, unknown> = {},
    cause?: unknown,
  ): CliAgentError =>
    new CliAgentError(
      kind,
      {
        name: spec.name,
        command: spec.command,
        stdout: stdout.slice(-ERROR_TAIL),
        stderr,
        ...extra,
      },
      cause === undefined ? {} : { cause },
    );
  let stdout = '';
  let stderr = '';
  let stdoutBytes = 0;
  let truncated = false;
  if (spec.signal?.aborted) throw fail('aborted', { detail: 'aborted before it started' });

  const child = spawn(spec.command, [...spec.args], {
    cwd: spec.cwd,
    env: { ...process.env, ...spec.env },
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  // Why the run is ending early, if it is: the first cause wins.
  const state: { reason: 'timeout' | 'aborted' | 'too_much' | null; spawnError: Error | null } = {
    reason: null,
    spawnError: null,
  };
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('error', (err) => {
      state.spawnError = err;
      resolve({ code: null, signal: null });
    });
    child.once('close', (code, signal) => {
      resolve({ code, signal });
    });
  });
  const stop = (reason: 'timeout' | 'aborted' | 'too_much'): void => {
    state.reason ??= reason;
    killTree(child);
  };
  const timer = setTimeout(() => {
    stop('timeout');
  }, spec.timeoutMs);
  const onAbort = (): void => {
    stop('aborted');
  };
  spec.signal?.addEventListener('abort', onAbort, { once: true });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-ERROR_TAIL);
  });
  // A process that exits without reading its stdin must not crash us with EPIPE.
  child.stdin.on('error', () => undefined);
  if (spec.stdin !== null) child.stdin.end(spec.stdin);
  else child.stdin.end();

  try {
    child.stdout.setEncoding('utf8');
    for await (const chunk of child.stdout as AsyncIterable<string>) {
      const bytes = Buffer.byteLength(chunk, 'utf8');
      if (stdoutBytes + bytes > spec.maxStdoutBytes) {
        truncated = true;
        if (spec.failOverStdout === true) {
          stop('too_much');
          break;
        }
        const room = spec.maxStdoutBytes - stdoutBytes;
        if (room > 0) stdout += Buffer.from(chunk, 'utf8').subarray(0, room).toString('utf8');
        stdoutBytes = spec.maxStdoutBytes;
      } else {
        stdout += chunk;
        stdoutBytes += bytes;
      }
      yield chunk;
    }
    const { code, signal } = await exited;
    if (state.spawnError) {
      throw fail('spawn_failed', { detail: state.spawnError.message }, state.spawnError);
    }
    if (state.reason === 'timeout') {
      throw fail('timeout', { detail: `no exit within ${spec.timeoutMs} ms; process tree killed` });
    }
    if (state.reason === 'aborted')
      throw fail('aborted', { detail: 'process tree killed' }, spec.signal?.reason);
    if (state.reason === 'too_much') {
      throw fail('non_zero_exit', {
        signal: 'SIGKILL',
        detail: `stdout passed ${spec.maxStdoutBytes} bytes`,
      });
    }
    if (code !== 0) throw fail('non_zero_exit', { exitCode: code, signal });
    return { stdout, stderr, truncated };
  } finally {
    clearTimeout(timer);
    spec.signal?.removeEventListener('abort', onAbort);
    // Stopped early by the consumer (or failed): nothing of it may outlive the run.
    if (child.exitCode === null && child.signalCode === null) killTree(child);
  }
}
