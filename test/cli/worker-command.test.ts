/**
 * `axon worker`'s refusals before it joins a fleet: a missing pool, a bad flag value, a
 * Redis that does not answer within the start-up wait — each a line on stderr and its exit
 * code, nothing left open.
 */
import { describe, expect, it } from 'vitest';
import { workerCommand, type WorkerFlags } from '../../src/cli/worker-command.js';

async function worker(
  flags: WorkerFlags,
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io = {
    stdout: { write: (t: string) => ((stdout += t), true) },
    stderr: { write: (t: string) => ((stderr += t), true) },
  };
  const code = await workerCommand(
    {
      flags,
      signal: new AbortController().signal,
      env: { AXON_LOG_LEVEL: 'silent', AXON_CONNECT_TIMEOUT_MS: '200' },
      cwd: '/',
    },
    io,
  );
  return { code, stdout, stderr };
}

describe('axon worker: refusals', () => {
  it('needs --pool', async () => {
    expect(await worker({})).toEqual({
      code: 2,
      stdout: '',
      stderr: 'axon worker: --pool <id> is required\n',
    });
  });

  it.each([
    [{ pool: 'p', concurrency: '0' }, '--concurrency must be an integer >= 1, got "0"'],
    [{ pool: 'p', graceMs: 'soon' }, '--grace-ms must be an integer >= 1, got "soon"'],
    [{ pool: 'p', vramMb: '-1' }, '--vram-mb must be an integer >= 1, got "-1"'],
    [{ pool: 'p', redis: 'http://x' }, '--redis: must be a redis:// or rediss:// URL'],
    [{ pool: 'p', redisCluster: 'nohost' }, '--redis-cluster: must be host:port'],
    [
      { pool: 'p', redis: 'redis://x:1', redisCluster: 'a:1' },
      'names both a Redis URL and a Redis Cluster',
    ],
    [
      { pool: 'p', postgres: 'mysql://x@h/db' },
      '--postgres: must be a postgres:// or postgresql:// URL',
    ],
    [{ pool: 'no spaces' }, 'fleet worker: pool must be 1 to 64 letters'],
    [
      { pool: 'p', heartbeatMs: '500', ttlMs: '400' },
      'ttlMs (400) must be longer than heartbeatMs (500)',
    ],
  ])('refuses %j with exit 2', async (flags, message) => {
    const { code, stderr } = await worker(flags);
    expect(code).toBe(2);
    expect(stderr).toContain(message);
  });

  it('says when Redis does not answer within the start-up wait, exit 2', async () => {
    const { code, stderr } = await worker({ pool: 'p', redis: 'redis://:pw@127.0.0.1:1' });
    expect(code).toBe(2);
    expect(stderr).toBe(
      'axon worker: cannot reach Redis at redis://:***@127.0.0.1:1 (--redis): connection refused; gave up after 200 ms (--connect-timeout-ms)\n',
    );
  }, 15_000);

  it('says when the Redis Cluster does not answer within the start-up wait, exit 2', async () => {
    const { code, stderr } = await worker({ pool: 'p', redisCluster: '127.0.0.1:1' });
    expect(code).toBe(2);
    expect(stderr).toBe(
      'axon worker: cannot reach the Redis Cluster at 127.0.0.1:1 (--redis-cluster): connection refused; gave up after 200 ms (--connect-timeout-ms)\n',
    );
  }, 15_000);
});
