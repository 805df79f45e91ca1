/**
 * API.md "Common": a known path asked with a method it does not take is 405
 * `METHOD_NOT_ALLOWED` with `Allow` listing the methods it takes (read from the route table:
 * `HEAD` wherever `GET` is), and API.md's error body; an unknown path stays 404. Where keys are
 * configured, a caller without a valid key gets 401 first, as for an unknown path.
 */
import { describe, expect, it } from 'vitest';
import { expectApiError, useTestServers, type ApiResponse } from '../support/server.js';

const servers = useTestServers('server-405');

/** Expects a 405 of `method` on `path` whose `Allow` (and `details.allowed`) is `allowed`. */
function expect405(res: ApiResponse, method: string, path: string, allowed: string[]): void {
  expectApiError(res, 405, 'METHOD_NOT_ALLOWED');
  expect(res.headers.get('allow'), `${method} ${path}`).toBe(allowed.join(', '));
  const { error } = res.body as { error: { message: string; details: unknown } };
  expect(error.details).toEqual({ method, allowed });
  expect(error.message).toContain(path);
  expect(error.message).toContain(method);
}

describe('405 METHOD_NOT_ALLOWED', () => {
  it('a known path with a wrong method is 405, Allow naming the methods the path takes; each of them is answered', async () => {
    const s = await servers.start();
    const run = await s.newRun();
    const stepId = await s.submit(run.run_id, { type: 'checkpoint', input: {} });
    const flow = (await s.api('GET', `/v1/flows/${run.flow_id}`)).body as { hash: string };
    const cases: [method: string, path: string, allowed: string[]][] = [
      ['DELETE', '/v1/flows', ['POST']],
      ['GET', '/v1/flows', ['POST']],
      ['PUT', `/v1/runs/${run.run_id}`, ['GET', 'HEAD']],
      ['GET', `/v1/runs/${run.run_id}/cancel`, ['POST']],
      ['GET', `/v1/runs/${run.run_id}/complete`, ['POST']],
      // Two routes on one path: the list of steps (GET) and a submission (POST).
      ['PUT', `/v1/runs/${run.run_id}/steps`, ['GET', 'HEAD', 'POST']],
      ['DELETE', `/v1/runs/${run.run_id}/facts`, ['GET', 'HEAD', 'POST']],
      ['PATCH', `/v1/steps/${stepId}`, ['GET', 'HEAD']],
      ['POST', `/v1/steps/${stepId}/stream`, ['GET', 'HEAD']],
      ['DELETE', `/v1/flows:by-hash/${flow.hash}`, ['GET', 'HEAD']],
      ['DELETE', '/v1/runs', ['GET', 'HEAD']],
      ['OPTIONS', '/v1/pools', ['GET', 'HEAD']],
      ['POST', '/healthz', ['GET', 'HEAD']],
      ['PUT', '/openapi.json', ['GET', 'HEAD']],
      ['POST', '/ui', ['GET', 'HEAD']],
      ['DELETE', '/ui', ['GET', 'HEAD']],
      ['POST', '/ui/', ['GET', 'HEAD']],
    ];
    for (const [method, path, allowed] of cases) {
      expect405(await s.api(method, path), method, path, allowed);
    }
    // The query is not part of the path.
    expect405(await s.api('PUT', `/v1/runs/${run.run_id}?x=1`), 'PUT', `/v1/runs/${run.run_id}`, [
      'GET',
      'HEAD',
    ]);
    // An id that names nothing still has a known path: its methods are the path's.
    expect405(await s.api('PUT', '/v1/runs/run_00000000'), 'PUT', '/v1/runs/run_00000000', [
      'GET',
      'HEAD',
    ]);
    // What Allow lists is answered (not 404 or 405).
    const listed = [
      await s.api('GET', `/v1/runs/${run.run_id}`),
      await s.api('HEAD', `/v1/runs/${run.run_id}`),
      await s.api('GET', `/v1/runs/${run.run_id}/steps`),
      await s.api('HEAD', '/healthz'),
      await s.api('GET', '/ui'),
      await s.api('POST', `/v1/runs/${run.run_id}/facts`, { type: 'a', data: {} }),
      await s.api('POST', `/v1/runs/${run.run_id}/complete`),
    ];
    expect(listed.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 201, 200]);
  });

  it('a HEAD of a POST-only path is 405 with Allow and no body', async () => {
    const s = await servers.start();
    const res = await s.api('HEAD', '/v1/flows');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    expect(res.text).toBe('');
  });

  it('an unknown path stays 404 NOT_FOUND, with no Allow, whatever the method', async () => {
    const s = await servers.start();
    const run = await s.newRun();
    for (const [method, path] of [
      ['GET', '/v1/nowhere'],
      ['DELETE', '/v1/nowhere'],
      ['GET', `/v1/runs/${run.run_id}/nothing`],
      ['PUT', `/v1/runs/${run.run_id}/facts/fact_0123`],
      ['GET', '/v1/flows/'],
      ['POST', '/ui/no/such/asset'],
    ] as const) {
      const res = await s.api(method, path);
      expectApiError(res, 404, 'NOT_FOUND');
      expect(res.headers.get('allow'), `${method} ${path}`).toBeNull();
    }
  });

  it('with keys: no valid key is 401 before any 405 (as for an unknown path); a valid key, even read-only, gets the 405', async () => {
    const writer = 'writer-key-0123456789abcdef';
    const reader = 'reader-key-0123456789abcdef';
    const s = await servers.start({
      server: {
        keys: [
          { key: writer, user_id: 'w' },
          { key: reader, user_id: 'r', permissions: ['read'] },
        ],
      },
    });
    for (const headers of [{}, { authorization: 'Bearer not-a-key-at-all-000000' }]) {
      for (const [method, path] of [
        ['DELETE', '/v1/flows'],
        ['GET', '/v1/runs/run_00000000/cancel'],
        ['POST', '/healthz'],
        ['POST', '/ui'],
        ['DELETE', '/v1/nowhere'],
      ] as const) {
        const res = await s.api(method, path, undefined, headers);
        expectApiError(res, 401, 'UNAUTHORIZED');
        expect(res.headers.get('allow')).toBeNull();
      }
    }
    for (const key of [writer, reader]) {
      const headers = { authorization: `Bearer ${key}` };
      expect405(await s.api('DELETE', '/v1/flows', undefined, headers), 'DELETE', '/v1/flows', [
        'POST',
      ]);
      expect405(await s.api('POST', '/healthz', undefined, headers), 'POST', '/healthz', [
        'GET',
        'HEAD',
      ]);
      expectApiError(await s.api('DELETE', '/v1/nowhere', undefined, headers), 404, 'NOT_FOUND');
    }
    // A route the key may not use is still 403, as before.
    expectApiError(
      await s.api('POST', '/v1/flows', { name: 'x' }, { authorization: `Bearer ${reader}` }),
      403,
      'FORBIDDEN',
    );
  });
});
