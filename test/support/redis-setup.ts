/**
 * @module Vitest globalSetup of the integration project: the Redis the tests use. It is the
 * one answering at `REDIS_URL` (default `redis://127.0.0.1:6379`); else a throwaway
 * `redis-server` on a free port, keeping nothing on disk and stopped after the run; else the
 * run stops at once with one line saying what to start. The chosen URL reaches the test
 * workers as `REDIS_URL` (see `redisUrl()` in ./redis.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as connectTls } from 'node:tls';
import { redisUrl } from './redis.js';

/** What the failure line tells a user to run. */
export const START_REDIS_COMMAND =
  'redis-server --daemonize yes --port 6379 --save "" --appendonly no';

/** Where a Redis URL points. */
export interface RedisAddress {
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
}

/**
 * Host and port of a `redis://` or `rediss://` URL; the port defaults to 6379.
 * @throws TypeError naming `REDIS_URL` when the URL is not one.
 */
export function parseRedisUrl(url: string): RedisAddress {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TypeError(`REDIS_URL must be a redis:// URL, got ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:')
    throw new TypeError(`REDIS_URL must be a redis:// URL, got ${JSON.stringify(url)}`);
  return {
    // URL keeps the brackets of an IPv6 host; sockets want it bare.
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1',
    port: parsed.port === '' ? 6379 : Number(parsed.port),
    tls: parsed.protocol === 'rediss:',
  };
}

/** The URL with its password masked, for messages. */
export function displayRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password === '') return url;
    parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}

/** Whether the first bytes a server sent back to `PING` are a Redis reply (`+PONG`, or `-NOAUTH ...`). */
export function isRedisReply(firstBytes: string): boolean {
  return /^[+-][A-Za-z]/.test(firstBytes);
}

/** The one line said when a throwaway server stands in for the one at `wanted`. */
export function throwawayMessage(wanted: string, used: string): string {
  return `tests: no Redis answers at ${displayRedisUrl(wanted)}; using a throwaway redis-server at ${used} (stopped after the run)`;
}

/** The one line the run fails with when no Redis answers and there is no `redis-server`. */
export function missingRedisMessage(wanted: string): string {
  return `tests need Redis and none answers at ${displayRedisUrl(wanted)}: start one with \`${START_REDIS_COMMAND}\`, or set REDIS_URL`;
}

/** The arguments of a throwaway server: loopback and `port` only, nothing kept on disk. */
export function throwawayArgs(port: number, dir: string): string[] {
  return [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--daemonize',
    'no',
    '--loglevel',
    'warning',
  ];
}

/**
 * A TCP port free on `host` now, picked by the OS. Another process may take it before the
 * caller binds it, so a caller retries with a new one when its bind fails.
 */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new Error(`no port for ${host}`));
      });
    });
  });
}

/** Whether a Redis answers `PING` at `address` within `timeoutMs` (an auth error counts). */
export function redisAnswers(address: RedisAddress, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const { host, port } = address;
    const socket: Socket = address.tls
      ? connectTls({ host, port, servername: host })
      : createConnection({ host, port });
    const done = (answers: boolean): void => {
      socket.destroy();
      resolve(answers);
    };
    const refused = (): void => {
      done(false);
    };
    socket.setTimeout(timeoutMs, refused);
    socket.once('error', refused);
    socket.once('close', refused);
    socket.once(address.tls ? 'secureConnect' : 'connect', () => socket.write('PING\r\n'));
    socket.once('data', (chunk: Buffer) => {
      done(isRedisReply(chunk.toString('latin1')));
    });
  });
}

/** A `redis-server` this setup started. */
interface Throwaway {
  readonly url: string;
  readonly stop: () => Promise<void>;
}

/** Why a throwaway server could not be had. */
type NoThrowaway = { readonly missing: true } | { readonly missing: false; readonly why: string };

const STARTUP_MS = 5_000;

/** Starts a throwaway `redis-server` on a free port and waits until it answers. */
async function startThrowaway(): Promise<Throwaway | NoThrowaway> {
  let why = '';
  // The port is free when picked but may be taken before redis-server binds it: a few tries.
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'axon-test-redis-'));
    const child = spawn('redis-server', throwawayArgs(port, dir), {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const keep = (chunk: Buffer): void => {
      output = (output + chunk.toString()).slice(-2_000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const exited = new Promise<void>((resolve) =>
      child.once('exit', () => {
        resolve();
      }),
    );
    const spawned = await new Promise<NodeJS.ErrnoException | null>((resolve) => {
      child.once('spawn', () => {
        resolve(null);
      });
      child.once('error', resolve);
    });
    if (spawned) {
      rmSync(dir, { recursive: true, force: true });
      if (spawned.code === 'ENOENT') return { missing: true };
      return { missing: false, why: spawned.message };
    }
    // If vitest exits without its teardown (a crash, process.exit), the server goes too.
    const killOnExit = (): void => {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    };
    process.once('exit', killOnExit);
    const address: RedisAddress = { host: '127.0.0.1', port, tls: false };
    if (await answersBeforeExit(address, child)) {
      return {
        url: `redis://127.0.0.1:${port}`,
        stop: async () => {
          process.off('exit', killOnExit);
          if (child.exitCode === null && child.signalCode === null) {
            child.kill('SIGTERM');
            const timer = setTimeout(() => child.kill('SIGKILL'), STARTUP_MS);
            await exited;
            clearTimeout(timer);
          }
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }
    process.off('exit', killOnExit);
    child.kill('SIGKILL');
    await exited;
    rmSync(dir, { recursive: true, force: true });
    why = output.trim().split('\n').at(-1) || 'it did not answer';
  }
  return { missing: false, why };
}

/** Polls the new server until it answers; false when it exits or takes too long. */
async function answersBeforeExit(address: RedisAddress, child: ChildProcess): Promise<boolean> {
  const deadline = Date.now() + STARTUP_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) return false;
    if (await redisAnswers(address, 200)) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return false;
}

/** Ends the run with one line: vitest would wrap a thrown error in a banner and a stack. */
function fail(line: string): never {
  process.stderr.write(`${line}\n`);
  process.exit(1);
}

/**
 * Makes sure a Redis answers for the integration tests and sets `process.env.REDIS_URL`
 * to it before the test workers start (they inherit it). Silent when the configured Redis
 * answers; one line on stderr when a throwaway server stands in; returns its teardown.
 */
export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  const wanted = redisUrl();
  let address: RedisAddress;
  try {
    address = parseRedisUrl(wanted);
  } catch (err) {
    fail((err as Error).message);
  }
  if (await redisAnswers(address)) {
    process.env['REDIS_URL'] = wanted;
    return undefined;
  }
  const throwaway = await startThrowaway();
  if ('missing' in throwaway) {
    if (throwaway.missing) fail(missingRedisMessage(wanted));
    fail(
      `tests need Redis and none answers at ${displayRedisUrl(wanted)}; a throwaway redis-server did not start: ${throwaway.why}`,
    );
  }
  process.env['REDIS_URL'] = throwaway.url;
  process.stderr.write(`${throwawayMessage(wanted, throwaway.url)}\n`);
  return throwaway.stop;
}
