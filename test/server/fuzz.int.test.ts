/**
 * Fuzzing `axon serve` with a fixed seed: hundreds of requests with malformed JSON, wrong
 * types, huge bodies, invalid UTF-8, unknown ids and fields, random paths, methods and
 * content types, and random SSE connects and reconnects with random `Last-Event-ID`s and
 * abrupt aborts (the socket destroyed mid-stream). Every answer must be a 2xx or API.md's
 * error body with a status from API.md's list; afterwards `/healthz` still answers, no stream
 * is left open, and nothing reached `unhandledRejection` or `uncaughtException`.
 */
import http from 'node:http';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSeededRandom } from '../../src/context/seeded-random.js';
import { watchUnexpectedErrors } from '../support/unexpected-errors.js';
import {
  API_ERROR_CODES,
  API_ERROR_STATUSES,
  parseSse,
  useTestServers,
  type TestServer,
  POLL,
  sseClients,
} from '../support/server.js';

const servers = useTestServers('server-fuzz');
const SEED = 0x5eed_0018;
const BODY_LIMIT = 64 * 1024;

/** One answer, as far as the client read it. */
interface Answer {
  readonly status: number | null;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
  /** What the fuzzer sent, to name a failure. */
  readonly what: string;
}

/** Sends one request with `http.request` (any method, any bytes); never rejects. */
function send(
  url: string,
  method: string,
  path: string,
  body: Buffer | null,
  headers: Record<string, string>,
): Promise<Answer> {
  const what = `${method} ${path.slice(0, 120)} ${JSON.stringify(headers)} body ${body?.length ?? 0}B`;
  return new Promise((resolve) => {
    const req = http.request(`${url}${path}`, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        resolve({
          status: res.statusCode ?? null,
          headers: res.headers,
          body: Buffer.concat(chunks),
          what,
        });
      });
      res.on('error', () => {
        resolve({
          status: res.statusCode ?? null,
          headers: res.headers,
          body: Buffer.concat(chunks),
          what,
        });
      });
    });
    // The server may answer (413) and close before a huge body is sent: not a failure.
    req.on('error', () => {
      resolve({ status: null, headers: {}, body: Buffer.alloc(0), what });
    });
    if (body) req.end(body);
    else req.end();
  });
}

/** Checks an answer: a 2xx, or API.md's error body with a listed status. */
function checkAnswer(a: Answer, method: string): void {
  if (a.status === null) return;
  if (a.status >= 200 && a.status < 300) return;
  expect(API_ERROR_STATUSES, a.what).toContain(a.status);
  if (method === 'HEAD') return;
  expect(a.headers['content-type'], a.what).toMatch(/^application\/json/);
  const body = JSON.parse(a.body.toString('utf8')) as {
    error: { code: string; message: string; details: unknown };
    correlation_id: string;
  };
  expect(Object.keys(body).sort(), a.what).toEqual(['correlation_id', 'error']);
  expect(Object.keys(body.error).sort(), a.what).toEqual(['code', 'details', 'message']);
  expect(API_ERROR_CODES, a.what).toContain(body.error.code);
  expect(typeof body.error.message, a.what).toBe('string');
  expect(typeof body.error.details, a.what).toBe('object');
  expect(body.correlation_id, a.what).toBe(a.headers['x-correlation-id']);
}

/** Random choices, all from one seed. */
function chooser(seed: number) {
  const rand = createSeededRandom(seed);
  const int = (n: number): number => Math.floor(rand() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)] as T;
  const values = fc.sample(fc.jsonValue({ maxDepth: 4 }), { seed, numRuns: 400 });
  const keys = fc.sample(fc.string({ maxLength: 12 }), { seed: seed + 1, numRuns: 100 });
  return { rand, int, pick, value: (): unknown => pick(values), key: (): string => pick(keys) };
}

type Choose = ReturnType<typeof chooser>;

