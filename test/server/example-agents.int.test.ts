/**
 * API.md's two example durable agents as `axon serve` serves them on its embedded defaults
 * (issue 46), through a real `axon serve` process over real HTTP: `notebook` appends each
 * message's text and answers `{ count }`; `follow-up` logs its text after a durable sleep of
 * `after_ms` — kept across a kill -9 of the server — or after the event its `await` names
 * (`POST /v1/events`, data `{ answer }`); and `axon.yaml`'s `schedules:` message them. Under
 * `http-on-postgres` the server keeps its store in a PostgreSQL schema of its own.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { spawnAxon, type FleetProcess } from '../support/axon-process.js';
import { expectApiError, POLL, request, type ApiResponse } from '../support/server.js';

const ON_POSTGRES = process.env['AXON_TEST_STORE'] === 'postgres';
const POSTGRES_URL =
  process.env['AXON_TEST_POSTGRES'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const root = mkdtempSync(join(tmpdir(), 'axon-example-agents-'));
const spawned: FleetProcess[] = [];
const schemas: string[] = [];
afterEach(async () => {
  for (const p of spawned.splice(0)) {
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await p.exited;
  }
});
afterAll(async () => {
  rmSync(root, { recursive: true, force: true });
  if (schemas.length === 0) return;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  for (const s of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  await admin.end();
});

/** A data dir and its `axon.yaml` (`extra` appended): on PostgreSQL, a schema of its own. */
function dataDir(extra = ''): string {
  const dir = mkdtempSync(join(root, 'd-'));
  let yaml = extra;
  if (ON_POSTGRES) {
    const schema = `axon_test_${randomUUID().replaceAll('-', '').slice(0, 20)}`;
    schemas.push(schema);
    yaml = `store:\n  postgres: ${POSTGRES_URL}\n  schema: ${schema}\n${yaml}`;
  }
  writeFileSync(join(dir, 'axon.yaml'), yaml);
  return dir;
}

/** `axon serve` on a free port in `dir` (its data there, its config `dir/axon.yaml`). */
async function serve(dir: string): Promise<{ url: string; process: FleetProcess }> {
  const { process, match } = await spawnAxon(
    ['serve', '--port', '0', '--data-dir', join(dir, 'data'), '--config', join(dir, 'axon.yaml')],
    { AXON_SCRIPTED_TOKEN_MS: '1' },
    /listening on (http:\/\/\S+) /,
    spawned,
  );
  // The store the project asks for, and no other.
  expect(process.output()).toContain(ON_POSTGRES ? 'store in PostgreSQL' : 'data in ');
  return { url: match[1] ?? '', process };
}

interface View {
  readonly status: string;
  /** Absent while the actor has never been messaged (the 404's body). */
  readonly state: Record<string, string[]>;
  readonly next_timer_at: string | null;
  readonly run_id: string;
}

const post = (url: string, path: string, body: unknown): Promise<ApiResponse> =>
  request(url, 'POST', path, body);
const view = async (url: string, path: string): Promise<View> => {
  const res = await request(url, 'GET', `/v1/agents/${path}`);
  return res.status === 200
    ? (res.body as View)
    : { status: 'none', state: {}, next_timer_at: null, run_id: '' };
};

async function send(url: string, path: string, message: unknown): Promise<string> {
  const res = await post(url, `/v1/agents/${path}/messages`, { message });
  expect(res.status, res.text).toBe(202);
  return (res.body as { step_id: string }).step_id;
}

