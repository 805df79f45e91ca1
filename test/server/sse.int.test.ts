/**
 * `GET /v1/steps/{step_id}/stream` with real clients: `fetch`, the `eventsource` package (a
 * spec-following EventSource, reconnecting with `Last-Event-ID`), `curl -N`, and raw
 * `http.request` connections dropped mid-stream. Frames, headers, resume from a seq
 * (STREAM-2001), replay of an ended step, keep-alive comments, cancel by POST, and
 * `cancel_on_disconnect`.
 */
import http from 'node:http';
import { EventSource } from 'eventsource';
import { describe, expect, it } from 'vitest';
import {
  curl,
  expectApiError,
  expectSeqsFrom,
  expectStreamOrder,
  openStream,
  parseSse,
  useTestServers,
  type TestServer,
  POLL,
  sseClients,
} from '../support/server.js';

const servers = useTestServers('server-sse');

const llm = (maxTokens: number): Record<string, unknown> => ({
  type: 'llm_call',
  input: { messages: [{ role: 'user', content: 'stream' }], params: { max_tokens: maxTokens } },
});
const waitingGate = { type: 'gate_eval', input: { fact_type: 'never', wait_ms: 600_000 } };

/** A step that has ended, with its whole log. */
async function endedStep(s: TestServer, tokens = 6): Promise<{ stepId: string; total: number }> {
  const run = await s.newRun({ seed: 1 });
  const stepId = await s.submit(run.run_id, llm(tokens));
  const total = parseSse(await s.streamText(stepId)).frames.length;
  return { stepId, total };
}

/** Opens a raw stream and resolves with it once its first bytes have come. */
function openRaw(url: string): Promise<{ req: http.ClientRequest; text: () => string }> {
  return new Promise((resolve, reject) => {
    let text = '';
    const req = http.get(url, (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const first = text === '';
        text += chunk;
        if (first) resolve({ req, text: () => text });
      });
      res.on('error', () => undefined);
    });
    req.on('error', (err) => {
      if (text === '') reject(err);
    });
  });
}

const stepStatus = async (s: TestServer, id: string): Promise<string> =>
  ((await s.api('GET', `/v1/steps/${id}`)).body as { status: string }).status;