/** Valid bodies of each POST route: the fuzzer breaks them. */
function templates(ids: Ids): [string, Record<string, unknown>][] {
  return [
    [
      '/v1/flows',
      {
        name: 'fz',
        ast: { a: 1 },
        tools: [{ name: 't', description: 'd', parameters: { type: 'object' } }],
        config: {},
        labels: {},
      },
    ],
    [
      `/v1/flows/${ids.flow}/runs`,
      {
        mode: 'record',
        seed: 1,
        budgets: { max_tokens_out: 100 },
        policy: {},
        cancel_on_disconnect: false,
      },
    ],
    [`/v1/runs/${ids.run}/steps`, { type: 'checkpoint', client_token: 'x', input: { label: 'l' } }],
    [
      `/v1/runs/${ids.run}/steps`,
      { type: 'tool_call', input: { tool: 'add', args: { a: 1, b: 2 } } },
    ],
    [
      `/v1/runs/${ids.run}/steps`,
      {
        type: 'llm_call',
        input: { messages: [{ role: 'user', content: 'x' }], params: { max_tokens: 3 } },
      },
    ],
    [`/v1/runs/${ids.run}/steps`, { type: 'gate_eval', input: { fact_type: 'f', wait_ms: 5 } }],
    [`/v1/runs/${ids.run}/facts`, { type: 'f', data: { n: 1 } }],
    [`/v1/runs/${ids.run}/checkpoint`, { label: 'c' }],
    [`/v1/steps/${ids.ended}/cancel`, {}],
    ['/v1/pools/provision', {}],
  ];
}

/** The ids of real things on the server, for paths that are not all unknown. */
interface Ids {
  readonly flow: string;
  readonly run: string;
  readonly ended: string;
  readonly live: string;
}

/** Sets a random field of `body` (at some depth) to a random value. */
function mutate(c: Choose, body: Record<string, unknown>): unknown {
  const copy = structuredClone(body);
  let at: Record<string, unknown> = copy;
  for (let depth = 0; depth < 3; depth++) {
    const keys = Object.keys(at);
    const key = keys.length > 0 && c.rand() < 0.8 ? c.pick(keys) : c.key();
    const next = at[key];
    if (next !== null && typeof next === 'object' && !Array.isArray(next) && c.rand() < 0.5) {
      at = next as Record<string, unknown>;
      continue;
    }
    at[key] = c.value();
    break;
  }
  return copy;
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];
const SEGMENTS = [
  'v1',
  'flows',
  'runs',
  'steps',
  'facts',
  'stream',
  'cancel',
  'pools',
  'local',
  'flows:by-hash',
  'checkpoint',
  'checkpoints',
  'provision',
  'complete',
  'healthz',
  'metrics',
  '..',
  '.',
  '%00',
  '%E0%A4%A',
  '%ZZ',
  '%2F',
  'x'.repeat(300),
  '~',
  '🙂',
];
const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/octet-stream',
  'multipart/form-data; boundary=zz',
  'application/jsonx',
  '',
  'application/json; charset=latin1',
];

