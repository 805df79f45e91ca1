/**
 * Workflows and threads over HTTP (issue 21): a real server, real `fetch` clients.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import {
  createServer,
  type AxonServer,
  type ServerOptions,
} from '../../src/server/create-server.js';
import type { ThreadView } from '../../src/workflows/thread-records.js';
import { defineWorkflow, END } from '../../src/workflows/workflow-definition.js';
import { WorkflowEngine } from '../../src/workflows/workflow-engine.js';
import { POLL, sseClients, useTestServers } from '../support/server.js';

/** The project's store for each server's runtime (PostgreSQL under `http-on-postgres`). */
const stores = useTestServers('server-threads');
const servers: AxonServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function start(
  tokenDelayMs = 0,
  rounds = 4,
  options: Omit<ServerOptions, 'workflows'> = {},
): Promise<{ url: string; engine: WorkflowEngine }> {
  const runtime = stores.runtime({
    engines: [
      createScriptedEngine({
        tokenDelayMs,
        script: (r) =>
          (r.messages.find((m) => m.role === 'system')?.content ?? '').startsWith('You write')
            ? 'some code'
            : 'looks fine',
      }),
    ],
  });
  const engine = new WorkflowEngine(runtime, [
    defineWorkflow({
      name: 'review',
      roles: {
        coder: { kind: 'engine', prompt: 'You write code.' },
        reviewer: { kind: 'engine', prompt: 'You review code.' },
      },
      moderator: (t) =>
        t.turns.length >= rounds ? END : t.turns.length % 2 === 0 ? 'coder' : 'reviewer',
      concurrency: { max: 1, overflow: 'queue', maxQueue: 1 },
    }),
  ]);
  const server = await createServer(runtime, {
    port: 0,
    workflows: engine,
    keepAliveMs: 60_000,
    ...options,
  });
  servers.push(server);
  return { url: server.url, engine };
}

async function json<T = ThreadView>(res: Response): Promise<T> {
  return (await res.json()) as T;
}

interface ErrorBody {
  readonly error: { readonly code: string };
}

const post = (url: string, body?: unknown): Promise<Response> =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

/** The frames of an SSE body: id, event and parsed data. */
interface Frame {
  readonly id: string;
  readonly event: string;
  readonly data: Record<string, unknown>;
}

function frames(text: string): Frame[] {
  return text
    .split('\n\n')
    .filter((f) => f.startsWith('id: '))
    .map((f) => {
      const lines = f.split('\n');
      const field = (name: string): string =>
        lines.find((l) => l.startsWith(`${name}: `))?.slice(name.length + 2) ?? '';
      return {
        id: field('id'),
        event: field('event'),
        data: JSON.parse(field('data')) as Record<string, unknown>,
      };
    });
}

