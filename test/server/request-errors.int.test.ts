/**
 * What no client may do to `axon serve` (API.md, "Common"): malformed JSON, invalid UTF-8, a
 * wrong content type, unknown fields, a body or headers past the limit, undecodable URLs —
 * each answered with API.md's error body and its `correlation_id`, never a crash; the 429s
 * (`RATE_LIMITED`, `QUEUE_FULL`) with `Retry-After`; `X-Correlation-Id`; and a close that
 * drains (503 for new steps) and is not held up by a client that stopped reading.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunStore } from '../../src/store/run-store.js';
import {
  curl,
  expectApiError,
  expectErrorBody,
  parseSse,
  useTestServers,
  type ApiResponse,
  type TestServer,
  POLL,
  sseClients,
  testStore,
} from '../support/server.js';

const servers = useTestServers('server-errors');

/** Sends `raw` on a socket and resolves with everything the server answers before closing. */
function rawExchange(url: string, raw: string | Buffer): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (answer += d));
    socket.on('error', (err) => {
      if (answer === '') reject(err);
      else resolve(answer);
    });
    socket.on('close', () => {
      resolve(answer);
    });
    socket.write(raw);
  });
}

/** The status and JSON body of a raw HTTP answer. */
function parseRaw(answer: string): { status: number; headers: string; body: unknown } {
  const [head = '', body = ''] = answer.split('\r\n\r\n');
  return {
    status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]),
    headers: head,
    body: JSON.parse(body),
  };
}

/** `store` with every call answered after a `setImmediate`, like a store over the network. */
function withLatency(store: RunStore): RunStore {
  return new Proxy(store, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]): unknown => {
        const result: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (!(result instanceof Promise)) return result;
        return result.then(
          (v: unknown) =>
            new Promise((resolve) =>
              setImmediate(() => {
                resolve(v);
              }),
            ),
        );
      };
    },
  });
}

/** Every POST route of API.md, made real on a run and a step of `s`. */
async function postRoutes(s: TestServer): Promise<string[]> {
  const run = await s.newRun();
  const stepId = await s.submit(run.run_id, { type: 'checkpoint', input: {} });
  return [
    '/v1/flows',
    `/v1/flows/${run.flow_id}/runs`,
    `/v1/runs/${run.run_id}/steps`,
    `/v1/runs/${run.run_id}/facts`,
    `/v1/runs/${run.run_id}/checkpoint`,
    `/v1/runs/${run.run_id}/cancel`,
    `/v1/runs/${run.run_id}/complete`,
    `/v1/steps/${stepId}/cancel`,
  ];
}

