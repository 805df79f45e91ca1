/**
 * Schedules over HTTP (API.md, "Durable agents"; issue 46): `POST /v1/schedules` (201; 400
 * naming a cron that does not parse, a bad time zone, overlap or key; 404 an unknown agent; 422
 * a message the agent's input refuses — nothing stored), listed, read, paused, resumed and
 * deleted (204); each firing a message with client_token `schedule:<id>:<due ms>`; another
 * user's schedule 404, an admin key reaching all. Crons with seconds keep the waits short.
 */
import { describe, expect, it } from 'vitest';
import { followUp, notebook } from '../../examples/index.js';
import { expectApiError, POLL, useTestServers, type TestServer } from '../support/server.js';

const servers = useTestServers('server-schedules');

const ALICE = 'alice-key-0123456789';
const BOB = 'bob-key-01234567890';
const OPS = 'ops-admin-key-0123456';
const as = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });

function start(withKeys = false): Promise<TestServer> {
  return servers.start({
    runtime: { agents: [notebook, followUp] },
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

interface Schedule {
  readonly schedule_id: string;
  readonly status: string;
  readonly next_at: string | null;
  readonly [field: string]: unknown;
}

const notes = async (s: TestServer, key: string): Promise<string[]> => {
  const res = await s.api('GET', `/v1/agents/notebook/${key}`);
  return res.status === 200 ? (res.body as { state: { notes: string[] } }).state.notes : [];
};

/**
 * A per-second schedule read back is the one made, its `next_at` (a whole second) and
 * `updated_at` moved on by any firing since: a tick can fall between two reads.
 */
function expectSameOrLater(read: unknown, made: Schedule): void {
  const got = read as Schedule;
  expect(got).toEqual({
    ...made,
    next_at: expect.any(String) as string,
    updated_at: expect.any(String) as string,
  });
  const next = Date.parse(got.next_at ?? '');
  expect(next).toBeGreaterThanOrEqual(Date.parse(made.next_at ?? ''));
  expect(next % 1_000).toBe(0);
  expect(Date.parse(got.updated_at as string)).toBeGreaterThanOrEqual(
    Date.parse(made.updated_at as string),
  );
}

/** Resolves once the actor has no message open (a firing in flight has been handled). */
async function settled(s: TestServer, key: string): Promise<void> {
  await expect
    .poll(async () => {
      const v = (await s.api('GET', `/v1/agents/notebook/${key}`)).body as {
        status: string;
        mailbox_depth: number;
      };
      return v.status !== 'busy' && v.mailbox_depth === 0;
    }, POLL)
    .toBe(true);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('schedules', () => {
  it('a schedule fires its message at each time of its cron (client_token schedule:<id>:<ms>); pause stops it, resume starts it again, delete removes it', async () => {
    const s = await start();
    const made = await s.api('POST', '/v1/schedules', {
      agent: 'notebook',
      key: 'ticks',
      message: { text: 'tick' },
      cron: '* * * * * *',
    });
    expect(made.status, made.text).toBe(201);
    const schedule = made.body as Schedule;
    expect(schedule).toEqual({
      schedule_id: expect.stringMatching(/^sched_/) as string,
      agent: 'notebook',
      key: 'ticks',
      message: { text: 'tick' },
      cron: '* * * * * *',
      timezone: 'UTC',
      overlap: 'skip',
      catchup: false,
      status: 'active',
      next_at: expect.any(String) as string,
      created_at: expect.any(String) as string,
      updated_at: expect.any(String) as string,
    });
    const next = Date.parse(schedule.next_at ?? '');
    expect(next - Date.now()).toBeLessThanOrEqual(1_000);
    expect(new Date(next).toISOString()).toBe(schedule.next_at);
    const id = schedule.schedule_id;
    const listed = (await s.api('GET', '/v1/schedules')).body as { schedules: unknown[] };
    expect(listed.schedules).toHaveLength(1);
    expectSameOrLater(listed.schedules[0], schedule);
    expectSameOrLater((await s.api('GET', `/v1/schedules/${id}`)).body, schedule);

    await expect.poll(async () => (await notes(s, 'ticks')).length, POLL).toBeGreaterThanOrEqual(2);
    const view = (await s.api('GET', '/v1/agents/notebook/ticks')).body as { run_id: string };
    const steps = (await s.api('GET', `/v1/runs/${view.run_id}/steps`)).body as {
      client_token: string;
    }[];
    for (const step of steps) {
      const m = new RegExp(`^schedule:${id}:(\\d+)$`).exec(step.client_token);
      expect(m, step.client_token).not.toBeNull();
      // Each firing at a whole second of the cron.
      expect(Number(m?.[1]) % 1_000).toBe(0);
    }

    const paused = await s.api('POST', `/v1/schedules/${id}/pause`);
    expect(paused.status, paused.text).toBe(200);
    expect(paused.body).toMatchObject({ schedule_id: id, status: 'paused' });
    await settled(s, 'ticks');
    const before = (await notes(s, 'ticks')).length;
    await sleep(2_200);
    expect((await notes(s, 'ticks')).length).toBe(before);

    const resumed = await s.api('POST', `/v1/schedules/${id}/resume`, {});
    expect(resumed.status, resumed.text).toBe(200);
    expect(resumed.body).toMatchObject({ status: 'active' });
    expect(Date.parse((resumed.body as Schedule).next_at ?? '')).toBeGreaterThan(
      Date.now() - 1_000,
    );
    await expect.poll(async () => (await notes(s, 'ticks')).length, POLL).toBeGreaterThan(before);

    const removed = await s.api('DELETE', `/v1/schedules/${id}`);
    expect(removed.status).toBe(204);
    expect(removed.text).toBe('');
    expectApiError(await s.api('GET', `/v1/schedules/${id}`), 404, 'NOT_FOUND');
    expectApiError(await s.api('DELETE', `/v1/schedules/${id}`), 404, 'NOT_FOUND');
    expectApiError(await s.api('POST', `/v1/schedules/${id}/pause`), 404, 'NOT_FOUND');
    expect((await s.api('GET', '/v1/schedules')).body).toEqual({ schedules: [] });
    await settled(s, 'ticks');
    const after = (await notes(s, 'ticks')).length;
    await sleep(1_500);
    expect((await notes(s, 'ticks')).length).toBe(after);
  });

  it('takes a time zone and an overlap; next_at is read in the zone', async () => {
    const s = await start();
    const res = await s.api('POST', '/v1/schedules', {
      agent: 'notebook',
      key: 'daily',
      message: { text: 'morning' },
      cron: '0 9 * * *',
      timezone: 'Asia/Tokyo',
      overlap: 'queue',
    });
    expect(res.status, res.text).toBe(201);
    const schedule = res.body as Schedule;
    expect(schedule).toMatchObject({ timezone: 'Asia/Tokyo', overlap: 'queue' });
    // 09:00 in Tokyo is 00:00 UTC.
    expect(schedule.next_at).toMatch(/T00:00:00\.000Z$/);
    // A daily schedule does not move between reads: both reads give back what was made.
    expect((await s.api('GET', '/v1/schedules')).body).toEqual({ schedules: [schedule] });
    expect((await s.api('GET', `/v1/schedules/${schedule.schedule_id}`)).body).toEqual(schedule);
  });

  it('refuses, storing nothing: a cron that does not parse (400 naming it), a bad time zone, overlap or key (400), an unknown agent (404), a message the input refuses (422)', async () => {
    const s = await start();
    const base = { agent: 'notebook', key: 'k', message: { text: 'x' }, cron: '0 * * * *' };
    for (const cron of ['not a cron', '* * * *', '61 * * * *', '* * * * * * *']) {
      const res = await s.api('POST', '/v1/schedules', { ...base, cron });
      expectApiError(res, 400, 'INVALID_PARAMS');
      const { error } = res.body as { error: { message: string; details: unknown } };
      expect(error.message).toContain(cron);
      expect(error.details).toMatchObject({ param: 'cron' });
    }
    const zone = await s.api('POST', '/v1/schedules', { ...base, timezone: 'Mars/Olympus' });
    expectApiError(zone, 400, 'INVALID_PARAMS');
    expect((zone.body as { error: { details: unknown } }).error.details).toMatchObject({
      param: 'timezone',
    });
    for (const body of [
      { ...base, overlap: 'sometimes' },
      { ...base, key: 'bad key' },
      { ...base, catchup: 'yes' },
      { ...base, colour: 'red' },
      { agent: 'notebook', key: 'k', cron: '0 * * * *' },
    ]) {
      expectApiError(await s.api('POST', '/v1/schedules', body), 400, 'INVALID_PARAMS');
    }
    expectApiError(
      await s.api('POST', '/v1/schedules', { ...base, agent: 'nobody' }),
      404,
      'NOT_FOUND',
    );
    expectApiError(
      await s.api('POST', '/v1/schedules', { ...base, message: { text: 7 } }),
      422,
      'SCHEMA_VIOLATION',
    );
    expect((await s.api('GET', '/v1/schedules')).body).toEqual({ schedules: [] });
    expectApiError(await s.api('GET', '/v1/schedules/sched_nope'), 404, 'NOT_FOUND');
    expectApiError(await s.api('GET', '/v1/schedules/not-a-schedule'), 404, 'NOT_FOUND');
  });

  it("another user's schedule is 404 to read, pause, resume or delete; an admin key lists and reaches every user's", async () => {
    const s = await start(true);
    const body = { agent: 'notebook', key: 'k', message: { text: 'x' }, cron: '0 0 1 1 *' };
    const mine = (await s.api('POST', '/v1/schedules', body, as(ALICE))).body as Schedule;
    const bobs = (await s.api('POST', '/v1/schedules', body, as(BOB))).body as Schedule;
    const id = mine.schedule_id;
    const ids = async (key: string): Promise<string[]> =>
      (
        (await s.api('GET', '/v1/schedules', undefined, as(key))).body as { schedules: Schedule[] }
      ).schedules.map((x) => x.schedule_id);
    expect(await ids(ALICE)).toEqual([id]);
    expect(await ids(BOB)).toEqual([bobs.schedule_id]);
    expect(await ids(OPS)).toEqual([id, bobs.schedule_id]);
    for (const [method, path] of [
      ['GET', `/v1/schedules/${id}`],
      ['POST', `/v1/schedules/${id}/pause`],
      ['POST', `/v1/schedules/${id}/resume`],
      ['DELETE', `/v1/schedules/${id}`],
    ] as const) {
      expectApiError(await s.api(method, path, undefined, as(BOB)), 404, 'NOT_FOUND');
    }
    expect((await s.api('GET', `/v1/schedules/${id}`, undefined, as(ALICE))).body).toMatchObject({
      status: 'active',
    });
    const paused = await s.api('POST', `/v1/schedules/${id}/pause`, undefined, as(OPS));
    expect(paused.body).toMatchObject({ schedule_id: id, status: 'paused' });
    expect((await s.api('GET', `/v1/schedules/${id}`, undefined, as(ALICE))).body).toMatchObject({
      status: 'paused',
    });
    expect((await s.api('DELETE', `/v1/schedules/${id}`, undefined, as(OPS))).status).toBe(204);
    expect(await ids(ALICE)).toEqual([]);
  });
});