describe('the example durable agents of axon serve', () => {
  it('notebook: each message appends its text, in order, and ends with { count }; schedules: of axon.yaml message it', async () => {
    const dir = dataDir(
      "schedules:\n  - name: tick\n    agent: notebook\n    key: ticker\n    message: { text: tick }\n    cron: '* * * * * *'\n",
    );
    const { url, process } = await serve(dir);
    expect(process.output()).toContain('axon serve: schedules: sched_tick\n');
    const steps = [];
    for (const text of ['first', 'second', 'third']) {
      steps.push(await send(url, 'notebook/customer-42', { text }));
    }
    await expect
      .poll(async () => (await view(url, 'notebook/customer-42')).state, POLL)
      .toEqual({ notes: ['first', 'second', 'third'] });
    const outputs = [];
    for (const id of steps) {
      outputs.push(
        ((await request(url, 'GET', `/v1/steps/${id}`)).body as { output: unknown }).output,
      );
    }
    expect(outputs).toEqual([{ count: 1 }, { count: 2 }, { count: 3 }]);
    expectApiError(
      await post(url, '/v1/agents/notebook/k/messages', { message: { note: 'x' } }),
      422,
      'SCHEMA_VIOLATION',
    );
    // The schedule of the file, kept as sched_tick, messages notebook/ticker every second.
    expect((await request(url, 'GET', '/v1/schedules/sched_tick')).body).toMatchObject({
      agent: 'notebook',
      key: 'ticker',
      cron: '* * * * * *',
      status: 'active',
    });
    await expect
      .poll(async () => (await view(url, 'notebook/ticker')).state['notes']?.length ?? 0, POLL)
      .toBeGreaterThanOrEqual(2);
    expect(new Set((await view(url, 'notebook/ticker')).state['notes'])).toEqual(new Set(['tick']));
  });

  it('follow-up: { text, after_ms } sleeps durably — through a kill -9 of the server — then logs its text', async () => {
    const dir = dataDir();
    const first = await serve(dir);
    await send(first.url, 'follow-up/quick', { text: 'soon', after_ms: 200 });
    await expect
      .poll(async () => (await view(first.url, 'follow-up/quick')).state, POLL)
      .toEqual({ log: ['soon'] });
    const sentAt = Date.now();
    await send(first.url, 'follow-up/ticket-7', { text: 'called back', after_ms: 1_500 });
    await expect
      .poll(async () => (await view(first.url, 'follow-up/ticket-7')).status, POLL)
      .toBe('waiting');
    const waiting = await view(first.url, 'follow-up/ticket-7');
    expect(Date.parse(waiting.next_timer_at ?? '')).toBeGreaterThanOrEqual(sentAt + 1_400);
    expect(waiting.state).toEqual({ log: [] });
    first.process.child.kill('SIGKILL');
    await first.process.exited;

    const second = await serve(dir);
    await expect
      .poll(async () => (await view(second.url, 'follow-up/ticket-7')).state, POLL)
      .toEqual({ log: ['called back'] });
    expect(Date.now()).toBeGreaterThanOrEqual(sentAt + 1_500);
  });

  it('follow-up: { text, await } waits for the event; data that is not { answer: string } wakes it not (refused), then its answer is logged', async () => {
    const dir = dataDir();
    const { url } = await serve(dir);
    const step = await send(url, 'follow-up/ticket-9', { text: 'refund', await: 'approval' });
    await expect
      .poll(async () => (await view(url, 'follow-up/ticket-9')).status, POLL)
      .toBe('waiting');
    const refused = await post(url, '/v1/events', { name: 'approval', data: { answer: 1 } });
    expect(refused.status).toBe(202);
    expect(refused.body).toMatchObject({
      woken: 0,
      refused: [{ agent: 'follow-up', key: 'ticket-9' }],
    });
    expect((await view(url, 'follow-up/ticket-9')).status).toBe('waiting');
    const woken = await post(url, '/v1/events', { name: 'approval', data: { answer: 'granted' } });
    expect(woken.body).toEqual({ woken: 1, refused: [] });
    await expect
      .poll(async () => (await view(url, 'follow-up/ticket-9')).state, POLL)
      .toEqual({ log: ['refund:granted'] });
    expect((await request(url, 'GET', `/v1/steps/${step}`)).body).toMatchObject({
      status: 'succeeded',
      output: { logged: 'refund:granted' },
    });
  });
});
