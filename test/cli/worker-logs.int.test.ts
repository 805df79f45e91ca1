/**
 * `axon worker`'s logs: pino alone on stderr, one JSON object a line where stderr is not a
 * terminal, at AXON_LOG_LEVEL (default warn, as its help says); its own report on stdout.
 * A real worker process on the real Redis.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Starts a worker of a new pool, stops it (SIGTERM) once it takes steps; what it printed. */
function workerRun(
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  delete childEnv['NODE_OPTIONS'];
  if (!('AXON_LOG_LEVEL' in env)) delete childEnv['AXON_LOG_LEVEL'];
  const pool = `logs-${randomUUID().slice(0, 8)}`;
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/cli/main.ts',
      'worker',
      '--pool',
      pool,
      '--redis',
      'redis://127.0.0.1:6379',
      '--heartbeat-ms',
      '100',
      '--ttl-ms',
      '1000',
    ],
    { cwd: ROOT, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  let stopped = false;
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (t: string) => {
    stdout += t;
    // Once: a second signal would stop it at once (exit 130).
    if (!stopped && stdout.includes('taking steps')) {
      stopped = true;
      child.kill('SIGTERM');
    }
  });
  child.stderr.on('data', (t: string) => {
    stderr += t;
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the worker did not start:\n${stdout}\n${stderr}`));
    }, 45_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** stderr's lines, each parsed; fails naming a line that is not one JSON object. */
function records(stderr: string): Record<string, unknown>[] {
  return stderr
    .split('\n')
    .filter((l) => l !== '')
    .map((line) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        throw new Error(`a stderr line that is not JSON: ${line}`);
      }
      const record = parsed as Record<string, unknown>;
      expect(typeof record['level'], line).toBe('number');
      return record;
    });
}

describe('axon worker: one log format, at the documented level', () => {
  it('at AXON_LOG_LEVEL=info every stderr line is a pino JSON record, info ones among them', async () => {
    const { code, stdout, stderr } = await workerRun({ AXON_LOG_LEVEL: 'info' });
    expect(code).toBe(0);
    const logs = records(stderr);
    expect(logs).toContainEqual(
      expect.objectContaining({ level: 30, msg: 'fleet worker: taking steps' }),
    );
    // Its report is on stdout, plain, and not in the logs.
    expect(stdout).toMatch(/^axon worker: replica \S+ of pool logs-/m);
    expect(stdout).toMatch(/^axon worker: stopped \(/m);
    expect(stderr).not.toContain('axon worker:');
  });

  it('at the default level (warn) no info record is written', async () => {
    const { code, stdout, stderr } = await workerRun({});
    expect(code).toBe(0);
    expect(stdout).toMatch(/^axon worker: stopped \(/m);
    const logs = records(stderr);
    expect(logs.filter((r) => (r['level'] as number) < 40)).toEqual([]);
    expect(stderr).not.toContain('taking steps');
  });
});