/** One random request of the fuzzer. */
function randomRequest(
  c: Choose,
  ids: Ids,
): { method: string; path: string; body: Buffer | null; headers: Record<string, string> } {
  const [path, template] = c.pick(templates(ids));
  const json = { 'content-type': 'application/json' };
  switch (c.int(10)) {
    case 0: // a random JSON value as the body
      return {
        method: 'POST',
        path,
        body: Buffer.from(JSON.stringify(c.value())),
        headers: json,
      };
    case 1: {
      // malformed JSON: a valid body cut short, or with a byte changed
      const text = JSON.stringify(template);
      const cut =
        c.rand() < 0.5
          ? text.slice(0, c.int(text.length))
          : text.slice(0, c.int(text.length)) +
            c.pick(['}', '{', ',', '"', ':', '\\', ']']) +
            text.slice(c.int(text.length));
      return { method: 'POST', path, body: Buffer.from(cut), headers: json };
    }
    case 2: // wrong types somewhere in a valid body
      return {
        method: 'POST',
        path,
        body: Buffer.from(JSON.stringify(mutate(c, template))),
        headers: json,
      };
    case 3: {
      // a huge body: just past the limit, or far past it
      const size = c.rand() < 0.7 ? BODY_LIMIT + 1 + c.int(1024) : 2 * 1024 * 1024;
      return {
        method: 'POST',
        path,
        body: Buffer.from(JSON.stringify({ name: 'x'.repeat(size) })),
        headers: json,
      };
    }
    case 4: {
      // invalid UTF-8 inside a JSON string
      const bad = Buffer.from([
        c.pick([0xc3, 0xe0, 0xed, 0xf0, 0xff, 0x80]),
        c.int(256),
        c.int(256),
      ]);
      return {
        method: 'POST',
        path,
        body: Buffer.concat([Buffer.from('{"name":"'), bad, Buffer.from('"}')]),
        headers: json,
      };
    }
    case 5: {
      // unknown ids in a real route
      const id = c.pick([
        'run_nope',
        'step_',
        'flow_' + 'f'.repeat(32),
        '0',
        "'; DROP TABLE runs; --",
        '%20',
      ]);
      const route = c.pick([
        `/v1/runs/${id}`,
        `/v1/steps/${id}`,
        `/v1/steps/${id}/stream`,
        `/v1/flows/${id}`,
        `/v1/flows:by-hash/${id}`,
        `/v1/runs/${id}/facts`,
        `/v1/pools/${id}`,
      ]);
      return {
        method: c.pick(['GET', 'POST']),
        path: route.replace(/'/g, '%27').replace(/ /g, '%20'),
        body: null,
        headers: {},
      };
    }
    case 6: {
      // unknown fields
      const body = { ...template, [c.key() || 'zz']: c.value() };
      return { method: 'POST', path, body: Buffer.from(JSON.stringify(body)), headers: json };
    }
    case 7: {
      // a random path and method
      const n = 1 + c.int(5);
      const p =
        '/' +
        Array.from({ length: n }, () => encodeURI(c.pick(SEGMENTS)).replace(/%25/g, '%')).join('/');
      const query =
        c.rand() < 0.3
          ? `?${c.pick(['type', 'after', 'limit', 'last_event_id', 'x'])}=${encodeURIComponent(JSON.stringify(c.value()))}`
          : '';
      const withBody = c.rand() < 0.4;
      return {
        method: c.pick(METHODS),
        path: p + query,
        body: withBody ? Buffer.from(JSON.stringify(c.value())) : null,
        headers: withBody ? json : {},
      };
    }
    case 8: // a random content type
      return {
        method: 'POST',
        path,
        body: Buffer.from(JSON.stringify(template)),
        headers: { 'content-type': c.pick(CONTENT_TYPES) },
      };
    default: {
      // a read of a real resource, with query strings fuzzed
      const route = c.pick([
        `/v1/runs/${ids.run}`,
        `/v1/runs/${ids.run}/facts`,
        `/v1/runs/${ids.run}/checkpoints`,
        `/v1/steps/${ids.ended}`,
        `/v1/flows/${ids.flow}`,
        '/v1/pools',
        '/healthz',
        '/openapi.json',
      ]);
      const query =
        c.rand() < 0.6
          ? `?${c.pick(['type', 'after', 'limit', 'zz'])}=${encodeURIComponent(JSON.stringify(c.value()))}`
          : '';
      return { method: c.pick(['GET', 'HEAD']), path: route + query, body: null, headers: {} };
    }
  }
}

/** One random SSE connection: a random step and Last-Event-ID, cut off at a random moment. */
function randomStream(c: Choose, url: string, ids: Ids): Promise<Answer & { aborted: boolean }> {
  const stepId = c.pick([ids.ended, ids.ended, ids.live, 'step_nope']);
  const lastEventId = c.pick([
    '',
    '0',
    '1',
    '3',
    String(c.int(60)),
    '-1',
    'abc',
    '99999999999999999999',
    ' 2 ',
    '1e3',
  ]);
  const abort = c.pick(['never', 'before-response', 'first-chunk', 'some-bytes', 'timer'] as const);
  const limitBytes = 1 + c.int(400);
  const delayMs = c.int(20);
  const headers: Record<string, string> =
    lastEventId === '' ? {} : { 'last-event-id': lastEventId };
  const what = `SSE ${stepId} Last-Event-ID ${JSON.stringify(lastEventId)} abort ${abort}`;
  // A live step's stream never ends on its own: cut it off at some point.
  const cut = abort === 'never' && stepId === ids.live ? 'timer' : abort;
  return new Promise((resolve) => {
    let status: number | null = null;
    let resHeaders: http.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    let settled = false;
    const done = (aborted: boolean): void => {
      if (settled) return;
      settled = true;
      resolve({ status, headers: resHeaders, body: Buffer.concat(chunks), what, aborted });
    };
    const req = http.get(`${url}/v1/steps/${stepId}/stream`, { headers, agent: false }, (res) => {
      status = res.statusCode ?? null;
      resHeaders = res.headers;
      let bytes = 0;
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        bytes += chunk.length;
        if (cut === 'first-chunk' || (cut === 'some-bytes' && bytes >= limitBytes)) {
          req.destroy();
          done(true);
        }
      });
      res.on('end', () => {
        done(false);
      });
      res.on('error', () => {
        done(true);
      });
      res.on('close', () => {
        done(true);
      });
    });
    req.on('error', () => {
      done(true);
    });
    if (cut === 'before-response') setImmediate(() => req.destroy());
    if (cut === 'timer') setTimeout(() => req.destroy(), delayMs);
  });
}

