/**
 * Durable agents over HTTP (API.md, "Durable agents"; issue 46), from outside: messages to an
 * actor (202, the same client_token 200, handled one at a time in the order accepted), its
 * view, every refusal with its status and code and nothing stored (404 unknown agent, 400 a key
 * of the wrong form, 422 the agent's input, 429 QUEUE_FULL, 409 CONFLICT under `reject`), the
 * listing (newest first, pages, filters by name, key prefix and status), cancel, and the
 * actors of two users kept apart while an admin key reads them all.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { followUp, notebook } from '../../examples/index.js';
import { defineAgent } from '../../src/actors/define-agent.js';
import type { DurableAgentDefinition } from '../../src/actors/durable-agent.js';
import {
  expectApiError,
  POLL,
  useTestServers,
  type ApiResponse,
  type TestServer,
} from '../support/server.js';

const servers = useTestServers('server-agents');

/** Handlers held until their key's gate opens: a busy actor, for as long as a test needs. */
const gates = new Map<string, { open: () => void; opened: Promise<void> }>();
function gate(key: string): () => void {
  let open = (): void => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  gates.set(key, { open, opened });
  return open;
}

/** An agent whose handler waits for its key's gate; `policy` and `maxQueue` its mailbox's. */
function heldAgent(name: string, policy: 'queue' | 'reject', maxQueue: number) {
  return defineAgent({
    name,
    input: z.strictObject({ n: z.number() }),
    durable: {
      state: z.object({ seen: z.array(z.number()) }),
      initial: { seen: [] },
      version: 1,
      mailbox: { policy, maxQueue },
    },
    handler: async (message, actor) => {
      await gates.get(actor.key)?.opened;
      return { state: { seen: [...actor.state.seen, message.n] }, output: { n: message.n } };
    },
  });
}

/** A notebook that falls asleep (leaves memory) at the next sweep after each message. */
const napper = defineAgent({
  name: 'napper',
  input: z.strictObject({ text: z.string() }),
  durable: { state: z.object({ last: z.string() }), initial: { last: '' }, version: 1, idleMs: 1 },
  handler: (message) => ({ state: { last: message.text } }),
});

const AGENTS: DurableAgentDefinition[] = [
  notebook,
  followUp,
  napper,
  heldAgent('held', 'queue', 1),
  heldAgent('held-reject', 'reject', 10),
];

const ALICE = 'alice-key-0123456789';
const BOB = 'bob-key-01234567890';
const OPS = 'ops-admin-key-0123456';
const as = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });

function start(withKeys = false): Promise<TestServer> {
  return servers.start({
    runtime: { agents: AGENTS },
    ...(withKeys
      ? {
          server: {
            keys: [
              { key: ALICE, user_id: 'alice' },
              { key: BOB, user_id: 'bob' },
              { key: OPS, user_id: 'ops', permissions: ['read', 'write', 'admin'] },
            ],
          },
        }
      : {}),
  });
}

interface Receipt {
  readonly message_id: string;
  readonly step_id: string;
  readonly run_id: string;
  readonly status: string;
}
interface View {
  readonly name: string;
  readonly key: string;
  readonly user_id: string;
  readonly status: string;
  readonly state: unknown;
  readonly mailbox_depth: number;
  readonly next_timer_at: string | null;
  readonly run_id: string;
}

async function send(
  s: TestServer,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
  status = 202,
): Promise<Receipt> {
  const res = await s.api('POST', `/v1/agents/${path}/messages`, body, headers);
  expect(res.status, res.text).toBe(status);
  return res.body as Receipt;
}

const view = async (
  s: TestServer,
  path: string,
  headers: Record<string, string> = {},
): Promise<View | null> => {
  const res = await s.api('GET', `/v1/agents/${path}`, undefined, headers);
  return res.status === 200 ? (res.body as View) : null;
};

/** The actor's messages (its run's top steps), as `GET /v1/runs/{id}/steps` lists them. */
async function messages(s: TestServer, runId: string, headers: Record<string, string> = {}) {
  const res = await s.api('GET', `/v1/runs/${runId}/steps`, undefined, headers);
  expect(res.status, res.text).toBe(200);
  return (res.body as { step_id: string; parent_step_id: string | null; status: string }[]).filter(
    (st) => st.parent_step_id === null,
  );
}