describe('X-Correlation-Id', () => {
  it('is echoed on every response when given, and made (and returned) when absent; an error body carries the same id', async () => {
    const s = await servers.start();
    const given = `corr-${randomUUID()}`;
    for (const [method, path] of [
      ['GET', '/healthz'],
      ['GET', '/metrics'],
      ['GET', '/openapi.json'],
      ['GET', '/v1/pools'],
      ['GET', '/v1/runs/run_nope'],
      ['POST', '/v1/nowhere'],
    ] as const) {
      const echoed = await s.api(method, path, undefined, { 'x-correlation-id': given });
      expect(echoed.headers.get('x-correlation-id'), path).toBe(given);
      const made = await s.api(method, path);
      const id = made.headers.get('x-correlation-id');
      expect(id, path).toMatch(/^[0-9a-f-]{36}$/);
      if (made.status >= 400)
        expect((made.body as { correlation_id: string }).correlation_id).toBe(id);
    }
    const err = await s.api('GET', '/v1/runs/run_nope', undefined, { 'x-correlation-id': given });
    expect((err.body as { correlation_id: string }).correlation_id).toBe(given);
    // A value that is not a plain token is not echoed back: a new id is made.
    const odd = await s.api('GET', '/healthz', undefined, {
      'x-correlation-id': 'a b'.repeat(100),
    });
    expect(odd.headers.get('x-correlation-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('bodies: 400, 413, 415 with the error body, never a crash', () => {
  it('malformed JSON is 400 INVALID_PARAMS on every POST route', async () => {
    const s = await servers.start();
    for (const path of await postRoutes(s)) {
      for (const text of ['{', '{"a":}', '[1,', 'nul', '{"a":1}}', "{'a':1}"]) {
        expectApiError(
          await s.api('POST', path, text, { 'content-type': 'application/json' }),
          400,
          'INVALID_PARAMS',
        );
      }
    }
    // The same from curl.
    const fromCurl = await curl([
      '-i',
      '-H',
      'Content-Type: application/json',
      '--data-binary',
      '{"name": "x",',
      `${s.url}/v1/flows`,
    ]);
    expect(fromCurl.stdout).toMatch(/^HTTP\/1.1 400/);
    expectErrorBody(JSON.parse(fromCurl.stdout.split('\r\n\r\n')[1] ?? ''), 'INVALID_PARAMS');
    expect((await s.api('GET', '/healthz')).status).toBe(200);
  });

  it('invalid UTF-8, and a __proto__ or constructor.prototype key, are 400 INVALID_PARAMS', async () => {
    const s = await servers.start();
    const run = await s.newRun();
    const path = `/v1/runs/${run.run_id}/facts`;
    for (const bytes of [
      Buffer.from([0x7b, 0x22, 0x74, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]),
      Buffer.from([0xff, 0xfe, 0x7b, 0x7d]),
      Buffer.concat([
        Buffer.from('{"type":"a","data":"'),
        Buffer.from([0xed, 0xa0, 0x80]),
        Buffer.from('"}'),
      ]),
    ]) {
      expectApiError(
        await s.api('POST', path, bytes, { 'content-type': 'application/json' }),
        400,
        'INVALID_PARAMS',
      );
    }
    for (const text of [
      '{"type":"a","data":{"__proto__":{"admin":true}}}',
      '{"type":"a","data":{"constructor":{"prototype":{"admin":true}}}}',
      '{"type":"a","data":{"\\u005f_proto__":{}}}',
      '{"type":"a","data":{"\\u0063onstructor":{"prototype":{"admin":true}}}}',
      '{"type":"a","data":{"constructor":{"\\u0070rototype":{"admin":true}}}}',
    ]) {
      expectApiError(
        await s.api('POST', path, text, { 'content-type': 'application/json' }),
        400,
        'INVALID_PARAMS',
      );
    }
    expect(({} as Record<string, unknown>)['admin']).toBeUndefined();
    expect((await s.api('GET', path)).body).toEqual([]);
  });

  it('a body that is not application/json is 415', async () => {
    const s = await servers.start();
    const body = JSON.stringify({ name: 'x' });
    for (const type of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/xml',
    ]) {
      expectApiError(
        await s.api('POST', '/v1/flows', body, { 'content-type': type }),
        415,
        'INVALID_PARAMS',
      );
    }
    // No content type at all, with a body.
    const none = await curl([
      '-i',
      '-X',
      'POST',
      '-H',
      'Content-Type:',
      '--data-binary',
      body,
      `${s.url}/v1/flows`,
    ]);
    expect(none.stdout).toMatch(/^HTTP\/1.1 415/);
    expectErrorBody(JSON.parse(none.stdout.split('\r\n\r\n')[1] ?? ''), 'INVALID_PARAMS');
    // JSON with a charset is JSON.
    expect(
      (
        await s.api('POST', '/v1/flows', body, {
          'content-type': 'application/json; charset=utf-8',
        })
      ).status,
    ).toBe(201);
  });

  it('unknown fields are 400 INVALID_PARAMS naming them, on every body and the facts query', async () => {
    const s = await servers.start();
    const run = await s.newRun();
    const cases: [string, unknown][] = [
      ['/v1/flows', { name: 'x', colour: 'red' }],
      [`/v1/flows/${run.flow_id}/runs`, { seed: 1, sneaky: true }],
      [`/v1/flows/${run.flow_id}/runs`, { budgets: { max_tokens: 5 } }],
      [`/v1/runs/${run.run_id}/steps`, { type: 'checkpoint', input: {}, priority: 1 }],
      [
        `/v1/runs/${run.run_id}/steps`,
        { type: 'tool_call', input: { tool: 'add', args: {}, retry: 3 } },
      ],
      [`/v1/runs/${run.run_id}/facts`, { type: 'a', data: 1, owner: 'me' }],
      [`/v1/runs/${run.run_id}/checkpoint`, { label: 'l', extra: 1 }],
      [`/v1/runs/${run.run_id}/cancel`, { force: true }],
      [`/v1/runs/${run.run_id}/complete`, { force: true }],
    ];
    for (const [path, body] of cases) {
      const res = await s.api('POST', path, body);
      // A step's own input is checked when it is claimed: 422 for a step type's input.
      if (res.status === 422) expectApiError(res, 422, 'SCHEMA_VIOLATION');
      else expectApiError(res, 400, 'INVALID_PARAMS');
    }
    expectApiError(
      await s.api('GET', `/v1/runs/${run.run_id}/facts?colour=red`),
      400,
      'INVALID_PARAMS',
    );
    // None of them did anything: the run is still running, with no facts.
    expect((await s.api('GET', `/v1/runs/${run.run_id}`)).body).toMatchObject({
      status: 'running',
    });
    expect((await s.api('GET', `/v1/runs/${run.run_id}/facts`)).body).toEqual([]);
  });

  it('a body over the configured limit is 413 PAYLOAD_TOO_LARGE, by content-length or chunked, and the server goes on', async () => {
    const s = await servers.start({ server: { bodyLimitBytes: 4096 } });
    const big = JSON.stringify({ name: 'x'.repeat(5000) });
    expectApiError(
      await s.api('POST', '/v1/flows', { name: 'x'.repeat(5000) }),
      413,
      'PAYLOAD_TOO_LARGE',
    );
    // Chunked, with no content-length: the limit still holds.
    const chunked = await curl([
      '-i',
      '-H',
      'Content-Type: application/json',
      '-H',
      'Transfer-Encoding: chunked',
      '--data-binary',
      big,
      `${s.url}/v1/flows`,
    ]);
    expect(chunked.stdout).toMatch(/^HTTP\/1.1 413/);
    // Far past it (8 MiB, from a file).
    const file = join(servers.folder(), 'big.json');
    writeFileSync(file, JSON.stringify({ name: 'y'.repeat(8 * 1024 * 1024) }));
    const huge = await curl([
      '-i',
      '-H',
      'Content-Type: application/json',
      '-H',
      'Expect:',
      '--data-binary',
      `@${file}`,
      `${s.url}/v1/flows`,
    ]);
    expect(huge.stdout).toMatch(/^HTTP\/1.1 413/);
    expectErrorBody(JSON.parse(huge.stdout.split('\r\n\r\n')[1] ?? ''), 'PAYLOAD_TOO_LARGE');
    // Just under the limit is fine.
    expect((await s.api('POST', '/v1/flows', { name: 'x', ast: 'y'.repeat(3000) })).status).toBe(
      201,
    );
  });
});

describe('URLs and requests the router or the HTTP parser refuses', () => {
  it('unknown routes are 404, a known path with a wrong method 405; an undecodable URL 400; an overlong id 404; all with the error body', async () => {
    const s = await servers.start();
    expectApiError(await s.api('GET', '/v1/nowhere'), 404, 'NOT_FOUND');
    // More of 405 in method-not-allowed.int.test.ts.
    expectApiError(await s.api('DELETE', '/v1/flows'), 405, 'METHOD_NOT_ALLOWED');
    expectApiError(await s.api('PUT', '/healthz'), 405, 'METHOD_NOT_ALLOWED');
    expectApiError(await s.api('GET', '/v1/runs/%E0%A4%A'), 400, 'INVALID_PARAMS');
    expectApiError(await s.api('GET', '/v1/steps/%ZZ/stream'), 400, 'INVALID_PARAMS');
    expectApiError(await s.api('GET', `/v1/runs/${'r'.repeat(500)}`), 404, 'NOT_FOUND');
    expectApiError(await s.api('GET', `/v1/runs/run_nope`), 404, 'NOT_FOUND');
    // A GET with a body: the body is ignored.
    const withBody = await curl([
      '-s',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      '-X',
      'GET',
      '-H',
      'Content-Type: text/plain',
      '-d',
      'x',
      `${s.url}/v1/pools`,
    ]);
    expect(withBody.stdout).toBe('200');
  });

  it("requests Node's HTTP parser refuses get the error body too: headers past the limit 413, a broken request 400", async () => {
    const s = await servers.start();
    const overflow = parseRaw(
      await rawExchange(
        s.url,
        `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      ),
    );
    expect(overflow.status).toBe(413);
    expectErrorBody(overflow.body, 'PAYLOAD_TOO_LARGE');
    expect(overflow.headers).toMatch(/^x-correlation-id: /im);
    const broken = parseRaw(await rawExchange(s.url, 'THIS IS NOT HTTP\r\n\r\n'));
    expect(broken.status).toBe(400);
    expectErrorBody(broken.body, 'INVALID_PARAMS');
    const badLength = parseRaw(
      await rawExchange(s.url, 'POST /v1/flows HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n'),
    );
    expect(badLength.status).toBe(400);
    expect((await s.api('GET', '/healthz')).status).toBe(200);
  });
});

describe('429 with Retry-After', () => {
  const expect429 = (res: ApiResponse, code: string): void => {
    expectApiError(res, 429, code);
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter) && retryAfter >= 1).toBe(true);
    const ms = (res.body as { error: { details: { retry_after_ms: number } } }).error.details
      .retry_after_ms;
    expect(ms).toBeGreaterThan(0);
    expect(retryAfter).toBe(Math.ceil(ms / 1000));
  };

  it("step submissions past the run's policy.steps_per_minute get 429 RATE_LIMITED", async () => {
    const s = await servers.start();
    const run = await s.newRun({ policy: { steps_per_minute: 2 } });
    const step = { type: 'checkpoint', input: {} };
    expect((await s.api('POST', `/v1/runs/${run.run_id}/steps`, step)).status).toBe(201);
    expect((await s.api('POST', `/v1/runs/${run.run_id}/steps`, step)).status).toBe(201);
    expect429(await s.api('POST', `/v1/runs/${run.run_id}/steps`, step), 'RATE_LIMITED');
    // Another run has its own count.
    const other = await s.newRun({ policy: { steps_per_minute: 2 } });
    expect((await s.api('POST', `/v1/runs/${other.run_id}/steps`, step)).status).toBe(201);
  });

  it('a run with maxStepsPerRun steps running gets 429 QUEUE_FULL for more, and takes them again once one ends', async () => {
    const s = await servers.start({ server: { maxStepsPerRun: 2 } });
    const run = await s.newRun();
    const gate = { type: 'gate_eval', input: { fact_type: 'never', wait_ms: 600_000 } };
    const first = await s.submit(run.run_id, gate);
    await s.submit(run.run_id, gate);
    expect429(await s.api('POST', `/v1/runs/${run.run_id}/steps`, gate), 'QUEUE_FULL');
    await s.api('POST', `/v1/steps/${first}/cancel`);
    await expect
      .poll(
        async () =>
          (await s.api('POST', `/v1/runs/${run.run_id}/steps`, { type: 'checkpoint', input: {} }))
            .status,
        POLL,
      )
      .toBe(201);
  });

  it('regression: concurrent submissions cannot pass maxStepsPerRun together (the slot is taken before the submission is awaited)', async () => {
    // A store that answers a turn of the event loop later, as a networked one (Redis) does:
    // submissions then overlap, and each must see the slots the others took.
    const folder = servers.folder();
    const store = withLatency(testStore(join(folder, 'axon.db')));
    const s = await servers.start({
      dataDir: folder,
      runtime: { store },
      server: { maxStepsPerRun: 3 },
    });
    const run = await s.newRun();
    const gate = { type: 'gate_eval', input: { fact_type: 'never', wait_ms: 600_000 } };
    const all = await Promise.all(
      Array.from({ length: 12 }, () => s.api('POST', `/v1/runs/${run.run_id}/steps`, gate)),
    );
    expect(all.filter((r) => r.status === 201)).toHaveLength(3);
    for (const r of all.filter((x) => x.status !== 201)) expectApiError(r, 429, 'QUEUE_FULL');
  });
});

describe('closing', () => {
  it('while draining, new steps get 503 POOL_UNAVAILABLE and reads still work; the running step ends, then the server is gone', async () => {
    const s = await servers.start({ server: { drainMs: 30_000 } });
    const run = await s.newRun();
    const stepId = await s.submit(run.run_id, {
      type: 'gate_eval',
      input: { fact_type: 'go', wait_ms: 600_000 },
    });
    const stream = s.streamText(stepId);
    const closed = s.close();
    expectApiError(
      await s.api('POST', `/v1/runs/${run.run_id}/steps`, { type: 'checkpoint', input: {} }),
      503,
      'POOL_UNAVAILABLE',
    );
    expect((await s.api('GET', `/v1/runs/${run.run_id}`)).status).toBe(200);
    expect(
      (await s.api('POST', `/v1/runs/${run.run_id}/facts`, { type: 'go', data: {} })).status,
    ).toBe(201);
    expect(parseSse(await stream).frames.at(-1)).toMatchObject({
      event: 'end',
      data: { output: { passed: true } },
    });
    await closed;
    await expect(fetch(`${s.url}/healthz`)).rejects.toThrow();
  });

  it('regression: close is not held up by a stream whose client never reads, and a step left running is cancelled, its run still running', async () => {
    const dataDir = servers.folder();
    const s = await servers.start({ dataDir, server: { drainMs: 50 } });
    const run = await s.newRun();
    const stepId = await s.submit(run.run_id, {
      type: 'llm_call',
      input: { messages: [{ role: 'user', content: 'x' }], params: { max_tokens: 1_000_000 } },
    });
    const { hostname, port } = new URL(s.url);
    const socket = net.connect(Number(port), hostname);
    socket.write(`GET /v1/steps/${stepId}/stream HTTP/1.1\r\nHost: ${hostname}:${port}\r\n\r\n`);
    socket.pause();
    await expect.poll(() => sseClients(s.url), POLL).toBe('1');
    const closedSocket = new Promise((resolve) => socket.on('close', resolve));
    socket.on('error', () => undefined);
    await s.close();
    // The server cut the connection: the client sees it once it reads again.
    socket.resume();
    await closedSocket;
    // On the same store, a new server: the step was cancelled, its run was not.
    const again = await servers.start({ dataDir });
    expect((await again.api('GET', `/v1/steps/${stepId}`)).body).toMatchObject({
      status: 'cancelled',
    });
    expect((await again.api('GET', `/v1/runs/${run.run_id}`)).body).toMatchObject({
      status: 'running',
    });
  });
});