describe('fuzzing the server (fixed seed)', () => {
  const unexpected = watchUnexpectedErrors();

  it('answers hundreds of hostile requests and stream connects with a 2xx or the error body of API.md, and stays healthy', async () => {
    const s: TestServer = await servers.start({
      server: { bodyLimitBytes: BODY_LIMIT, keepAliveMs: 25, maxStepsPerRun: 8 },
    });
    const run = await s.newRun({ seed: 1 });
    const ended = await s.submit(run.run_id, {
      type: 'llm_call',
      input: { messages: [{ role: 'user', content: 'x' }], params: { max_tokens: 20 } },
    });
    await s.streamText(ended);
    const live = await s.submit(run.run_id, {
      type: 'gate_eval',
      input: { fact_type: 'never', wait_ms: 600_000 },
    });
    const ids: Ids = { flow: run.flow_id, run: run.run_id, ended, live };
    const c = chooser(SEED);

    let answered = 0;
    const statuses = new Map<number, number>();
    for (let batch = 0; batch < 75; batch++) {
      const answers = await Promise.all(
        Array.from({ length: 8 }, async () => {
          const r = randomRequest(c, ids);
          const a = await send(s.url, r.method, r.path, r.body, r.headers);
          return { a, method: r.method };
        }),
      );
      for (const { a, method } of answers) {
        checkAnswer(a, method);
        if (a.status !== null) {
          answered++;
          statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
        }
      }
    }
    // The fuzzer reached the server: most requests were answered, and not all alike.
    expect(answered).toBeGreaterThan(500);
    for (const status of [200, 400, 404, 413, 415])
      expect(statuses.get(status) ?? 0, `status ${status}`).toBeGreaterThan(0);

    let streamed = 0;
    for (let batch = 0; batch < 15; batch++) {
      const answers = await Promise.all(
        Array.from({ length: 6 }, () => randomStream(c, s.url, ids)),
      );
      for (const a of answers) {
        if (a.status === null) continue;
        streamed++;
        if (a.status !== 200) {
          checkAnswer(a, 'GET');
          continue;
        }
        expect(a.headers['content-type'], a.what).toMatch(/^text\/event-stream/);
        if (!a.aborted) {
          // A whole stream of the ended step: frames in seq order, ending with `end`.
          const { frames } = parseSse(a.body.toString('utf8'));
          const seqs = frames.map((f) => Number(f.id));
          expect(seqs, a.what).toEqual([...seqs].sort((x, y) => x - y));
          if (frames.length > 0) expect(frames.at(-1)?.event, a.what).toBe('end');
        }
      }
    }
    expect(streamed).toBeGreaterThan(40);

    // Still healthy, every stream closed, and the live step untouched by its streams' aborts.
    const health = await fetch(`${s.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    await expect.poll(() => sseClients(s.url), POLL).toBe('0');
    expect(((await s.api('GET', `/v1/steps/${live}`)).body as { status: string }).status).toBe(
      'running',
    );
    expect(unexpected).toEqual([]);
  });
});