describe('workflows and threads over HTTP', () => {
  it('lists workflows, starts a thread, reads it back and lists it', async () => {
    const { url } = await start();
    const list = await json<unknown>(await fetch(`${url}/v1/workflows`));
    expect(list).toEqual([
      expect.objectContaining({
        name: 'review',
        roles: [
          { name: 'coder', kind: 'engine', placement: 'inline' },
          { name: 'reviewer', kind: 'engine', placement: 'inline' },
        ],
        concurrency: { max: 1, overflow: 'queue', max_queue: 1 },
      }),
    ]);
    const created = await post(`${url}/v1/workflows/review/threads`, { input: 'Add a README' });
    expect(created.status).toBe(201);
    const t = await json(created);
    expect(t).toMatchObject({ workflow: 'review', input: 'Add a README' });
    // Its stream runs to the thread's end.
    const body = await (await fetch(`${url}/v1/threads/${t.thread_id}/stream`)).text();
    const fs = frames(body);
    expect(fs.at(-1)?.event).toBe('thread_end');
    expect(fs.at(-1)?.data).toMatchObject({ status: 'completed', end_reason: 'end' });
    const tokens = (turn: number): string =>
      fs
        .filter((f) => f.event === 'token' && f.data['turn'] === turn)
        .map((f) => String(f.data['t']))
        .join('');
    expect(tokens(1)).toBe('some code');
    expect(tokens(2)).toBe('looks fine');
    expect(fs.find((f) => f.data['turn'] === 2)?.data['role']).toBe('reviewer');
    // Resumed after a frame in the middle: the rest, exactly.
    const cut = Math.floor(fs.length / 2);
    const rest = await (
      await fetch(`${url}/v1/threads/${t.thread_id}/stream`, {
        headers: { 'last-event-id': fs[cut]?.id ?? '' },
      })
    ).text();
    expect(frames(rest).map((f) => f.id)).toEqual(fs.slice(cut + 1).map((f) => f.id));

    const read = await json(await fetch(`${url}/v1/threads/${t.thread_id}`));
    expect(read).toMatchObject({ status: 'completed', rounds: 4 });
    expect(read.turns.map((x) => x.role)).toEqual(['coder', 'reviewer', 'coder', 'reviewer']);
    const threads = await json<ThreadView[]>(
      await fetch(`${url}/v1/threads?workflow=review&status=completed`),
    );
    expect(threads.map((x) => x.thread_id)).toEqual([t.thread_id]);
    expect(await json<ThreadView[]>(await fetch(`${url}/v1/threads?status=killed`))).toEqual([]);
    // The newest first, at most `limit`.
    const second = await json(await post(`${url}/v1/workflows/review/threads`, { input: 'again' }));
    const newest = await json<ThreadView[]>(await fetch(`${url}/v1/threads?limit=1`));
    expect(newest.map((x) => x.thread_id)).toEqual([second.thread_id]);
    // The next page goes on after the last of the one before.
    const next = await json<ThreadView[]>(
      await fetch(`${url}/v1/threads?limit=1&before=${second.thread_id}`),
    );
    expect(next.map((x) => x.thread_id)).toEqual([t.thread_id]);
    expect(
      await json<ThreadView[]>(await fetch(`${url}/v1/threads?before=${t.thread_id}`)),
    ).toEqual([]);
  });

  it('kills a running thread; queues one past max and refuses one past max_queue (429)', async () => {
    const { url } = await start(30, 20);
    const a = await json(await post(`${url}/v1/workflows/review/threads`, { input: 'a' }));
    const b = await json(await post(`${url}/v1/workflows/review/threads`, { input: 'b' }));
    expect(b.status).toBe('queued');
    const c = await post(`${url}/v1/workflows/review/threads`, { input: 'c' });
    expect(c.status).toBe(429);
    expect((await json<ErrorBody>(c)).error.code).toBe('QUEUE_FULL');
    const killed = await post(`${url}/v1/threads/${a.thread_id}/kill`);
    expect(killed.status).toBe(200);
    expect(await json(killed)).toMatchObject({ status: 'killed', end_reason: 'killed' });
    const again = await post(`${url}/v1/threads/${a.thread_id}/kill`);
    expect(again.status).toBe(409);
    // The waiting one took its place.
    const killedB = await json(await post(`${url}/v1/threads/${b.thread_id}/kill`));
    expect(killedB.status).toBe('killed');
  });

  it('answers bad requests with typed errors', async () => {
    const { url } = await start();
    expect((await post(`${url}/v1/workflows/nope/threads`, { input: 'x' })).status).toBe(404);
    const bad = await post(`${url}/v1/workflows/review/threads`, { input: 1 });
    expect(bad.status).toBe(400);
    expect((await json<ErrorBody>(bad)).error.code).toBe('INVALID_PARAMS');
    expect(
      (await post(`${url}/v1/workflows/review/threads`, { input: 'x', extra: 1 })).status,
    ).toBe(400);
    // Nothing reads a client token on a thread: refused, not ignored.
    expect(
      (await post(`${url}/v1/workflows/review/threads`, { input: 'x', client_token: 't' })).status,
    ).toBe(400);
    expect((await fetch(`${url}/v1/threads/run_nope`)).status).toBe(404);
    expect((await post(`${url}/v1/threads/run_nope/kill`)).status).toBe(404);
    expect((await fetch(`${url}/v1/threads?status=sleeping`)).status).toBe(400);
    expect((await fetch(`${url}/v1/threads?limit=0`)).status).toBe(400);
    expect((await fetch(`${url}/v1/threads?before=run_${'0'.repeat(32)}`)).status).toBe(404);
    expect((await fetch(`${url}/v1/threads?before=nope%3Asteps`)).status).toBe(400);
    const t = await json(await post(`${url}/v1/workflows/review/threads`, { input: 'x' }));
    const badId = await fetch(`${url}/v1/threads/${t.thread_id}/stream`, {
      headers: { 'last-event-id': 'seven' },
    });
    expect(badId.status).toBe(400);
  });

  it('a thread stream is one of the server’s streams: counted in axon_sse_clients, bounded per user, freed when it closes', async () => {
    const { url } = await start(200, 4, { maxStreamsPerUser: 1 });
    const t = await json(await post(`${url}/v1/workflows/review/threads`, { input: 'x' }));
    const gone = new AbortController();
    const open = await fetch(`${url}/v1/threads/${t.thread_id}/stream`, { signal: gone.signal });
    expect(open.status).toBe(200);
    const reader = (open.body as ReadableStream<Uint8Array>).getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toMatch(/^id: 1\.1\nevent: started\n/);
    expect(await sseClients(url)).toBe('1');
    const refused = await fetch(`${url}/v1/threads/${t.thread_id}/stream`);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({
      error: { code: 'RATE_LIMITED', details: { limit: 'streams_per_user', max: 1 } },
    });
    gone.abort();
    await expect.poll(() => sseClients(url), POLL).toBe('0');
    expect(
      (await fetch(`${url}/v1/threads/${t.thread_id}/stream`, { method: 'HEAD' })).status,
    ).toBe(200);
    await fetch(`${url}/v1/threads/${t.thread_id}/kill`, { method: 'POST' });
  });
});