describe('the SSE stream: frames and headers', () => {
  it('has the headers of API.md and frames `id: <seq>` / `event: <type>` / `data: <json>` with step_id, seq, ts', async () => {
    const s = await servers.start();
    const run = await s.newRun();
    const stepId = await s.submit(run.run_id, llm(5));
    const res = await fetch(`${s.url}/v1/steps/${stepId}/stream`, {
      headers: { 'x-correlation-id': 'sse-test-1' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('connection')).toBe('keep-alive');
    expect(res.headers.get('x-accel-buffering')).toBe('no');
    expect(res.headers.get('x-correlation-id')).toBe('sse-test-1');
    const text = await res.text();
    // Nothing but frames of exactly three lines each (and comments).
    const blocks = text.split('\n\n').filter((b) => b !== '' && !b.startsWith(':'));
    for (const block of blocks) {
      expect(block).toMatch(/^id: \d+\nevent: [a-z_]+\ndata: \{.*\}$/);
    }
    const { frames } = parseSse(text);
    expectSeqsFrom(frames, 1);
    expectStreamOrder(frames.map((f) => f.event ?? ''));
    for (const f of frames) {
      expect(f.data).toMatchObject({
        step_id: stepId,
        seq: Number(f.id),
        ts: expect.any(Number) as number,
      });
      expect(f.data).not.toHaveProperty('type');
    }
    expect(frames.filter((f) => f.event === 'token')).toHaveLength(5);
    expect(frames.at(-1)?.data).toMatchObject({
      output: expect.any(Object) as object,
      budget_usage: expect.any(Object) as object,
      provenance: expect.any(Object) as object,
    });
  });

  it('a stream opened after the step ended replays the whole log, in order, and closes', async () => {
    const s = await servers.start();
    const { stepId, total } = await endedStep(s);
    const { frames } = parseSse(await s.streamText(stepId));
    expect(frames).toHaveLength(total);
    const log = await s.runtime.readStepEvents(stepId);
    expect(frames.map((f) => [Number(f.id), f.event])).toEqual(log.map((e) => [e.seq, e.type]));
  });

  it('STREAM-2001: Last-Event-ID: n gives every event with seq > n from the log, then the live ones (header or ?last_event_id=)', async () => {
    const s = await servers.start();
    const { stepId, total } = await endedStep(s, 8);
    for (const n of [0, 1, 4, total - 1]) {
      const viaHeader = parseSse(await s.streamText(stepId, { 'last-event-id': String(n) })).frames;
      expect(viaHeader.map((f) => Number(f.id))).toEqual(
        Array.from({ length: total - n }, (_, i) => n + 1 + i),
      );
      const viaQuery = await fetch(`${s.url}/v1/steps/${stepId}/stream?last_event_id=${n}`);
      expect(parseSse(await viaQuery.text()).frames.map((f) => f.id)).toEqual(
        viaHeader.map((f) => f.id),
      );
    }
    // Past the end: nothing, and the stream closes.
    expect(
      parseSse(await s.streamText(stepId, { 'last-event-id': String(total + 5) })).frames,
    ).toEqual([]);

    // Live: resume a running step from where the first connection stopped.
    const run = await s.newRun();
    const live = await s.submit(run.run_id, {
      type: 'gate_eval',
      input: { fact_type: 'go', wait_ms: 60_000 },
    });
    const first = parseSse((await openRaw(`${s.url}/v1/steps/${live}/stream`)).text()).frames;
    const resumed = fetch(`${s.url}/v1/steps/${live}/stream`, {
      headers: { 'last-event-id': '1' },
    }).then((r) => r.text());
    await s.api('POST', `/v1/runs/${run.run_id}/facts`, { type: 'go', data: {} });
    expect(first.map((f) => f.event)).toEqual(['started']);
    expect(parseSse(await resumed).frames.map((f) => [f.id, f.event])).toEqual([['2', 'end']]);

    // A Last-Event-ID that is not a seq is 400, before any stream.
    for (const bad of ['abc', '-1', '1.5', '9'.repeat(40)]) {
      expectApiError(
        await s.api('GET', `/v1/steps/${stepId}/stream`, undefined, { 'last-event-id': bad }),
        400,
        'INVALID_PARAMS',
      );
    }
    expectApiError(await s.api('GET', '/v1/steps/step_nope/stream'), 404, 'NOT_FOUND');
  });

  it('HEAD of a stream answers its headers and no body, without following the step', async () => {
    const s = await servers.start();
    const run = await s.newRun();
    const stepId = await s.submit(run.run_id, waitingGate);
    const res = await fetch(`${s.url}/v1/steps/${stepId}/stream`, { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(await res.text()).toBe('');
    // No follow is open: nothing holds the step, and the SSE client gauge is back to 0.
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    expect(metrics).toMatch(/^axon_sse_clients 0$/m);
    expect(
      (await curl(['-I', '--max-time', '10', `${s.url}/v1/steps/${stepId}/stream`])).stdout,
    ).toMatch(/^HTTP\/1.1 200/);
  });
});

describe('the SSE stream: keep-alive and cancel', () => {
  it('writes `: keep-alive` comments at the configured interval while the step is quiet; POST cancel ends it with error CANCELLED', async () => {
    const s = await servers.start({ server: { keepAliveMs: 40 } });
    const run = await s.newRun();
    const stepId = await s.submit(run.run_id, waitingGate);
    const stream = await openStream(`${s.url}/v1/steps/${stepId}/stream`);
    await stream.readUntil((t) => (t.match(/^: keep-alive$/gm) ?? []).length >= 3);
    expect((await s.api('POST', `/v1/steps/${stepId}/cancel`)).status).toBe(202);
    const text = await stream.readToEnd();
    const { frames, comments } = parseSse(text);
    expect(comments.length).toBeGreaterThanOrEqual(3);
    expect(new Set(comments)).toEqual(new Set([': keep-alive']));
    expect(frames.map((f) => f.event)).toEqual(['started', 'error']);
    expect(frames[1]?.data).toMatchObject({ code: 'CANCELLED' });
  });

  it('cancel_on_disconnect: true — the only stream of a live step closing cancels the step; while another stream stays, it goes on', async () => {
    const s = await servers.start();
    const run = await s.newRun({ cancel_on_disconnect: true });
    const stepId = await s.submit(run.run_id, waitingGate);
    const a = await openRaw(`${s.url}/v1/steps/${stepId}/stream`);
    const b = await openRaw(`${s.url}/v1/steps/${stepId}/stream`);
    a.req.destroy();
    // One stream is left: the step runs on (checked after the server has seen the close).
    await expect.poll(() => sseClients(s.url), POLL).toBe('1');
    expect(await stepStatus(s, stepId)).toBe('running');
    b.req.destroy();
    await expect.poll(() => stepStatus(s, stepId), POLL).toBe('cancelled');
    const last = parseSse(await s.streamText(stepId)).frames.at(-1);
    expect(last).toMatchObject({ event: 'error', data: { code: 'CANCELLED' } });
  });

  it('cancel_on_disconnect: false — the only stream closing leaves the step running to its end', async () => {
    const s = await servers.start();
    const run = await s.newRun({ cancel_on_disconnect: false });
    const stepId = await s.submit(run.run_id, {
      type: 'gate_eval',
      input: { fact_type: 'go', wait_ms: 60_000 },
    });
    const a = await openRaw(`${s.url}/v1/steps/${stepId}/stream`);
    a.req.destroy();
    await expect.poll(() => sseClients(s.url), POLL).toBe('0');
    expect(await stepStatus(s, stepId)).toBe('running');
    await s.api('POST', `/v1/runs/${run.run_id}/facts`, { type: 'go', data: {} });
    await expect.poll(() => stepStatus(s, stepId), POLL).toBe('succeeded');
  });
});

describe('the SSE stream with real clients', () => {
  it('the eventsource package reads a live step in order, to `end`', async () => {
    const s = await servers.start();
    const run = await s.newRun();
    const stepId = await s.submit(run.run_id, llm(20));
    const events = await collectWithEventSource(`${s.url}/v1/steps/${stepId}/stream`);
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => String(i + 1)));
    expectStreamOrder(events.map((e) => e.type));
    expect(events.filter((e) => e.type === 'token')).toHaveLength(20);
  });

  it("the eventsource package's own reconnect, after the connection dropped mid-stream, resumes with Last-Event-ID: no event twice, none missing", async () => {
    const s = await servers.start();
    const run = await s.newRun();
    const stepId = await s.submit(run.run_id, llm(100));
    const requests: (string | null)[] = [];
    const events = await collectWithEventSource(`${s.url}/v1/steps/${stepId}/stream`, {
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        requests.push(new Headers(init.headers).get('last-event-id'));
        // The first connection drops after a few frames; a `retry` hint keeps the test fast.
        return requests.length === 1 ? dropAfter(res, 1_500) : withRetryHint(res);
      },
    });
    expect(requests.length).toBeGreaterThanOrEqual(2);
    expect(requests[0]).toBeNull();
    expect(Number(requests[1])).toBeGreaterThan(0);
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => String(i + 1)));
    expect(events.filter((e) => e.type === 'token')).toHaveLength(100);
    expect(events.at(-1)?.type).toBe('end');
  });

  it('the eventsource package sees a step error as an `error` message event (CANCELLED), not a connection failure', async () => {
    const s = await servers.start();
    const run = await s.newRun();
    const stepId = await s.submit(run.run_id, waitingGate);
    const collected = collectWithEventSource(`${s.url}/v1/steps/${stepId}/stream`);
    await expect.poll(() => sseClients(s.url), POLL).toBe('1');
    await s.api('POST', `/v1/steps/${stepId}/cancel`);
    const events = await collected;
    expect(events.map((e) => e.type)).toEqual(['started', 'error']);
    expect(events[1]?.data).toMatchObject({ code: 'CANCELLED' });
  });

  it('curl -N streams a live step frame by frame, and resumes with a Last-Event-ID header', async () => {
    const s = await servers.start();
    const run = await s.newRun();
    const stepId = await s.submit(run.run_id, llm(30));
    const url = `${s.url}/v1/steps/${stepId}/stream`;
    const whole = await curl(['-N', '-i', '--max-time', '30', url]);
    expect(whole.code).toBe(0);
    const [head = '', body = ''] = whole.stdout.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1.1 200/);
    expect(head).toMatch(/^content-type: text\/event-stream/im);
    expect(head).toMatch(/^x-correlation-id: .+/im);
    const frames = parseSse(body).frames;
    expectSeqsFrom(frames, 1);
    expect(frames.filter((f) => f.event === 'token')).toHaveLength(30);
    const resumed = await curl(['-N', '--max-time', '30', '-H', 'Last-Event-ID: 20', url]);
    expect(parseSse(resumed.stdout).frames.map((f) => Number(f.id))).toEqual(
      frames.filter((f) => Number(f.id) > 20).map((f) => Number(f.id)),
    );
  });
});

