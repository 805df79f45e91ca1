/**
 * `POST /v1/events` (API.md, "Durable agents"; issue 46) over real HTTP: an event wakes the
 * caller's actors waiting for it whose `match` fits its data (202 `{ woken, refused }`); data
 * that fails a waiter's schema wakes it not and the answer names it in `refused`; data past
 * 64 KiB is 413 with nothing fired; a malformed body or event name is 400; another user's
 * waiters are never woken.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { followUp, notebook } from '../../examples/index.js';
import { defineAgent } from '../../src/actors/define-agent.js';
import { expectApiError, POLL, useTestServers, type TestServer } from '../support/server.js';

const servers = useTestServers('server-agent-events');

/** Waits for `shipped` whose data's `order` is its key; logs the data's `carrier`. */
const shipment = defineAgent({
  name: 'shipment',
  input: z.strictObject({}),
  durable: {
    state: z.object({ carrier: z.string().nullable() }),
    initial: { carrier: null },
    version: 1,
  },
  handler: async (_message, actor) => {
    const data = await actor.waitFor<{ carrier: string }>('shipped', {
      match: { order: actor.key },
    });
    return { state: { carrier: data?.carrier ?? null } };
  },
});

const ALICE = 'alice-key-0123456789';
const BOB = 'bob-key-01234567890';
const OPS = 'ops-admin-key-0123456';
const as = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });

function start(withKeys = false): Promise<TestServer> {
  return servers.start({
    runtime: { agents: [notebook, followUp, shipment] },
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

async function waiting(
  s: TestServer,
  path: string,
  message: unknown,
  headers: Record<string, string> = {},
): Promise<void> {
  const res = await s.api('POST', `/v1/agents/${path}/messages`, { message }, headers);
  expect(res.status, res.text).toBe(202);
  await expect
    .poll(async () => (await s.api('GET', `/v1/agents/${path}`, undefined, headers)).body, POLL)
    .toMatchObject({ status: 'waiting' });
}

const stateOf = async (
  s: TestServer,
  path: string,
  headers: Record<string, string> = {},
): Promise<unknown> =>
  ((await s.api('GET', `/v1/agents/${path}`, undefined, headers)).body as { state: unknown }).state;

describe('POST /v1/events', () => {
  it('wakes the waiter whose schema the data meets (202 { woken: 1 }); data failing it wakes it not and is named in refused', async () => {
    const s = await start();
    await waiting(s, 'follow-up/t', { text: 'approved', await: 'approval' });
    const refused = await s.api('POST', '/v1/events', { name: 'approval', data: { answer: 42 } });
    expect(refused.status, refused.text).toBe(202);
    expect(refused.body).toEqual({
      woken: 0,
      refused: [
        {
          agent: 'follow-up',
          key: 't',
          wake_id: expect.any(String) as string,
          issues: [expect.objectContaining({ path: ['answer'] }) as object],
        },
      ],
    });
    expect((await s.api('GET', '/v1/agents/follow-up/t')).body).toMatchObject({
      status: 'waiting',
      state: { log: [] },
    });
    // An event nobody waits for wakes nobody.
    expect(
      (await s.api('POST', '/v1/events', { name: 'other', data: { answer: 'x' } })).body,
    ).toEqual({ woken: 0, refused: [] });
    const woken = await s.api('POST', '/v1/events', { name: 'approval', data: { answer: 'yes' } });
    expect(woken.status).toBe(202);
    expect(woken.body).toEqual({ woken: 1, refused: [] });
    await expect.poll(() => stateOf(s, 'follow-up/t'), POLL).toEqual({ log: ['approved:yes'] });
    // Fired once: the same event again wakes nobody.
    expect(
      (await s.api('POST', '/v1/events', { name: 'approval', data: { answer: 'no' } })).body,
    ).toEqual({ woken: 0, refused: [] });
  });

  it('wakes only the waiters whose match fits the data', async () => {
    const s = await start();
    await waiting(s, 'shipment/order-1', {});
    await waiting(s, 'shipment/order-2', {});
    const res = await s.api('POST', '/v1/events', {
      name: 'shipped',
      data: { order: 'order-2', carrier: 'rail' },
    });
    expect(res.body).toEqual({ woken: 1, refused: [] });
    await expect.poll(() => stateOf(s, 'shipment/order-2'), POLL).toEqual({ carrier: 'rail' });
    expect((await s.api('GET', '/v1/agents/shipment/order-1')).body).toMatchObject({
      status: 'waiting',
      state: { carrier: null },
    });
  });

  it('refuses data past 64 KiB with 413 PAYLOAD_TOO_LARGE, firing nothing; a malformed body or event name is 400', async () => {
    const s = await start();
    await waiting(s, 'follow-up/big', { text: 'late', await: 'approval' });
    const big = await s.api('POST', '/v1/events', {
      name: 'approval',
      data: { answer: 'yes', pad: 'x'.repeat(64 * 1024) },
    });
    expectApiError(big, 413, 'PAYLOAD_TOO_LARGE');
    expect((big.body as { error: { details: unknown } }).error.details).toMatchObject({
      limit_bytes: 65_536,
    });
    // Just under the bound is taken.
    const near = { answer: 'no', pad: 'x'.repeat(64 * 1024 - 40) };
    expect(Buffer.byteLength(JSON.stringify(near))).toBeLessThanOrEqual(65_536);
    expect((await s.api('POST', '/v1/events', { name: 'unrelated', data: near })).status).toBe(202);
    for (const body of [
      { data: {} },
      { name: 7, data: {} },
      { name: 'approval', data: {}, colour: 'red' },
      { name: 'has space', data: {} },
      { name: '', data: {} },
    ]) {
      expectApiError(await s.api('POST', '/v1/events', body), 400, 'INVALID_PARAMS');
    }
    expect((await s.api('GET', '/v1/agents/follow-up/big')).body).toMatchObject({
      status: 'waiting',
      state: { log: [] },
    });
    // Without data, the data is null: it fails this waiter's schema.
    const none = await s.api('POST', '/v1/events', { name: 'approval' });
    expect((none.body as { refused: unknown[] }).refused).toHaveLength(1);
  });

  it("wakes the caller's own waiters only: another user's (an admin's too) leave them waiting", async () => {
    const s = await start(true);
    await waiting(s, 'follow-up/same', { text: 'alice', await: 'go' }, as(ALICE));
    await waiting(s, 'follow-up/same', { text: 'bob', await: 'go' }, as(BOB));
    const byBob = await s.api('POST', '/v1/events', { name: 'go', data: { answer: 'b' } }, as(BOB));
    expect(byBob.body).toEqual({ woken: 1, refused: [] });
    await expect
      .poll(() => stateOf(s, 'follow-up/same', as(BOB)), POLL)
      .toEqual({ log: ['bob:b'] });
    const byOps = await s.api('POST', '/v1/events', { name: 'go', data: { answer: 'o' } }, as(OPS));
    expect(byOps.body).toEqual({ woken: 0, refused: [] });
    expect(
      (await s.api('GET', '/v1/agents/follow-up/same', undefined, as(ALICE))).body,
    ).toMatchObject({
      status: 'waiting',
      state: { log: [] },
    });
    const byAlice = await s.api(
      'POST',
      '/v1/events',
      { name: 'go', data: { answer: 'a' } },
      as(ALICE),
    );
    expect(byAlice.body).toEqual({ woken: 1, refused: [] });
    await expect
      .poll(() => stateOf(s, 'follow-up/same', as(ALICE)), POLL)
      .toEqual({ log: ['alice:a'] });
  });
});
