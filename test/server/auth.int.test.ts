/**
 * API.md "Auth" over real HTTP: `Authorization: Bearer <key>`, keys mapped to a `user_id` and
 * permissions; 401 without a valid key, 403 for a read-only key that writes, a caller sees
 * only its own runs, steps and facts (404 otherwise); without keys, only loopback.
 */
import { describe, expect, it } from 'vitest';
import { createServer } from '../../src/server/create-server.js';
import { exampleRuntime, expectApiError, parseSse, useTestServers } from '../support/server.js';
import { join } from 'node:path';

const servers = useTestServers('server-auth');

const KEYS = {
  alice: 'alice-key-0123456789abcdef',
  bob: 'bob-key-0123456789abcdefgh',
  reader: 'reader-key-0123456789abcdef',
  admin: 'admin-key-0123456789abcdefg',
};
const as = (who: keyof typeof KEYS): Record<string, string> => ({
  authorization: `Bearer ${KEYS[who]}`,
});

async function start() {
  return servers.start({
    server: {
      keys: [
        { key: KEYS.alice, user_id: 'alice' },
        { key: KEYS.bob, user_id: 'bob' },
        { key: KEYS.reader, user_id: 'reader', permissions: ['read'] },
        { key: KEYS.admin, user_id: 'ops', permissions: ['read', 'write', 'admin'] },
      ],
    },
  });
}

describe('API keys', () => {
  it('a request without a key, or with a key that is not valid, gets 401 UNAUTHORIZED with the error body', async () => {
    const s = await start();
    const run = await s.newRun({}, as('alice'));
    for (const headers of [
      {},
      { authorization: 'Bearer not-a-key-at-all-000000' },
      { authorization: `Basic ${KEYS.alice}` },
      { authorization: `Bearer ${KEYS.alice}x` },
      { authorization: 'Bearer' },
    ]) {
      for (const [method, path] of [
        ['GET', `/v1/runs/${run.run_id}`],
        ['POST', '/v1/flows'],
        ['GET', '/v1/pools'],
        ['GET', '/v1/nowhere'],
      ] as const) {
        const res = await s.api(
          method,
          path,
          method === 'POST' ? { name: 'x' } : undefined,
          headers,
        );
        expectApiError(res, 401, 'UNAUTHORIZED');
      }
    }
    // The liveness and the API document need no key; the metrics do (test/security/).
    expect((await s.api('GET', '/healthz')).status).toBe(200);
    expect((await s.api('GET', '/openapi.json')).status).toBe(200);
    expectApiError(await s.api('GET', '/metrics'), 401, 'UNAUTHORIZED');
  });

  it("a caller sees only its own runs, steps, facts, checkpoints and streams: another's are 404, as if they did not exist", async () => {
    const s = await start();
    const run = await s.newRun({}, as('alice'));
    expect(run).not.toHaveProperty('user_id');
    const stepId = await s.submit(run.run_id, { type: 'checkpoint', input: {} }, as('alice'));
    await s.streamText(stepId, as('alice'));
    expect(
      (await s.api('POST', `/v1/runs/${run.run_id}/facts`, { type: 'a', data: 1 }, as('alice')))
        .status,
    ).toBe(201);

    const paths: [string, string, unknown?][] = [
      ['GET', `/v1/runs/${run.run_id}`],
      ['GET', `/v1/steps/${stepId}`],
      ['GET', `/v1/steps/${stepId}/stream`],
      ['GET', `/v1/runs/${run.run_id}/facts`],
      ['GET', `/v1/runs/${run.run_id}/checkpoints`],
      ['POST', `/v1/runs/${run.run_id}/facts`, { type: 'b', data: 2 }],
      ['POST', `/v1/runs/${run.run_id}/steps`, { type: 'checkpoint', input: {} }],
      ['POST', `/v1/runs/${run.run_id}/checkpoint`],
      ['POST', `/v1/runs/${run.run_id}/cancel`],
      ['POST', `/v1/runs/${run.run_id}/complete`],
      ['POST', `/v1/steps/${stepId}/cancel`],
    ];
    for (const [method, path, body] of paths) {
      const res = await s.api(method, path, body, as('bob'));
      expectApiError(res, 404, 'NOT_FOUND');
      // The same answer as for an id that does not exist.
      const nothing = await s.api(
        method,
        path.replace(run.run_id, 'run_nope').replace(stepId, 'step_nope'),
        body,
        as('bob'),
      );
      expect(nothing.status).toBe(404);
    }
    // Nothing bob tried changed alice's run.
    expect(
      (await s.api('GET', `/v1/runs/${run.run_id}/facts`, undefined, as('alice'))).body,
    ).toHaveLength(1);
    expect(
      (await s.api('GET', `/v1/runs/${run.run_id}`, undefined, as('alice'))).body,
    ).toMatchObject({ status: 'running' });
    // An admin key sees every run.
    expect((await s.api('GET', `/v1/runs/${run.run_id}`, undefined, as('admin'))).status).toBe(200);
    expect(parseSse(await s.streamText(stepId, as('admin'))).frames.at(-1)?.event).toBe('end');
    // Flows are shared content (by hash): anyone with a key may read one.
    expect((await s.api('GET', `/v1/flows/${run.flow_id}`, undefined, as('bob'))).status).toBe(200);
  });

  it('a read-only key may GET but gets 403 FORBIDDEN on every POST', async () => {
    const s = await start();
    const run = await s.newRun({}, as('alice'));
    expect((await s.api('GET', '/v1/pools', undefined, as('reader'))).status).toBe(200);
    expect((await s.api('GET', `/v1/flows/${run.flow_id}`, undefined, as('reader'))).status).toBe(
      200,
    );
    for (const [path, body] of [
      ['/v1/flows', { name: 'x' }],
      [`/v1/flows/${run.flow_id}/runs`, {}],
      [`/v1/runs/${run.run_id}/steps`, { type: 'checkpoint', input: {} }],
      [`/v1/runs/${run.run_id}/facts`, { type: 'a', data: 1 }],
      ['/v1/pools/provision', {}],
    ] as const) {
      expectApiError(await s.api('POST', path, body, as('reader')), 403, 'FORBIDDEN');
    }
    // A key that may write, and provisioning: 501 while no provisioner is configured.
    expectApiError(
      await s.api('POST', '/v1/pools/provision', {}, as('alice')),
      501,
      'NOT_IMPLEMENTED',
    );
  });

  it('without keys the server listens on loopback only: a non-loopback host is refused at start; with keys it is allowed', async () => {
    const dir = servers.folder();
    const runtime = exampleRuntime(join(dir, 'axon.db'), dir);
    for (const host of ['0.0.0.0', '::', '192.0.2.10']) {
      await expect(createServer(runtime, { port: 0, host })).rejects.toThrow(RangeError);
    }
    // Refused before anything started: the runtime is still the caller's, and works.
    const { flow } = await runtime.createFlow({ name: 'still-open' });
    expect(flow.flow_id).toEqual(expect.any(String));
    const open = await createServer(runtime, {
      port: 0,
      host: '0.0.0.0',
      keys: [{ key: KEYS.alice, user_id: 'alice' }],
    });
    try {
      const port = new URL(open.url).port;
      const res = await fetch(`http://127.0.0.1:${port}/v1/pools`, { headers: as('alice') });
      expect(res.status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${port}/v1/pools`)).status).toBe(401);
    } finally {
      await open.close();
    }
    // Every caller is `anonymous` without keys: no header needed.
    const anon = await servers.start();
    expect((await anon.api('POST', '/v1/flows', { name: 'x' })).status).toBe(201);
  });
});
