/**
 * @module Test helper: a fleet of real processes on loopback — `axon serve --redis` and
 * `axon worker`s run from source (`node --import tsx src/cli/main.ts`), all under one key
 * prefix of the tests' Redis, killed and their keys removed when the file's tests end.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';
import { clearRedisPrefix, redisUrl } from './redis.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Short lock and stall intervals for `axon worker`, so a dead replica's step moves on within seconds. */
export const FAST_REPLICA_FLAGS: readonly string[] = [
  '--lock-ms',
  '1500',
  '--stalled-ms',
  '500',
  '--heartbeat-ms',
  '200',
  '--ttl-ms',
  '1000',
];

/** A process of the fleet. */
export interface FleetProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Everything it wrote so far. */
  output(): string;
  /** Resolves with its exit code (or signal) once it has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** A worker process, with the replica id it announced. */
export interface WorkerProcess extends FleetProcess {
  readonly replicaId: string;
}

/** The fleet of a test file; see the module. */
export interface TestFleet {
  readonly prefix: string;
  /** `axon serve --redis` on a free port: its base URL. */
  api(env?: NodeJS.ProcessEnv): Promise<FleetProcess & { readonly url: string }>;
  /** `axon worker --pool <pool> --tags <tags> ...args`, once it takes steps. */
  worker(
    pool: string,
    tags: readonly string[],
    args?: readonly string[],
    env?: NodeJS.ProcessEnv,
  ): Promise<WorkerProcess>;
}

/** Spawns `axon <args>` from source; resolves once its stdout matches `ready`. */
function spawnAxon(
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

/**
 * A fleet for this test file under its own prefix; see the module. `config` is YAML added
 * to the config file every process of it reads (after its `redis:` section).
 */
export function useTestFleet(name: string, config = ''): TestFleet {
  const prefix = `axon-test:${name}:${process.pid}:`;
  const dir = mkdtempSync(join(tmpdir(), `axon-${name}-`));
  const file = join(dir, 'axon.yaml');
  writeFileSync(file, `redis:\n  url: ${redisUrl()}\n  prefix: "${prefix}"\n${config}`);
  const spawned: FleetProcess[] = [];
  afterAll(async () => {
    for (const p of spawned) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await Promise.all(spawned.map((p) => p.exited));
    await clearRedisPrefix(prefix);
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    prefix,
    async api(env = {}) {
      const { process: proc, match } = await spawnAxon(
        ['serve', '--port', '0', '--config', file, '--data-dir', join(dir, 'data')],
        env,
        /listening on (http:\/\/\S+) /,
        spawned,
      );
      return { ...proc, url: match[1] as string };
    },
    async worker(pool, tags, args = [], env = {}) {
      const { process: proc, match } = await spawnAxon(
        [
          'worker',
          '--pool',
          pool,
          ...(tags.length > 0 ? ['--tags', tags.join(',')] : []),
          '--config',
          file,
          ...args,
        ],
        { AXON_LOG_LEVEL: 'warn', ...env },
        /replica (\S+) of pool/,
        spawned,
      );
      return { ...proc, replicaId: match[1] as string };
    },
  };
}
