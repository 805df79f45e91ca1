/**
 * Regression (issue 45, "a newcomer's first hour"): `axon serve --postgres` with a wrong URL
 * printed a stack trace under `axon:`; `axon serve --redis` and `axon worker` with a Redis
 * nobody answers logged JSON warnings, then hung for ever, never listening, deaf to the first
 * SIGTERM. Now each is one line naming the command, where the URL was given, the URL with
 * its password masked and the cause, exit 2 — after the start-up wait (`--connect-timeout-ms`,
 * `AXON_CONNECT_TIMEOUT_MS`) for a server that does not answer — and a signal stops a process
 * that is not serving yet at once, exit 130. Real child processes from source, the real
 * PostgreSQL and Redis, and TCP servers on free ports that refuse, drop or never answer.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runAxon, type AxonExit } from '../../support/axon-process.js';
import { POSTGRES_URL } from '../../support/postgres.js';
import { freePort } from '../../support/redis-setup.js';

const dir = mkdtempSync(join(tmpdir(), 'axon-reach-'));
const spawned: ChildProcess[] = [];
const servers: net.Server[] = [];
afterEach(() => {
  for (const child of spawned.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  for (const server of servers.splice(0)) server.close();
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** The tests' PostgreSQL, as `user:password@` and `database` say. */
function postgresAt(user: string, database: string, port?: number): string {
  const u = new URL(POSTGRES_URL);
  u.username = user;
  u.password = 'secret-pw';
  u.pathname = `/${database}`;
  if (port !== undefined) u.port = String(port);
  return u.toString();
}
const PG = new URL(POSTGRES_URL);

/**
 * A TCP server on a free port: `onSocket` gets each connection (default: held open, never
 * answered — a server that does not answer). Closed after the test.
 */
