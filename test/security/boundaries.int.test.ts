/**
 * The trust boundary between the users of one server (docs/security.md), attacked from
 * outside over real HTTP with real keys, on `axon serve` (SQLite) and on `axon serve --redis`
 * with a real worker process: another user's replay, bodies nested or keyed past the bounds,
 * key-shaped ids, a foreign `Host`, a body past the limit read by `fetch` and `curl`, too many
 * streams, and `/metrics` without a key.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { curl, expectApiError, POLL } from '../support/server.js';
import {
  KEYS,
  MAX_STREAMS,
  MAX_STREAMS_PER_USER,
  useTarget,
  withHost,
  type Target,
  type TargetKind,
  type Who,
} from './targets.js';

/** A live step of `who`: an `llm_call` of many tokens, running until its run is cancelled. */
async function liveStep(t: Target, who: Who): Promise<{ runId: string; stepId: string }> {
  const run = await t.newRun(who);
  const stepId = await t.submit(who, run.run_id, {
    type: 'llm_call',
    input: { messages: [{ role: 'user', content: 'go on' }], params: { max_tokens: 200_000 } },
  });
  return { runId: run.run_id, stepId };
}

describe.each<TargetKind>(['sqlite', 'fleet'])('the boundaries of %s', (kind) => {
  const target = useTarget(kind);
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const fn of cleanups.splice(0)) await fn();
  });

  it("replay_of another user's run is 404 as reading it is, leaks no seed; its owner and an admin replay it", async () => {
    const t = target();
    const recorded = await t.newRun('alice', { seed: 7331 });
    const step = await t.submit('alice', recorded.run_id, {
      type: 'llm_call',
      client_token: 'c1',
      input: { messages: [{ role: 'user', content: 'hello' }], params: { max_tokens: 5 } },
    });
    const original = await t.ended('alice', step);
    expect(original['status']).toBe('succeeded');
    const asRead = await t.call('bob', 'GET', `/v1/runs/${recorded.run_id}`);
    expectApiError(asRead, 404, 'NOT_FOUND');
    const flow = await t.call('bob', 'POST', '/v1/flows', { name: 'replayer' });
    const runs = `/v1/flows/${(flow.body as { flow_id: string }).flow_id}/runs`;
    for (const body of [
      { mode: 'replay', replay_of: recorded.run_id },
      { mode: 'strict_replay', replay_of: recorded.run_id },
      // A seed that differs would be a 409 naming the recorded one, were the run bob's.
      { mode: 'strict_replay', replay_of: recorded.run_id, seed: 1 },
    ]) {
      const res = await t.call('bob', 'POST', runs, body);
      expectApiError(res, 404, 'NOT_FOUND');
      expect(res.body).toMatchObject({
        error: { message: (asRead.body as { error: { message: string } }).error.message },
      });
      expect(res.text).not.toContain('7331');
    }
    // Nothing of it became bob's.
    expect((await t.call('bob', 'GET', '/v1/runs')).body).toEqual([]);
    // The owner replays it: the step's output is served from the recording.
    for (const who of ['alice', 'ops'] as const) {
      const replay = await t.newRun(who, { mode: 'strict_replay', replay_of: recorded.run_id });
      expect(replay.seed).toBe(7331);
      const again = await t.submit(who, replay.run_id, {
        type: 'llm_call',
        client_token: 'c1',
        input: { messages: [{ role: 'user', content: 'hello' }], params: { max_tokens: 5 } },
      });
      expect((await t.ended(who, again))['output']).toEqual(original['output']);
    }
  });

  it("another user's thread is 404 as its run is — read, kill, stream — and missing from the list", async () => {
    const t = target();
    const pool = await t.newRun('alice'); // a fleet's pool is up once a run can be made
    expect(pool.run_id).toMatch(/^run_/);
    const made = await t.call('alice', 'POST', '/v1/workflows/code-review/threads', {
      input: 'review this',
    });
    expect(made.status, made.text).toBe(201);
    const id = (made.body as { thread_id: string }).thread_id;
    expect((await t.call('alice', 'GET', `/v1/threads/${id}`)).status).toBe(200);
    for (const [method, path] of [
      ['GET', `/v1/threads/${id}`],
      ['GET', `/v1/threads/${id}/stream`],
      ['POST', `/v1/threads/${id}/kill`],
      ['GET', `/v1/runs/${id}`],
    ] as const) {
      expectApiError(await t.call('bob', method, path), 404, 'NOT_FOUND');
    }
    const bobs = (await t.call('bob', 'GET', '/v1/threads')).body as { thread_id: string }[];
    expect(bobs.map((x) => x.thread_id)).not.toContain(id);
    const all = (await t.call('ops', 'GET', '/v1/threads')).body as { thread_id: string }[];
    expect(all.map((x) => x.thread_id)).toContain(id);
  });

  it('a body nested past 64 levels or an object past 1 000 keys is 400 naming the bound; the server goes on', async () => {
    const t = target();
    const deep = `{"name":"deep","ast":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    const tooDeep = await t.call('alice', 'POST', '/v1/flows', deep, {
      'content-type': 'application/json',
    });
    expectApiError(tooDeep, 400, 'INVALID_PARAMS');
    expect((tooDeep.body as { error: { details: unknown } }).error.details).toEqual({
      limit: 'depth',
      max: 64,
    });
    const keys = Object.fromEntries(Array.from({ length: 1_001 }, (_, i) => [`k${i}`, i]));
    const tooWide = await t.call('alice', 'POST', '/v1/flows', { name: 'wide', ast: keys });
    expectApiError(tooWide, 400, 'INVALID_PARAMS');
    expect((tooWide.body as { error: { details: unknown } }).error.details).toEqual({
      limit: 'keys',
      max: 1_000,
    });
    // Inside the bounds (60 levels, 1 000 keys) the same bodies are flows, hashed and stored.
    const fine = `{"name":"fine","ast":${'['.repeat(60)}${']'.repeat(60)}}`;
    expect(
      (await t.call('alice', 'POST', '/v1/flows', fine, { 'content-type': 'application/json' }))
        .status,
    ).toBe(201);
    const { k1000: _dropped, ...wide } = keys;
    expect((await t.call('alice', 'POST', '/v1/flows', { name: 'w', ast: wide })).status).toBe(201);
    expect((await t.call(null, 'GET', '/healthz')).status).toBe(200);
  });

  it('an id shaped like a store key is 404 before a store sees it, for a user and for an admin', async () => {
    const t = target();
    const run = await t.newRun('alice');
    const step = await t.submit('alice', run.run_id, { type: 'checkpoint', input: {} });
    await t.ended('alice', step);
    const flow = (await t.call('alice', 'GET', `/v1/runs/${run.run_id}`)).body as {
      flow_id: string;
    };
    for (const who of ['alice', 'ops'] as const) {
      for (const path of [
        `/v1/runs/${run.run_id}%3Asteps`,
        `/v1/runs/${run.run_id}%3Arecordings`,
        `/v1/runs/${run.run_id}:checkpoints`,
        `/v1/runs/${run.run_id}%3Asteps/steps`,
        `/v1/runs/${run.run_id}%3Afacts/facts`,
        `/v1/steps/${step}%3Ax`,
        `/v1/steps/${step}%3Ax/stream`,
        `/v1/flows/${flow.flow_id}%3Afacts`,
        `/v1/flows:by-hash/x%3Ay`,
        `/v1/threads/${run.run_id}%3Asteps`,
        '/v1/runs/RUN_1',
      ]) {
        expectApiError(await t.call(who, 'GET', path), 404, 'NOT_FOUND');
      }
      const replay = await t.call(who, 'POST', `/v1/flows/${flow.flow_id}/runs`, {
        mode: 'replay',
        replay_of: `${run.run_id}:recordings`,
      });
      expectApiError(replay, 404, 'NOT_FOUND');
      const facts = await t.call(who, 'GET', `/v1/runs/${run.run_id}/facts?after=fact_1%3Ax`);
      expectApiError(facts, 400, 'INVALID_PARAMS');
    }
  });

  it('answers only the Host names of allowed_hosts (403 FORBIDDEN otherwise), whatever the key', async () => {
    const t = target();
    const auth = { authorization: `Bearer ${KEYS.alice}` };
    const port = new URL(t.url).port;
    for (const host of ['api.example.com', `api.example.com:${port}`, `127.0.0.1:${port}`]) {
      expect((await withHost(t.url, 'GET', '/v1/pools', host, auth)).status).toBe(200);
    }
    for (const host of ['attacker.example', `attacker.example:${port}`, `localhost:${port}`]) {
      const res = await withHost(t.url, 'GET', '/v1/pools', host, auth);
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({
        error: { code: 'FORBIDDEN', details: { host, reason: 'host_not_allowed' } },
      });
    }
  });

  it("a body past the limit is a 413 the client reads, with Node's fetch and with curl, again and again", async () => {
    const t = target();
    const big = Buffer.alloc(16 * 1024 * 1024, 0x20);
    for (let i = 0; i < 3; i++) {
      const res = await t.call('alice', 'POST', '/v1/flows', big, {
        'content-type': 'application/json',
      });
      expectApiError(res, 413, 'PAYLOAD_TOO_LARGE');
      // Without a key the answer is 401, read all the same.
      const anon = await t.call(null, 'POST', '/v1/flows', big, {
        'content-type': 'application/json',
      });
      expectApiError(anon, 401, 'UNAUTHORIZED');
    }
    const file = join(t.dir, 'big.json');
    writeFileSync(file, big);
    const out = await curl([
      '-s',
      '-w',
      '\n%{http_code}',
      '-H',
      'content-type: application/json',
      '-H',
      `authorization: Bearer ${KEYS.alice}`,
      '--data-binary',
      `@${file}`,
      `${t.url}/v1/flows`,
    ]);
    expect(out.code).toBe(0);
    const [body, status] = out.stdout.split('\n');
    expect(status).toBe('413');
    expect(JSON.parse(body ?? '')).toMatchObject({ error: { code: 'PAYLOAD_TOO_LARGE' } });
    expect((await t.call('alice', 'GET', '/v1/pools')).status).toBe(200);
  });

  it('bounds SSE streams per user and in all: 429 RATE_LIMITED naming the bound, counted in /metrics; a closed stream frees its slot', async () => {
    const t = target();
    const alice = await liveStep(t, 'alice');
    const bob = await liveStep(t, 'bob');
    cleanups.push(() => t.call('alice', 'POST', `/v1/runs/${alice.runId}/cancel`));
    cleanups.push(() => t.call('bob', 'POST', `/v1/runs/${bob.runId}/cancel`));
    const open: AbortController[] = [];
    cleanups.push(async () => {
      for (const c of open) c.abort();
    });
    /** Opens a stream of `who`'s step: its status (the body left open, or read when refused). */
    const stream = async (who: Who, stepId: string) => {
      const gone = new AbortController();
      const res = await fetch(`${t.url}/v1/steps/${stepId}/stream`, {
        headers: { authorization: `Bearer ${KEYS[who]}` },
        signal: gone.signal,
      });
      if (res.status === 200) open.push(gone);
      const body = res.status === 200 ? null : ((await res.json()) as Record<string, unknown>);
      return { status: res.status, body, gone, retryAfter: res.headers.get('retry-after') };
    };
    expect(MAX_STREAMS_PER_USER).toBe(2);
    expect(MAX_STREAMS).toBe(3);
    const first = await stream('alice', alice.stepId);
    expect(first.status).toBe(200);
    expect((await stream('alice', alice.stepId)).status).toBe(200);
    const third = await stream('alice', alice.stepId);
    expect(third.status).toBe(429);
    expect(third.retryAfter).toBe('1');
    expect(third.body).toMatchObject({
      error: {
        code: 'RATE_LIMITED',
        details: { limit: 'streams_per_user', max: 2, retry_after_ms: 1_000 },
      },
    });
    expect((await stream('bob', bob.stepId)).status).toBe(200);
    const full = await stream('bob', bob.stepId);
    expect(full.body).toMatchObject({
      error: { code: 'RATE_LIMITED', details: { limit: 'streams', max: 3 } },
    });
    const metrics = (await t.call('scraper', 'GET', '/metrics')).text;
    expect(metrics).toMatch(/^axon_sse_clients 3$/m);
    expect(metrics).toMatch(/^axon_sse_refused_total\{limit="streams_per_user"\} 1$/m);
    expect(metrics).toMatch(/^axon_sse_refused_total\{limit="streams"\} 1$/m);
    // One of alice's closes: bob may open his second.
    first.gone.abort();
    await expect.poll(async () => (await stream('bob', bob.stepId)).status, POLL).toBe(200);
  });

  it('/metrics needs a key with metrics or admin: 401 without one, 403 for a user key; a metrics key reads nothing else', async () => {
    const t = target();
    expectApiError(await t.call(null, 'GET', '/metrics'), 401, 'UNAUTHORIZED');
    expectApiError(await t.call('alice', 'GET', '/metrics'), 403, 'FORBIDDEN');
    for (const who of ['scraper', 'ops'] as const) {
      const res = await t.call(who, 'GET', '/metrics');
      expect(res.status).toBe(200);
      expect(res.text).toMatch(/^axon_http_requests_total\{/m);
    }
    expectApiError(await t.call('scraper', 'GET', '/v1/runs'), 403, 'FORBIDDEN');
    expectApiError(await t.call('scraper', 'GET', '/v1/pools'), 403, 'FORBIDDEN');
  });
});
