/** @module Tests of the pure parts of the Redis globalSetup: URLs, messages, arguments, probing. */
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  displayRedisUrl,
  freePort,
  isRedisReply,
  missingRedisMessage,
  parseRedisUrl,
  redisAnswers,
  START_REDIS_COMMAND,
  throwawayArgs,
  throwawayMessage,
} from './redis-setup.js';
import { DEFAULT_REDIS_URL, redisUrl } from './redis.js';

describe('redisUrl', () => {
  it('is REDIS_URL when set, else the default (an empty value counts as unset)', () => {
    expect(redisUrl({})).toBe('redis://127.0.0.1:6379');
    expect(DEFAULT_REDIS_URL).toBe('redis://127.0.0.1:6379');
    expect(redisUrl({ REDIS_URL: '' })).toBe(DEFAULT_REDIS_URL);
    expect(redisUrl({ REDIS_URL: ' redis://10.0.0.5:7000/2 ' })).toBe('redis://10.0.0.5:7000/2');
  });
});

describe('parseRedisUrl', () => {
  it('reads host and port, 6379 when none is given, and TLS from rediss://', () => {
    expect(parseRedisUrl('redis://127.0.0.1:6390')).toEqual({
      host: '127.0.0.1',
      port: 6390,
      tls: false,
    });
    expect(parseRedisUrl('redis://:secret@cache.internal/3')).toEqual({
      host: 'cache.internal',
      port: 6379,
      tls: false,
    });
    expect(parseRedisUrl('rediss://[::1]:6380')).toEqual({ host: '::1', port: 6380, tls: true });
  });

  it('refuses what is not a redis:// URL with a TypeError naming REDIS_URL', () => {
    expect(() => parseRedisUrl('127.0.0.1:6379')).toThrow(TypeError);
    expect(() => parseRedisUrl('http://127.0.0.1:6379')).toThrow(/REDIS_URL must be a redis:/);
    expect(() => parseRedisUrl('not a url')).toThrow(/REDIS_URL/);
  });
});

describe('messages', () => {
  it('the failure is one line saying what to start, with the password masked', () => {
    const line = missingRedisMessage('redis://:hunter2@127.0.0.1:6390');
    expect(line).not.toContain('\n');
    expect(line).not.toContain('hunter2');
    expect(line).toContain('127.0.0.1:6390');
    expect(line).toContain(
      '`redis-server --daemonize yes --port 6379 --save "" --appendonly no`, or set REDIS_URL',
    );
    expect(line).toContain(START_REDIS_COMMAND);
  });

  it('the throwaway notice is one line naming both URLs', () => {
    const line = throwawayMessage(DEFAULT_REDIS_URL, 'redis://127.0.0.1:41234');
    expect(line).not.toContain('\n');
    expect(line).toContain('redis://127.0.0.1:6379');
    expect(line).toContain('redis://127.0.0.1:41234');
    expect(displayRedisUrl('redis://user:pw@h:1')).toBe('redis://user:***@h:1');
    expect(displayRedisUrl(DEFAULT_REDIS_URL)).toBe(DEFAULT_REDIS_URL);
  });
});

describe('throwawayArgs', () => {
  it('binds loopback on the given port and keeps nothing on disk', () => {
    const args = throwawayArgs(41234, '/tmp/x');
    const option = (name: string): string | undefined => args[args.indexOf(name) + 1];
    expect(option('--port')).toBe('41234');
    expect(option('--bind')).toBe('127.0.0.1');
    expect(option('--save')).toBe('');
    expect(option('--appendonly')).toBe('no');
    expect(option('--dir')).toBe('/tmp/x');
    expect(option('--daemonize')).toBe('no');
  });
});

describe('isRedisReply', () => {
  it('takes a status or error reply for Redis, anything else not', () => {
    expect(isRedisReply('+PONG\r\n')).toBe(true);
    expect(isRedisReply('-NOAUTH Authentication required.\r\n')).toBe(true);
    expect(isRedisReply('HTTP/1.1 400 Bad Request\r\n')).toBe(false);
    expect(isRedisReply('')).toBe(false);
  });
});

describe('freePort and redisAnswers', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(
      servers.splice(0).map(
        (s) =>
          new Promise<void>((resolve) =>
            s.close(() => {
              resolve();
            }),
          ),
      ),
    );
  });

  /** A local server that answers every connection's first bytes with `reply` (or never). */
  async function fake(reply: string | null): Promise<number> {
    const server = createServer((socket) => {
      socket.on('error', () => undefined);
      socket.once('data', () => {
        if (reply !== null) socket.end(reply);
      });
    });
    servers.push(server);
    const port = await freePort();
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    return port;
  }

  it('freePort gives a port that can be bound', async () => {
    const port = await freePort();
    expect(port).toBeGreaterThan(0);
    const server = createServer();
    servers.push(server);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
  });

  it('a PONG answers; silence, another protocol and a closed port do not', async () => {
    const at = (port: number) => ({ host: '127.0.0.1', port, tls: false });
    expect(await redisAnswers(at(await fake('+PONG\r\n')))).toBe(true);
    expect(await redisAnswers(at(await fake('HTTP/1.1 400 Bad Request\r\n\r\n')))).toBe(false);
    expect(await redisAnswers(at(await fake(null)), 100)).toBe(false);
    expect(await redisAnswers(at(await freePort()))).toBe(false);
  });
});
