/**
 * What the trace UI's run list and timeline read, over real HTTP: `GET /v1/runs` filtered by
 * `entry` (the flow's name) and by creation time (`since` inclusive, `until` exclusive, ISO
 * 8601 with a zone; 400 INVALID_PARAMS naming the parameter when malformed), and a step's
 * `first_token_at` — the `ts` of the first `token` event of its log, `null` for a step that
 * streamed none.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { expectApiError, useTestServers, type Run, type TestServer } from '../support/server.js';

const servers = useTestServers('server-run-list-filters');

/** A run of a new flow named `name`. */
async function runOf(s: TestServer, name: string): Promise<Run> {
  const flow = await s.api('POST', '/v1/flows', { name, ast: { id: randomUUID() } });
  expect(flow.status, flow.text).toBe(201);
  const { flow_id } = flow.body as { flow_id: string };
  const made = await s.api('POST', `/v1/flows/${flow_id}/runs`, {});
  expect(made.status, made.text).toBe(201);
  return made.body as Run;
}

async function listIds(s: TestServer, query: string): Promise<string[]> {
  const res = await s.api('GET', `/v1/runs${query}`);
  expect(res.status, res.text).toBe(200);
  return (res.body as Run[]).map((r) => r.run_id);
}

/** Runs of `names`, made in order, each created at least 5 ms after the one before. */
async function runsApart(s: TestServer, names: readonly string[]): Promise<Run[]> {
  const out: Run[] = [];
  for (const name of names) {
    const last = out.at(-1);
    if (last) while (Date.now() < Date.parse(last.created_at as string) + 5) await sleep(2);
    out.push(await runOf(s, name));
  }
  return out;
}

describe('GET /v1/runs ?entry', () => {
  it('keeps the runs of that entry (the flow’s name), with status and limit too', async () => {
    const s = await servers.start();
    const [a1, b1, a2] = await runsApart(s, ['alpha', 'beta', 'alpha']);
    if (!a1 || !b1 || !a2) throw new Error('no runs');
    expect(a1.entry).toBe('alpha');
    expect(await listIds(s, '?entry=alpha')).toEqual([a2.run_id, a1.run_id]);
    expect(await listIds(s, '?entry=beta')).toEqual([b1.run_id]);
    expect(await listIds(s, '?entry=gamma')).toEqual([]);
    expect(await listIds(s, '?entry=alpha&limit=1')).toEqual([a2.run_id]);
    expect((await s.api('POST', `/v1/runs/${a1.run_id}/complete`)).status).toBe(200);
    expect(await listIds(s, '?entry=alpha&status=completed')).toEqual([a1.run_id]);
    expect(await listIds(s, `?entry=alpha&before=${a2.run_id}`)).toEqual([a1.run_id]);
  });

  it('answers 400 INVALID_PARAMS naming entry when it is empty, too long or repeated', async () => {
    const s = await servers.start();
    for (const query of ['?entry=', `?entry=${'x'.repeat(257)}`, '?entry=a&entry=b']) {
      const res = await s.api('GET', `/v1/runs${query}`);
      expectApiError(res, 400, 'INVALID_PARAMS');
      expect(res.body).toMatchObject({ error: { details: { param: 'entry' } } });
    }
  });
});

describe('GET /v1/runs ?since ?until', () => {
  it('keeps the runs created at or after since and before until, newest first', async () => {
    const s = await servers.start();
    const [r1, r2, r3] = await runsApart(s, ['t', 't', 'u']);
    if (!r1 || !r2 || !r3) throw new Error('no runs');
    const q = (iso: unknown) => encodeURIComponent(iso as string);
    expect(await listIds(s, `?since=${q(r2.created_at)}`)).toEqual([r3.run_id, r2.run_id]);
    expect(await listIds(s, `?until=${q(r2.created_at)}`)).toEqual([r1.run_id]);
    expect(await listIds(s, `?since=${q(r1.created_at)}&until=${q(r3.created_at)}`)).toEqual([
      r2.run_id,
      r1.run_id,
    ]);
    expect(await listIds(s, `?since=${q(r1.created_at)}&until=${q(r1.created_at)}`)).toEqual([]);
    // With the other filters and a page size.
    expect(await listIds(s, `?until=${q(r3.created_at)}&limit=1`)).toEqual([r2.run_id]);
    expect(await listIds(s, `?since=${q(r1.created_at)}&entry=u`)).toEqual([r3.run_id]);
    expect(await listIds(s, `?until=${q(r3.created_at)}&before=${r2.run_id}`)).toEqual([r1.run_id]);
    // A zone other than Z: the same instant.
    const plusOne = new Date(Date.parse(r2.created_at as string) + 3_600_000)
      .toISOString()
      .replace('Z', '+01:00');
    expect(await listIds(s, `?since=${q(plusOne)}`)).toEqual([r3.run_id, r2.run_id]);
    expect(await listIds(s, '?since=2999-01-01T00:00:00Z')).toEqual([]);
  });

  it('answers 400 INVALID_PARAMS naming the parameter for a time that is not ISO 8601 with a zone, or since after until', async () => {
    const s = await servers.start();
    const bad: [string, string][] = [
      ['?since=yesterday', 'since'],
      ['?since=2026-11-28', 'since'],
      ['?until=2026-11-28T18:05:19', 'until'],
      ['?until=2026-13-45T99:00:00Z', 'until'],
      ['?since=1732816000000', 'since'],
      ['?since=2026-11-28T00:00:00Z&since=2026-11-29T00:00:00Z', 'since'],
      ['?since=2026-11-29T00:00:00Z&until=2026-11-28T00:00:00Z', 'since'],
    ];
    for (const [query, param] of bad) {
      const res = await s.api('GET', `/v1/runs${query}`);
      expectApiError(res, 400, 'INVALID_PARAMS');
      expect(res.body, query).toMatchObject({ error: { details: { param } } });
    }
  });
});

describe("a step's first_token_at", () => {
  it('is the ts of the first token of its log, between its start and its end; null for a step that streamed none', async () => {
    const s = await servers.start({ tokenDelayMs: 2 });
    const run = await s.newRun({ seed: 4 });
    const root = await s.submit(run.run_id, {
      type: 'agent',
      input: { agent: 'planner', message: 'Plan a trip to Lisbon' },
    });
    await s.streamText(root);
    const tool = await s.submit(run.run_id, {
      type: 'tool_call',
      input: { tool: 'add', args: { a: 1, b: 2 } },
    });
    await s.streamText(tool);

    const steps = (await s.api('GET', `/v1/runs/${run.run_id}/steps`)).body as {
      step_id: string;
      started_at: string;
      ended_at: string;
      first_token_at: string | null;
    }[];
    let streamed = 0;
    for (const step of steps) {
      const text = await s.streamText(step.step_id);
      const first = /event: token\ndata: (.*)\n/.exec(text)?.[1];
      if (first === undefined) {
        expect(step.first_token_at, step.step_id).toBeNull();
        continue;
      }
      streamed++;
      const { ts } = JSON.parse(first) as { ts: number };
      expect(step.first_token_at).toBe(new Date(ts).toISOString());
      const at = Date.parse(step.first_token_at ?? '');
      expect(at).toBeGreaterThanOrEqual(Date.parse(step.started_at));
      expect(at).toBeLessThanOrEqual(Date.parse(step.ended_at));
      expect((await s.api('GET', `/v1/steps/${step.step_id}`)).body).toMatchObject({
        first_token_at: step.first_token_at,
      });
    }
    expect(streamed).toBeGreaterThan(0);
    expect(steps.find((st) => st.step_id === tool)?.first_token_at).toBeNull();
  });
});