async function tcpServer(
  onSocket: (socket: net.Socket) => void = () => undefined,
): Promise<number> {
  const server = net.createServer((socket) => {
    socket.on('error', () => undefined);
    onSocket(socket);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as net.AddressInfo).port;
}

/** A silent server, and a promise of its first connection. */
async function silentServer(): Promise<{ port: number; connected: Promise<void> }> {
  let connected!: () => void;
  const first = new Promise<void>((resolve) => (connected = resolve));
  const port = await tcpServer(() => {
    connected();
  });
  return { port, connected: first };
}

/** What a refusal must look like: one line on stderr (no stack), nothing on stdout, exit 2. */
function expectOneLine(out: AxonExit, line: string | RegExp): void {
  expect(out.code).toBe(2);
  expect(out.stdout).toBe('');
  expect(out.stderr.endsWith('\n')).toBe(true);
  expect(out.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(out.stderr).not.toMatch(/^\s+at /m);
  expect(out.stderr).not.toContain('secret-pw');
  if (typeof line === 'string') expect(out.stderr).toBe(`${line}\n`);
  else expect(out.stderr).toMatch(line);
}

const serveArgs = (...args: string[]): string[] => [
  'serve',
  '--port',
  '0',
  '--data-dir',
  join(dir, randomUUID()),
  ...args,
];

describe('axon serve --postgres with a wrong URL: one line, exit 2', () => {
  it('a port nothing listens on: connection refused, after the wait --connect-timeout-ms sets', async () => {
    const port = await freePort();
    const url = postgresAt('postgres', 'postgres', port);
    const out = await runAxon(
      serveArgs('--postgres', url, '--connect-timeout-ms', '300'),
      {},
      spawned,
    );
    expectOneLine(
      out,
      `axon serve: cannot reach PostgreSQL at postgres://postgres:***@127.0.0.1:${port}/postgres (--postgres): connection refused; gave up after 300 ms (--connect-timeout-ms)`,
    );
  });

  it('a database that does not exist: the server says so, at once', async () => {
    const db = `axon_nope_${randomUUID().slice(0, 8)}`;
    const out = await runAxon(serveArgs('--postgres', postgresAt('postgres', db)), {}, spawned);
    expectOneLine(
      out,
      `axon serve: cannot reach PostgreSQL at postgres://postgres:***@${PG.host}/${db} (--postgres): database "${db}" does not exist`,
    );
  });

  it('a role that does not exist, named by AXON_POSTGRES_URL: the variable is named', async () => {
    const role = `nobody_${randomUUID().slice(0, 8)}`;
    const out = await runAxon(
      serveArgs(),
      { AXON_POSTGRES_URL: postgresAt(role, 'postgres') },
      spawned,
    );
    expectOneLine(
      out,
      `axon serve: cannot reach PostgreSQL at postgres://${role}:***@${PG.host}/postgres (AXON_POSTGRES_URL): role "${role}" does not exist`,
    );
  });
});

describe('axon serve --redis / --redis-cluster that nobody answers: one line after the wait, exit 2', () => {
  it('a Redis URL nobody answers, the wait from AXON_CONNECT_TIMEOUT_MS: no JSON warnings, one line', async () => {
    const port = await freePort();
    const out = await runAxon(
      serveArgs('--redis', `redis://:secret-pw@127.0.0.1:${port}`),
      { AXON_CONNECT_TIMEOUT_MS: '300' },
      spawned,
    );
    expectOneLine(
      out,
      `axon serve: cannot reach Redis at redis://:***@127.0.0.1:${port} (--redis): connection refused; gave up after 300 ms (--connect-timeout-ms)`,
    );
  });

  it('a Redis Cluster whose nodes nobody answers, the wait from axon.yaml', async () => {
    const [a, b] = [await freePort(), await freePort()];
    const config = join(dir, `${randomUUID()}.yaml`);
    writeFileSync(config, 'connect_timeout_ms: 400\n');
    const out = await runAxon(
      serveArgs('--config', config, '--redis-cluster', `127.0.0.1:${a},127.0.0.1:${b}`),
      {},
      spawned,
    );
    expectOneLine(
      out,
      `axon serve: cannot reach the Redis Cluster at 127.0.0.1:${a},127.0.0.1:${b} (--redis-cluster): connection refused; gave up after 400 ms (--connect-timeout-ms)`,
    );
  });

  it('a Redis that refuses the password: the server says so, at once', async () => {
    const url = new URL(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379');
    url.username = `nobody-${randomUUID().slice(0, 8)}`;
    url.password = 'secret-pw';
    const out = await runAxon(serveArgs('--redis', url.toString()), {}, spawned);
    expectOneLine(
      out,
      new RegExp(
        `^axon serve: cannot reach Redis at redis://${url.username}:\\*\\*\\*@${url.host} \\(--redis\\): WRONGPASS `,
      ),
    );
  });

  it('waits through connections that fail: a Redis that drops the first ones, then answers, is served on', async () => {
    const redis = new URL(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379');
    let dropped = 0;
    const port = await tcpServer((socket) => {
      if (dropped < 3) {
        dropped += 1;
        socket.destroy();
        return;
      }
      const upstream = net.connect(Number(redis.port || 6379), redis.hostname);
      upstream.on('error', () => socket.destroy());
      socket.on('close', () => upstream.destroy());
      socket.pipe(upstream).pipe(socket);
    });
    const config = join(dir, `${randomUUID()}.yaml`);
    writeFileSync(
      config,
      `redis:\n  url: redis://127.0.0.1:${port}\n  prefix: "axon-test:${randomUUID()}:"\n`,
    );
    const out = runAxon(
      serveArgs('--config', config, '--connect-timeout-ms', '600000'),
      {},
      spawned,
    );
    const child = spawned.at(-1);
    // Stopped once it listens: it waited through the dropped connections.
    const listening = new Promise<void>((resolve) => {
      child?.stdout?.on('data', (chunk: Buffer | string) => {
        if (String(chunk).includes('listening on')) resolve();
      });
    });
    await Promise.race([listening, out]);
    child?.kill('SIGTERM');
    const ended = await out;
    expect(dropped).toBe(3);
    expect(ended.stdout).toMatch(
      /^axon serve: listening on http:\/\/127\.0\.0\.1:\d+ \(store and fleet on redis:\/\/127\.0\.0\.1:\d+, /m,
    );
    expect(ended.code).toBe(0);
  });
});

describe('a signal before it serves stops it at once, exit 130', () => {
  // The wait is 10 minutes: only the signal can end these within the test's timeout.
  it('axon serve waiting for a Redis that accepts and never answers', async () => {
    const silent = await silentServer();
    const out = runAxon(
      serveArgs('--redis', `redis://127.0.0.1:${silent.port}`, '--connect-timeout-ms', '600000'),
      {},
      spawned,
    );
    await silent.connected;
    spawned.at(-1)?.kill('SIGTERM');
    expect(await out).toEqual({
      code: 130,
      signal: null,
      stdout: 'axon serve: SIGTERM: stopped before it was serving\n',
      stderr: '',
    });
  });

  it('axon serve waiting for a PostgreSQL that accepts and never answers (SIGINT)', async () => {
    const silent = await silentServer();
    const out = runAxon(
      serveArgs('--postgres', `postgres://postgres@127.0.0.1:${silent.port}/postgres`),
      { AXON_CONNECT_TIMEOUT_MS: '600000' },
      spawned,
    );
    await silent.connected;
    spawned.at(-1)?.kill('SIGINT');
    expect(await out).toEqual({
      code: 130,
      signal: null,
      stdout: 'axon serve: SIGINT: stopped before it was serving\n',
      stderr: '',
    });
  });

  it('axon worker waiting for its Redis', async () => {
    const silent = await silentServer();
    const out = runAxon(
      [
        'worker',
        '--pool',
        'p',
        '--redis',
        `redis://127.0.0.1:${silent.port}`,
        '--connect-timeout-ms',
        '600000',
      ],
      {},
      spawned,
    );
    await silent.connected;
    spawned.at(-1)?.kill('SIGTERM');
    expect(await out).toEqual({
      code: 130,
      signal: null,
      stdout: 'axon worker: SIGTERM: stopped before it took steps\n',
      stderr: '',
    });
  });
});

describe('axon worker with a Redis or PostgreSQL it cannot use: one line, exit 2', () => {
  it('a Redis URL nobody answers', async () => {
    const port = await freePort();
    const out = await runAxon(
      ['worker', '--pool', 'p', '--redis', `redis://:secret-pw@127.0.0.1:${port}`],
      { AXON_CONNECT_TIMEOUT_MS: '300' },
      spawned,
    );
    expectOneLine(
      out,
      `axon worker: cannot reach Redis at redis://:***@127.0.0.1:${port} (--redis): connection refused; gave up after 300 ms (--connect-timeout-ms)`,
    );
  });

  it('a Redis Cluster nobody answers, and a PostgreSQL database that does not exist: both on the line', async () => {
    const port = await freePort();
    const db = `axon_nope_${randomUUID().slice(0, 8)}`;
    const out = await runAxon(
      [
        'worker',
        '--pool',
        'p',
        '--redis-cluster',
        `127.0.0.1:${port}`,
        '--postgres',
        postgresAt('postgres', db),
        '--connect-timeout-ms',
        '300',
      ],
      {},
      spawned,
    );
    expectOneLine(
      out,
      `axon worker: cannot reach the Redis Cluster at 127.0.0.1:${port} (--redis-cluster): connection refused; gave up after 300 ms (--connect-timeout-ms); cannot reach PostgreSQL at postgres://postgres:***@${PG.host}/${db} (--postgres): database "${db}" does not exist`,
    );
  });
});
