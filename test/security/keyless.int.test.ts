/**
 * A server without keys against DNS rebinding (docs/security.md, "The network"): it listens
 * on loopback only, and answers only requests whose `Host` is a loopback name or address —
 * a page that rebound its own name to 127.0.0.1 gets 403 and learns nothing.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/logger.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { createServer } from '../../src/server/create-server.js';
import { spawnAxon, type FleetProcess } from '../support/axon-process.js';
import { clearRedisPrefix, redisUrl } from '../support/redis.js';
import { withHost } from './targets.js';

describe.each(['sqlite', 'fleet'] as const)('a server without keys, on %s', (kind) => {
  const dir = mkdtempSync(join(tmpdir(), 'axon-security-keyless-'));
  const prefix = `axon-test:security:keyless:${process.pid}:`;
  const spawned: FleetProcess[] = [];
  let url = '';
  beforeAll(async () => {
    const config = join(dir, 'axon.yaml');
    writeFileSync(
      config,
      kind === 'fleet' ? `redis:\n  url: ${redisUrl()}\n  prefix: "${prefix}"\n` : '{}\n',
    );
    const { match } = await spawnAxon(
      ['serve', '--port', '0', '--data-dir', join(dir, 'data'), '--config', config],
      {},
      /listening on (http:\/\/\S+) /,
      spawned,
    );
    url = match[1] as string;
  });
  afterAll(async () => {
    for (const p of spawned) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await Promise.all(spawned.map((p) => p.exited));
    if (kind === 'fleet') await clearRedisPrefix(prefix);
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers a foreign Host with 403 FORBIDDEN saying why, on every route, reads and writes alike', async () => {
    const port = new URL(url).port;
    for (const host of ['attacker.example', `attacker.example:${port}`, `10.0.0.7:${port}`]) {
      for (const [method, path] of [
        ['GET', '/v1/runs'],
        ['GET', '/v1/pools'],
        ['POST', '/v1/flows'],
        ['GET', '/metrics'],
        ['GET', '/ui'],
      ] as const) {
        const res = await withHost(url, method, path, host);
        expect(res.status, `${method} ${path} with Host ${host}`).toBe(403);
        expect(res.body).toMatchObject({
          error: {
            code: 'FORBIDDEN',
            message: expect.stringContaining('DNS rebinding') as unknown,
            details: { host, reason: 'host_not_allowed' },
          },
        });
      }
    }
    // No Host at all: Node refuses an HTTP/1.1 request without one before axon sees it.
    expect((await withHost(url, 'GET', '/v1/runs', null)).status).toBe(400);
  });

  it('answers the loopback names, with or without a port', async () => {
    const port = new URL(url).port;
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, 'localhost']) {
      expect((await withHost(url, 'GET', '/v1/pools', host)).status, host).toBe(200);
    }
    expect((await withHost(url, 'POST', '/v1/flows', `LOCALHOST:${port}`)).status).toBe(201);
  });
});

describe("createServer's Host and stream options", () => {
  const quiet = () => createRuntime({ logger: createLogger({ level: 'silent' }) });

  it('without keys, answers the names allowedHosts adds besides the loopback ones', async () => {
    const server = await createServer(quiet(), { port: 0, allowedHosts: ['axon.local:7070'] });
    try {
      expect((await withHost(server.url, 'GET', '/healthz', 'axon.local:7070')).status).toBe(200);
      expect((await withHost(server.url, 'GET', '/healthz', 'axon.local:7071')).status).toBe(403);
      expect((await withHost(server.url, 'GET', '/healthz', 'localhost')).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('refuses an allowed host that is not a host name, and stream bounds that are not whole numbers > 0', async () => {
    for (const bad of ['http://x.example', 'x.example/path', '', 'a b']) {
      const runtime = quiet();
      await expect(createServer(runtime, { port: 0, allowedHosts: [bad] })).rejects.toThrow(
        new TypeError(
          `createServer: allowedHosts: ${JSON.stringify(bad)} is not a host name or address (with an optional :port)`,
        ),
      );
      await runtime.close();
    }
    for (const options of [{ maxStreams: 0 }, { maxStreamsPerUser: 1.5 }]) {
      const runtime = quiet();
      await expect(createServer(runtime, { port: 0, ...options })).rejects.toThrow(
        /^createServer: maxStreams(PerUser)? must be a whole number > 0/,
      );
      await runtime.close();
    }
  });
});