/** An event as the eventsource package delivered it. */
interface Received {
  readonly type: string;
  readonly id: string;
  readonly data: Record<string, unknown>;
}

const TYPES = [
  'started',
  'token',
  'tool_suggest',
  'fact',
  'metrics',
  'narration',
  'checkpoint',
  'end',
  'error',
  'escalation',
];

/** Reads a stream with the `eventsource` package until its `end` or `error` event. */
function collectWithEventSource(
  url: string,
  init: ConstructorParameters<typeof EventSource>[1] = {},
): Promise<Received[]> {
  return new Promise((resolve, reject) => {
    const es = new EventSource(url, init);
    const events: Received[] = [];
    for (const type of TYPES) {
      es.addEventListener(type, (e: Event) => {
        // A step's `error` event is a message event; the client's own failures are not.
        if (!('data' in e)) return;
        const message = e as MessageEvent;
        events.push({
          type,
          id: message.lastEventId,
          data: JSON.parse(String(message.data)) as Record<string, unknown>,
        });
        if (type === 'end' || type === 'error') {
          es.close();
          resolve(events);
        }
      });
    }
    setTimeout(() => {
      es.close();
      reject(new Error(`no end after 30 s; got ${events.length} events`));
    }, 30_000).unref();
  });
}

/**
 * `res` with its body cut after exactly `bytes` bytes (mid-stream, however the chunks came),
 * as a dropped connection would.
 */
