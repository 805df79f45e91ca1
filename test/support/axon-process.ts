/**
 * @module Test helper: `axon <command>` run from source (`node --import tsx src/cli/main.ts`)
 * as a real child process, its output kept, resolved once it says it is ready ({@link spawnAxon})
 * or once it has exited ({@link runAxon}).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A process of axon's, spawned by {@link spawnAxon}. */
export interface FleetProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Everything it wrote so far. */
  output(): string;
  /** Resolves with its exit code (or signal) once it has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Spawns `axon <args>` from source; resolves once its stdout matches `ready`, rejects if it
 * exits first (with what it wrote). `spawned` gets the process at once, for clean-up.
 */
export function spawnAxon(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  ready: RegExp,
  spawned: FleetProcess[],
): Promise<{ process: FleetProcess; match: RegExpMatchArray }> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, AXON_LOG_LEVEL: 'warn', ...env };
  delete childEnv['NODE_OPTIONS'];
  const child = spawn('node', ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: ROOT,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => {
      resolve({ code, signal });
    });
  });
  const proc: FleetProcess = {
    child,
    pid: child.pid ?? -1,
    output: () => out,
    exited,
  };
  spawned.push(proc);
  return new Promise((resolve, reject) => {
    const onData = (chunk: string): void => {
      out += chunk;
      const match = ready.exec(out);
      if (match) resolve({ process: proc, match });
    };
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', onData);
    child.stderr.on('data', (chunk: string) => {
      out += chunk;
    });
    void exited.then(({ code, signal }) => {
      reject(
        new Error(
          `axon ${args[0] ?? ''} exited (${code ?? signal ?? ''}) before it was ready:\n${out}`,
        ),
      );
    });
  });
}

/** How a finished `axon` process ended, and what it wrote on each stream. */
export interface AxonExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `axon <args>` from source to its end and resolves how it ended. `spawned` gets the
 * process at once (to signal it, or for clean-up).
 */
export function runAxon(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  spawned: ChildProcess[],
): Promise<AxonExit> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, AXON_LOG_LEVEL: 'warn', ...env };
  delete childEnv['NODE_OPTIONS'];
  const child = spawn('node', ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: ROOT,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  spawned.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => (stdout += chunk));
  child.stderr.on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      resolve({ code, signal, stdout, stderr });
    });
  });
}