describe('POST /v1/agents/{name}/{key}/messages', () => {
  it('accepts a message durably (202, its ids), handles messages one at a time in the order accepted, and the view shows the state they left', async () => {
    const s = await start();
    const first = await send(s, 'notebook/customer-42', { message: { text: 'a' } });
    expect(first).toEqual({
      message_id: first.step_id,
      step_id: expect.stringMatching(/^step_/) as string,
      run_id: expect.stringMatching(/^run_/) as string,
      status: expect.stringMatching(/^(queued|running)$/) as string,
    });
    const rest = [];
    for (const text of ['b', 'c', 'd']) {
      rest.push(await send(s, 'notebook/customer-42', { message: { text } }));
    }
    // One actor, one run: every message is a step of it.
    expect(new Set(rest.map((r) => r.run_id))).toEqual(new Set([first.run_id]));
    await expect
      .poll(async () => (await view(s, 'notebook/customer-42'))?.state, POLL)
      .toEqual({ notes: ['a', 'b', 'c', 'd'] });
    const outputs = [];
    for (const r of [first, ...rest]) {
      const step = await s.api('GET', `/v1/steps/${r.step_id}`);
      expect(step.body).toMatchObject({ status: 'succeeded', run_id: first.run_id });
      outputs.push((step.body as { output: unknown }).output);
    }
    expect(outputs).toEqual([{ count: 1 }, { count: 2 }, { count: 3 }, { count: 4 }]);
    expect(await view(s, 'notebook/customer-42')).toEqual({
      name: 'notebook',
      key: 'customer-42',
      user_id: 'anonymous',
      version: 1,
      status: expect.stringMatching(/^(awake|asleep)$/) as string,
      state: { notes: ['a', 'b', 'c', 'd'] },
      mailbox_depth: 0,
      next_timer_at: null,
      run_id: first.run_id,
      created_at: expect.any(String) as string,
      updated_at: expect.any(String) as string,
    });
    // Another key is another actor, with its own state and run.
    const other = await send(s, 'notebook/customer-43', { message: { text: 'x' } });
    expect(other.run_id).not.toBe(first.run_id);
    await expect
      .poll(async () => (await view(s, 'notebook/customer-43'))?.state, POLL)
      .toEqual({ notes: ['x'] });
  });

  it('the same client_token for the same actor answers 200 with the first ids, and nothing is accepted twice (NERVE-4003)', async () => {
    const s = await start();
    const first = await send(s, 'notebook/t', { message: { text: 'once' }, client_token: 'm-1' });
    const again = await send(
      s,
      'notebook/t',
      { message: { text: 'once' }, client_token: 'm-1' },
      {},
      200,
    );
    expect(again.message_id).toBe(first.message_id);
    expect(again.run_id).toBe(first.run_id);
    // Even with another message: the token names the first.
    const other = await send(
      s,
      'notebook/t',
      { message: { text: 'other' }, client_token: 'm-1' },
      {},
      200,
    );
    expect(other.step_id).toBe(first.step_id);
    await expect
      .poll(async () => (await view(s, 'notebook/t'))?.state, POLL)
      .toEqual({ notes: ['once'] });
    expect(await messages(s, first.run_id)).toHaveLength(1);
    // The same token to another actor is another message.
    await send(s, 'notebook/t2', { message: { text: 'once' }, client_token: 'm-1' });
  });

  it('refuses, storing nothing: an unknown agent 404, a key of the wrong form 400, a message failing the input 422, a malformed body 400', async () => {
    const s = await start();
    expectApiError(
      await s.api('POST', '/v1/agents/nobody/k/messages', { message: {} }),
      404,
      'NOT_FOUND',
    );
    for (const key of ['bad key', 'a'.repeat(129), 'slash%2Fin', 'caf%C3%A9']) {
      const res = await s.api('POST', `/v1/agents/notebook/${key}/messages`, {
        message: { text: 'x' },
      });
      expectApiError(res, 400, 'INVALID_PARAMS');
      expect((res.body as { error: { details: unknown } }).error.details).toMatchObject({
        param: 'key',
      });
    }
    // 128 characters is the bound, not past it.
    await send(s, `notebook/${'k'.repeat(128)}`, { message: { text: 'long key' } });
    const invalid = await s.api('POST', '/v1/agents/notebook/n/messages', {
      message: { text: 42 },
    });
    expectApiError(invalid, 422, 'SCHEMA_VIOLATION');
    expect(JSON.stringify(invalid.body)).toContain('text');
    expectApiError(
      await s.api('POST', '/v1/agents/notebook/n/messages', { message: { text: 'x', extra: 1 } }),
      422,
      'SCHEMA_VIOLATION',
    );
    for (const body of [
      {},
      { message: { text: 'x' }, colour: 'red' },
      { message: {}, client_token: '' },
    ]) {
      expectApiError(
        await s.api('POST', '/v1/agents/notebook/n/messages', body),
        400,
        'INVALID_PARAMS',
      );
    }
    // Nothing of the refused was stored: the actor does not exist.
    expectApiError(await s.api('GET', '/v1/agents/notebook/n'), 404, 'NOT_FOUND');
    const list = await s.api('GET', '/v1/agents');
    expect((list.body as { agents: View[] }).agents.map((a) => a.key)).toEqual(['k'.repeat(128)]);
  });

  it('a full mailbox is 429 QUEUE_FULL with Retry-After, nothing queued; the queued messages go on once the actor is free', async () => {
    const s = await start();
    const open = gate('q');
    const first = await send(s, 'held/q', { message: { n: 1 } });
    await expect.poll(async () => (await view(s, 'held/q'))?.status, POLL).toBe('busy');
    await send(s, 'held/q', { message: { n: 2 } });
    expect((await view(s, 'held/q'))?.mailbox_depth).toBe(1);
    const full = await s.api('POST', '/v1/agents/held/q/messages', { message: { n: 3 } });
    expectApiError(full, 429, 'QUEUE_FULL');
    expect(Number(full.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((full.body as { error: { details: unknown } }).error.details).toMatchObject({
      max_queue: 1,
    });
    expect((await view(s, 'held/q'))?.mailbox_depth).toBe(1);
    expect(await messages(s, first.run_id)).toHaveLength(2);
    open();
    await expect.poll(async () => (await view(s, 'held/q'))?.state, POLL).toEqual({ seen: [1, 2] });
    expect(await messages(s, first.run_id)).toHaveLength(2);
  });

  it("a busy actor whose policy is reject is 409 CONFLICT, nothing accepted; its own message's token again is 200", async () => {
    const s = await start();
    const open = gate('r');
    const first = await send(s, 'held-reject/r', { message: { n: 1 }, client_token: 'first' });
    await expect.poll(async () => (await view(s, 'held-reject/r'))?.status, POLL).toBe('busy');
    expectApiError(
      await s.api('POST', '/v1/agents/held-reject/r/messages', { message: { n: 2 } }),
      409,
      'CONFLICT',
    );
    const again = await send(
      s,
      'held-reject/r',
      { message: { n: 1 }, client_token: 'first' },
      {},
      200,
    );
    expect(again.step_id).toBe(first.step_id);
    expect(await messages(s, first.run_id)).toHaveLength(1);
    open();
    await expect
      .poll(async () => (await view(s, 'held-reject/r'))?.state, POLL)
      .toEqual({ seen: [1] });
    // Free again, it takes the next. Its last message's end is stored (the state above) a
    // moment before the actor stops looking for another: a message in that moment is 409 too,
    // and nothing of it is kept; the client sends it again.
    await expect
      .poll(
        async () =>
          (await s.api('POST', '/v1/agents/held-reject/r/messages', { message: { n: 2 } })).status,
        POLL,
      )
      .toBe(202);
    await expect
      .poll(async () => (await view(s, 'held-reject/r'))?.state, POLL)
      .toEqual({ seen: [1, 2] });
  });
});

describe('GET /v1/agents/{name}/{key}', () => {
  it('is 404 for an actor never messaged and for an unknown agent, 400 for a bad key; a waiting actor shows waiting', async () => {
    const s = await start();
    expectApiError(await s.api('GET', '/v1/agents/notebook/never'), 404, 'NOT_FOUND');
    expectApiError(await s.api('GET', '/v1/agents/nobody/k'), 404, 'NOT_FOUND');
    expectApiError(await s.api('GET', '/v1/agents/notebook/bad%20key'), 400, 'INVALID_PARAMS');
    expectApiError(await s.api('GET', '/v1/agents/notebook/k?colour=red'), 400, 'INVALID_PARAMS');
    await send(s, 'follow-up/w', { message: { text: 'later', after_ms: 3_600_000 } });
    await expect.poll(async () => (await view(s, 'follow-up/w'))?.status, POLL).toBe('waiting');
    const v = await view(s, 'follow-up/w');
    expect(Date.parse(v?.next_timer_at ?? '') - Date.now()).toBeGreaterThan(3_500_000);
    expect(v?.state).toEqual({ log: [] });
  });

  it('GET …/wakes lists what the actor waits for (its sleep, its event wait), fired ones marked; 404 for an actor never messaged, 400 for a bad key', async () => {
    const s = await start();
    expectApiError(await s.api('GET', '/v1/agents/follow-up/none/wakes'), 404, 'NOT_FOUND');
    expectApiError(await s.api('GET', '/v1/agents/nobody/k/wakes'), 404, 'NOT_FOUND');
    expectApiError(
      await s.api('GET', '/v1/agents/follow-up/bad%20key/wakes'),
      400,
      'INVALID_PARAMS',
    );
    const slept = await send(s, 'follow-up/z', { message: { text: 'later', after_ms: 3_600_000 } });
    await expect.poll(async () => (await view(s, 'follow-up/z'))?.status, POLL).toBe('waiting');
    const res = await s.api('GET', '/v1/agents/follow-up/z/wakes');
    expect(res.status, res.text).toBe(200);
    const { wakes } = res.body as { wakes: Record<string, unknown>[] };
    expect(wakes).toHaveLength(1);
    expect(wakes[0]).toMatchObject({
      kind: 'sleep',
      status: 'pending',
      step_id: slept.step_id,
      event: null,
      fired_at: null,
    });
    expect(Date.parse(String(wakes[0]?.['due_at'])) - Date.now()).toBeGreaterThan(3_500_000);
    // An event wait, and once the event comes its wake is no longer pending.
    await s.api('POST', '/v1/agents/follow-up/z/cancel');
    const asked = await send(s, 'follow-up/e', { message: { text: 'q', await: 'reply' } });
    await expect.poll(async () => (await view(s, 'follow-up/e'))?.status, POLL).toBe('waiting');
    const waitsFor = (await s.api('GET', '/v1/agents/follow-up/e/wakes')).body as {
      wakes: Record<string, unknown>[];
    };
    expect(waitsFor.wakes).toMatchObject([
      { kind: 'event', status: 'pending', event: 'reply', step_id: asked.step_id },
    ]);
    await s.api('POST', '/v1/events', { name: 'reply', data: { answer: 'yes' } });
    await expect
      .poll(async () => (await view(s, 'follow-up/e'))?.state, POLL)
      .toEqual({ log: ['q:yes'] });
    const after = (await s.api('GET', '/v1/agents/follow-up/e/wakes')).body as {
      wakes: { status: string }[];
    };
    expect(after.wakes.filter((w) => w.status === 'pending')).toEqual([]);
  });
});

describe('POST /v1/agents/{name}/{key}/cancel', () => {
  it("ends the actor's open messages CANCELLED, its state kept; 404 for an actor never messaged", async () => {
    const s = await start();
    expectApiError(await s.api('POST', '/v1/agents/follow-up/none/cancel'), 404, 'NOT_FOUND');
    await send(s, 'follow-up/c', { message: { text: 'soon', await: 'first' } });
    await expect.poll(async () => (await view(s, 'follow-up/c'))?.status, POLL).toBe('waiting');
    await s.api('POST', '/v1/events', { name: 'first', data: { answer: 'yes' } });
    await expect
      .poll(async () => (await view(s, 'follow-up/c'))?.state, POLL)
      .toEqual({ log: ['soon:yes'] });
    const waiting = await send(s, 'follow-up/c', { message: { text: 'x', await: 'never' } });
    await expect.poll(async () => (await view(s, 'follow-up/c'))?.status, POLL).toBe('waiting');
    const res = await s.api('POST', '/v1/agents/follow-up/c/cancel');
    expect(res.status, res.text).toBe(202);
    expect(res.body).toEqual({ cancelled: 1 });
    await expect
      .poll(async () => (await s.api('GET', `/v1/steps/${waiting.step_id}`)).body, POLL)
      .toMatchObject({ status: 'cancelled' });
    await expect.poll(async () => (await view(s, 'follow-up/c'))?.status, POLL).not.toBe('waiting');
    expect((await view(s, 'follow-up/c'))?.state).toEqual({ log: ['soon:yes'] });
  });
});

describe("an actor's run", () => {
  it('is not completed, cancelled or given a step through the runs API (409, naming the agent routes); the actor goes on taking messages', async () => {
    const s = await start();
    const first = await send(s, 'notebook/r', { message: { text: 'one' } });
    await expect
      .poll(async () => (await view(s, 'notebook/r'))?.state, POLL)
      .toEqual({
        notes: ['one'],
      });
    const refusals = [
      await s.api('POST', `/v1/runs/${first.run_id}/complete`),
      await s.api('POST', `/v1/runs/${first.run_id}/cancel`),
      await s.api('POST', `/v1/runs/${first.run_id}/steps`, {
        type: 'agent',
        input: { agent: 'notebook', message: 'x' },
      }),
    ];
    for (const res of refusals) {
      expectApiError(res, 409, 'CONFLICT');
      expect(res.text).toContain('POST /v1/agents/notebook/r/messages');
    }
    expect((await s.api('GET', `/v1/runs/${first.run_id}`)).body).toMatchObject({
      status: 'running',
    });
    await send(s, 'notebook/r', { message: { text: 'two' } });
    await expect
      .poll(async () => (await view(s, 'notebook/r'))?.state, POLL)
      .toEqual({
        notes: ['one', 'two'],
      });
    expect(await messages(s, first.run_id)).toHaveLength(2);
  });
});

describe('GET /v1/agents', () => {
  it('lists actors newest first in pages (next → before), filtered by name, key prefix and status; a bad query is 400', async () => {
    const s = await start();
    for (const key of ['a1', 'a2', 'b1']) {
      await send(s, `notebook/${key}`, { message: { text: key } });
    }
    await send(s, 'napper/z1', { message: { text: 'zzz' } });
    await send(s, 'follow-up/f1', { message: { text: 'wait', await: 'go' } });
    await expect.poll(async () => (await view(s, 'follow-up/f1'))?.status, POLL).toBe('waiting');
    await expect.poll(async () => (await view(s, 'napper/z1'))?.status, POLL).toBe('asleep');
    await expect
      .poll(async () => (await view(s, 'notebook/b1'))?.state, POLL)
      .toEqual({
        notes: ['b1'],
      });
    const keys = async (query: string): Promise<string[]> => {
      const res = await s.api('GET', `/v1/agents${query}`);
      expect(res.status, res.text).toBe(200);
      return (res.body as { agents: View[] }).agents.map((a) => a.key);
    };
    expect(await keys('')).toEqual(['f1', 'z1', 'b1', 'a2', 'a1']);
    const page1 = (await s.api('GET', '/v1/agents?limit=4')).body as {
      agents: View[];
      next: string | null;
    };
    expect(page1.agents.map((a) => a.key)).toEqual(['f1', 'z1', 'b1', 'a2']);
    expect(page1.next).toEqual(expect.any(String));
    const page2 = (await s.api('GET', `/v1/agents?limit=4&before=${page1.next ?? ''}`)).body as {
      agents: View[];
      next: string | null;
    };
    expect(page2).toEqual({ agents: [expect.objectContaining({ key: 'a1' })], next: null });
    expect(await keys('?name=notebook')).toEqual(['b1', 'a2', 'a1']);
    expect(await keys('?name=notebook&key_prefix=a')).toEqual(['a2', 'a1']);
    expect(await keys('?status=waiting')).toEqual(['f1']);
    // Just handled, the notebooks are awake here; the napper has left memory (asleep and awake
    // are both idle in the store: each listed actor has the status asked for).
    expect(await keys('?status=awake')).toEqual(['b1', 'a2', 'a1']);
    expect(await keys('?status=asleep')).toEqual(['z1']);
    expect(await keys('?status=asleep,awake&limit=2')).toEqual(['z1', 'b1']);
    expect(await keys('?status=busy')).toEqual([]);
    expect(await keys('?status=waiting,awake&name=notebook')).toEqual(['b1', 'a2', 'a1']);
    for (const q of [
      '?status=sleepy',
      '?limit=0',
      '?limit=501',
      '?before=actor_x',
      '?colour=red',
    ]) {
      const res = await s.api('GET', `/v1/agents${q}`);
      expectApiError(res, 400, 'INVALID_PARAMS');
    }
    expectApiError(
      await s.api('GET', `/v1/agents?before=actor_${'0'.repeat(32)}`),
      404,
      'NOT_FOUND',
    );
  });
});

describe('per user', () => {
  it("two users' same name and key are two actors that share nothing; another user's actor is 404; an admin key reads them all", async () => {
    const s = await start(true);
    const a = await send(s, 'notebook/shared', { message: { text: 'from alice' } }, as(ALICE));
    const b = await send(s, 'notebook/shared', { message: { text: 'from bob' } }, as(BOB));
    expect(b.run_id).not.toBe(a.run_id);
    await send(s, 'notebook/alice-only', { message: { text: 'mine' } }, as(ALICE));
    await expect
      .poll(async () => (await view(s, 'notebook/alice-only', as(ALICE)))?.state, POLL)
      .toEqual({ notes: ['mine'] });
    await expect
      .poll(async () => (await view(s, 'notebook/shared', as(BOB)))?.state, POLL)
      .toEqual({ notes: ['from bob'] });
    expect((await view(s, 'notebook/shared', as(ALICE)))?.state).toEqual({
      notes: ['from alice'],
    });
    const bobReads = (path: string): Promise<ApiResponse> => s.api('GET', path, undefined, as(BOB));
    expectApiError(await bobReads('/v1/agents/notebook/alice-only'), 404, 'NOT_FOUND');
    expectApiError(await bobReads(`/v1/runs/${a.run_id}`), 404, 'NOT_FOUND');
    expectApiError(await bobReads(`/v1/steps/${a.step_id}`), 404, 'NOT_FOUND');
    expectApiError(
      await bobReads('/v1/agents/notebook/alice-only?user_id=alice'),
      403,
      'FORBIDDEN',
    );
    expectApiError(await bobReads('/v1/agents?user_id=alice'), 403, 'FORBIDDEN');
    const bobs = (await bobReads('/v1/agents')).body as { agents: View[] };
    expect(bobs.agents.map((v) => [v.user_id, v.key])).toEqual([['bob', 'shared']]);
    // Bob's cancel reaches his own actor only: alice's is not his to name.
    expectApiError(
      await s.api('POST', '/v1/agents/notebook/alice-only/cancel', undefined, as(BOB)),
      404,
      'NOT_FOUND',
    );

    const admin = (path: string): Promise<ApiResponse> => s.api('GET', path, undefined, as(OPS));
    const all = (await admin('/v1/agents')).body as { agents: View[] };
    expect(all.agents.map((v) => [v.user_id, v.key])).toEqual([
      ['alice', 'alice-only'],
      ['bob', 'shared'],
      ['alice', 'shared'],
    ]);
    const alices = (await admin('/v1/agents?user_id=alice')).body as { agents: View[] };
    expect(alices.agents.map((v) => v.key)).toEqual(['alice-only', 'shared']);
    const read = await admin('/v1/agents/notebook/alice-only?user_id=alice');
    expect(read.status, read.text).toBe(200);
    expect(read.body).toMatchObject({ user_id: 'alice', state: { notes: ['mine'] } });
    expectApiError(await bobReads('/v1/agents/notebook/alice-only/wakes'), 404, 'NOT_FOUND');
    expectApiError(
      await bobReads('/v1/agents/notebook/alice-only/wakes?user_id=alice'),
      403,
      'FORBIDDEN',
    );
    const wakes = await admin('/v1/agents/notebook/alice-only/wakes?user_id=alice');
    expect(wakes.status, wakes.text).toBe(200);
    expect(wakes.body).toEqual({ wakes: [] });
    // Without user_id an admin reads its own actors, of which it has none.
    expectApiError(await admin('/v1/agents/notebook/alice-only'), 404, 'NOT_FOUND');
    expect((await admin(`/v1/runs/${a.run_id}`)).status).toBe(200);
  });
});