function dropAfter(res: Response, bytes: number): Response {
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  let passed = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await reader.read();
      if (next.done || passed >= bytes) {
        await reader.cancel();
        controller.close();
        return;
      }
      const part = next.value.subarray(0, bytes - passed);
      passed += part.length;
      controller.enqueue(part);
    },
  });
  return new Response(withRetry(body), { status: res.status, headers: res.headers });
}

function withRetryHint(res: Response): Response {
  return new Response(withRetry(res.body as ReadableStream<Uint8Array>), {
    status: res.status,
    headers: res.headers,
  });
}

/** A `retry: 20` field before the stream, so the client reconnects at once. */
function withRetry(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const hint = new TextEncoder().encode('retry: 20\n\n');
  const reader = body.getReader();
  let sent = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!sent) {
        sent = true;
        controller.enqueue(hint);
        return;
      }
      const next = await reader.read();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    async cancel() {
      await reader.cancel();
    },
  });
}

describe('the flush window (ServerOptions.sseFlushMs)', () => {
  /** The chunks of a stream as the socket delivered them, and their text. */
  function readChunks(url: string): Promise<string[]> {
    return new Promise((resolve, reject) => {
      const chunks: string[] = [];
      http
        .get(url, (res) => {
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => chunks.push(chunk));
          res.on('end', () => {
            resolve(chunks);
          });
        })
        .on('error', reject);
    });
  }

  it('frames that come within the window go out together, all of them, in order; 0 writes each page at once', async () => {
    const counts: number[] = [];
    const texts: string[] = [];
    for (const sseFlushMs of [0, 5_000]) {
      // 20 tokens 15 ms apart: a step of about 300 ms, well inside the second window.
      const s = await servers.start({ server: { sseFlushMs }, tokenDelayMs: 15 });
      const run = await s.newRun({ seed: 3 });
      const stepId = await s.submit(run.run_id, llm(20));
      const chunks = await readChunks(`${s.url}/v1/steps/${stepId}/stream`);
      counts.push(chunks.length);
      texts.push(chunks.join(''));
    }
    const [eachPage = 0, held = 0] = counts;
    expect(eachPage).toBeGreaterThanOrEqual(10);
    // The first write (`started`, maybe a token), then the rest with the step's `end`.
    expect(held).toBeLessThanOrEqual(3);
    for (const text of texts) {
      const { frames } = parseSse(text);
      expect(frames.filter((f) => f.event === 'token')).toHaveLength(20);
      expectSeqsFrom(frames, 1);
      expect(frames.at(-1)?.event).toBe('end');
    }
  });

  it('refuses a window that is not a whole number of milliseconds >= 0', async () => {
    for (const sseFlushMs of [-1, 2.5]) {
      await expect(servers.start({ server: { sseFlushMs } })).rejects.toThrow(/sseFlushMs/);
    }
  });
});
