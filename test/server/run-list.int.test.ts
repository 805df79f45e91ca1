/**
 * The list endpoints the server adds to API.md, over real HTTP: `GET /v1/runs` (the caller's
 * runs, newest first, by status, `limit` 1..500, default 50) and `GET /v1/runs/{run_id}/steps`
 * (a run's steps in creation order, the tree by `parent_step_id`). Every item is the body the
 * single read (`GET /v1/runs/{id}`, `GET /v1/steps/{id}`) answers; another user's run is 404.
 */
import { describe, expect, it } from 'vitest';
import { expectApiError, useTestServers, type TestServer } from '../support/server.js';

const servers = useTestServers('server-run-list');

const KEYS = {
  alice: 'alice-key-0123456789abcdef',
  bob: 'bob-key-0123456789abcdefgh',
  admin: 'admin-key-0123456789abcdefg',
};
const as = (who: keyof typeof KEYS): Record<string, string> => ({
  authorization: `Bearer ${KEYS[who]}`,
});

function startWithKeys(): Promise<TestServer> {
  return servers.start({
    server: {
      keys: [
        { key: KEYS.alice, user_id: 'alice' },
        { key: KEYS.bob, user_id: 'bob' },
        { key: KEYS.admin, user_id: 'ops', permissions: ['read', 'admin'] },
      ],
    },
  });
}

interface Listed {
  readonly run_id: string;
  readonly status: string;
}

async function listIds(
  s: TestServer,
  query = '',
  headers: Record<string, string> = {},
): Promise<string[]> {
  const res = await s.api('GET', `/v1/runs${query}`, undefined, headers);
  expect(res.status, res.text).toBe(200);
  return (res.body as Listed[]).map((r) => r.run_id);
}

describe('GET /v1/runs', () => {
  it('lists the runs newest first, each exactly as GET /v1/runs/{run_id} answers it', async () => {
    const s = await servers.start();
    expect((await s.api('GET', '/v1/runs')).body).toEqual([]);
    const made = [];
    for (let i = 0; i < 3; i++) made.push(await s.newRun({ seed: i }));
    const res = await s.api('GET', '/v1/runs');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const runs = res.body as Listed[];
    expect(runs.map((r) => r.run_id)).toEqual(made.map((r) => r.run_id).reverse());
    for (const run of runs) {
      expect(run).toEqual((await s.api('GET', `/v1/runs/${run.run_id}`)).body);
    }
  });

  it('keeps the runs of the statuses asked for, one or several comma-separated', async () => {
    const s = await servers.start();
    const running = await s.newRun();
    const completed = await s.newRun();
    expect((await s.api('POST', `/v1/runs/${completed.run_id}/complete`)).status).toBe(200);
    const other = await s.newRun();

    expect(await listIds(s, '?status=completed')).toEqual([completed.run_id]);
    expect(await listIds(s, '?status=running')).toEqual([other.run_id, running.run_id]);
    expect(await listIds(s, '?status=running,completed')).toEqual([
      other.run_id,
      completed.run_id,
      running.run_id,
    ]);
    expect(await listIds(s, '?status=failed,cancelled')).toEqual([]);
    expect(await listIds(s, '?status=completed&limit=1')).toEqual([completed.run_id]);
  });

  it('answers 400 INVALID_PARAMS naming the parameter for an unknown status, an unknown or repeated parameter', async () => {
    const s = await servers.start();
    for (const query of ['?status=done', '?status=running,', '?status=', '?status=RUNNING']) {
      const res = await s.api('GET', `/v1/runs${query}`);
      expectApiError(res, 400, 'INVALID_PARAMS');
      expect(res.body, query).toMatchObject({ error: { details: { param: 'status' } } });
    }
    const unknown = await s.api('GET', '/v1/runs?state=running');
    expectApiError(unknown, 400, 'INVALID_PARAMS');
    expect(unknown.body).toMatchObject({ error: { details: { param: 'state' } } });
    const twice = await s.api('GET', '/v1/runs?status=running&status=completed');
    expectApiError(twice, 400, 'INVALID_PARAMS');
    expect(twice.body).toMatchObject({ error: { details: { param: 'status' } } });
  });

  it('answers 50 runs by default, the newest; `limit` 1..500 takes that many, anything else is 400 naming limit', async () => {
    const s = await servers.start();
    const made: string[] = [];
    for (let i = 0; i < 52; i++) made.push((await s.newRun()).run_id);
    const newest = [...made].reverse();

    expect(await listIds(s)).toEqual(newest.slice(0, 50));
    expect(await listIds(s, '?limit=2')).toEqual(newest.slice(0, 2));
    expect(await listIds(s, '?limit=1')).toEqual(newest.slice(0, 1));
    expect(await listIds(s, '?limit=500')).toEqual(newest);

    for (const limit of ['0', '501', '-1', '1.5', 'ten', '', '1e2', '99999', '1&limit=2']) {
      const res = await s.api('GET', `/v1/runs?limit=${limit}`);
      expectApiError(res, 400, 'INVALID_PARAMS');
      expect(res.body, `limit=${limit}`).toMatchObject({ error: { details: { param: 'limit' } } });
    }
  });

  it('with API keys: a caller lists only its own runs, an admin key every run, no key is 401', async () => {
    const s = await startWithKeys();
    const a1 = await s.newRun({}, as('alice'));
    const b1 = await s.newRun({}, as('bob'));
    const a2 = await s.newRun({}, as('alice'));

    expect(await listIds(s, '', as('alice'))).toEqual([a2.run_id, a1.run_id]);
    expect(await listIds(s, '', as('bob'))).toEqual([b1.run_id]);
    expect(await listIds(s, '', as('admin'))).toEqual([a2.run_id, b1.run_id, a1.run_id]);
    // The limit counts the caller's own runs, not the store's.
    expect(await listIds(s, '?limit=1', as('bob'))).toEqual([b1.run_id]);
    expectApiError(await s.api('GET', '/v1/runs'), 401, 'UNAUTHORIZED');
    expectApiError(
      await s.api('GET', '/v1/runs', undefined, { authorization: 'Bearer not-a-key-0000000000' }),
      401,
      'UNAUTHORIZED',
    );
  });

  it("`before` goes on after a run of the page before, the caller's own only: another user's or an unknown run is 404, a malformed id 400", async () => {
    const s = await startWithKeys();
    const mine = [];
    for (let i = 0; i < 5; i++) mine.push((await s.newRun({ seed: i }, as('alice'))).run_id);
    const theirs = (await s.newRun({}, as('bob'))).run_id;
    const pages: string[][] = [];
    let query = '?limit=2';
    for (;;) {
      const page = await listIds(s, query, as('alice'));
      pages.push(page);
      if (page.length < 2) break;
      query = `?limit=2&before=${page.at(-1) ?? ''}`;
    }
    expect(pages).toEqual([[mine[4], mine[3]], [mine[2], mine[1]], [mine[0]]]);
    expect(await listIds(s, `?before=${mine[2] ?? ''}&status=running`, as('admin'))).toEqual([
      mine[1],
      mine[0],
    ]);
    expectApiError(
      await s.api('GET', `/v1/runs?before=${theirs}`, undefined, as('alice')),
      404,
      'NOT_FOUND',
    );
    expectApiError(
      await s.api('GET', `/v1/runs?before=run_${'0'.repeat(32)}`, undefined, as('alice')),
      404,
      'NOT_FOUND',
    );
    const bad = await s.api('GET', '/v1/runs?before=run_x%3Asteps', undefined, as('alice'));
    expectApiError(bad, 400, 'INVALID_PARAMS');
    expect(bad.body).toMatchObject({ error: { details: { param: 'before' } } });
  });
});

describe('GET /v1/runs/{run_id}/steps', () => {
  it("lists a run's steps in creation order, each exactly as GET /v1/steps/{step_id} answers it, the delegations linked by parent_step_id", async () => {
    const s = await servers.start();
    const run = await s.newRun({ seed: 7 });
    expect((await s.api('GET', `/v1/runs/${run.run_id}/steps`)).body).toEqual([]);
    // The trip planner delegates to calendar and flights; flights calls search_flights.
    const root = await s.submit(run.run_id, {
      type: 'agent',
      input: { agent: 'planner', message: 'Plan a trip to Berlin next Tuesday' },
    });
    await s.streamText(root);
    const tool = await s.submit(run.run_id, {
      type: 'tool_call',
      input: { tool: 'add', args: { a: 2, b: 3 } },
    });
    await s.streamText(tool);

    const res = await s.api('GET', `/v1/runs/${run.run_id}/steps`);
    expect(res.status).toBe(200);
    const steps = res.body as {
      step_id: string;
      parent_step_id: string | null;
      type: string;
      created_at: string;
    }[];
    expect(steps[0]?.step_id).toBe(root);
    expect(steps.at(-1)?.step_id).toBe(tool);
    expect(steps.map((st) => st.type)).toEqual([
      'agent',
      'agent',
      'agent',
      'tool_call',
      'tool_call',
    ]);
    // Creation order: every parent comes before its children, timestamps never go back.
    const seen = new Set<string>();
    for (const step of steps) {
      if (step.parent_step_id !== null) expect(seen).toContain(step.parent_step_id);
      seen.add(step.step_id);
    }
    const times = steps.map((st) => Date.parse(st.created_at));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    const children = steps.filter((st) => st.parent_step_id === root).map((st) => st.type);
    expect(children).toEqual(['agent', 'agent']);
    const flights = steps[2]?.step_id;
    expect(steps[3]).toMatchObject({ type: 'tool_call', parent_step_id: flights });
    expect(steps[4]).toMatchObject({ parent_step_id: null });

    for (const step of steps) {
      expect(step).toEqual((await s.api('GET', `/v1/steps/${step.step_id}`)).body);
    }
  });

  it("answers 404 NOT_FOUND for an unknown run and for another user's run, as GET /v1/runs/{run_id} does", async () => {
    const s = await startWithKeys();
    const run = await s.newRun({}, as('alice'));
    await s.submit(
      run.run_id,
      { type: 'tool_call', input: { tool: 'add', args: { a: 1, b: 1 } } },
      as('alice'),
    );
    const mine = await s.api('GET', `/v1/runs/${run.run_id}/steps`, undefined, as('alice'));
    expect(mine.status).toBe(200);
    expect(mine.body).toHaveLength(1);
    expect(
      (await s.api('GET', `/v1/runs/${run.run_id}/steps`, undefined, as('admin'))).body,
    ).toEqual(mine.body);

    const theirs = await s.api('GET', `/v1/runs/${run.run_id}/steps`, undefined, as('bob'));
    expectApiError(theirs, 404, 'NOT_FOUND');
    expect(theirs.body).toMatchObject({ error: { details: { kind: 'run', id: run.run_id } } });
    expectApiError(
      await s.api('GET', '/v1/runs/run_nope/steps', undefined, as('alice')),
      404,
      'NOT_FOUND',
    );
    expectApiError(await s.api('GET', `/v1/runs/${run.run_id}/steps`), 401, 'UNAUTHORIZED');
  });
});

describe('/openapi.json', () => {
  it('documents both list endpoints, their parameters and their bodies', async () => {
    const s = await servers.start();
    const doc = (await s.api('GET', '/openapi.json')).body as {
      paths: Record<string, Record<string, { parameters?: { name: string }[]; responses: object }>>;
    };
    const runs = doc.paths['/v1/runs']?.['get'];
    expect(runs?.parameters?.map((p) => p.name).sort()).toEqual([
      'before',
      'entry',
      'limit',
      'since',
      'status',
      'until',
    ]);
    expect(JSON.stringify(runs?.responses)).toContain('#/components/schemas/Run');
    const steps = doc.paths['/v1/runs/{run_id}/steps']?.['get'];
    expect(steps?.parameters?.map((p) => p.name)).toEqual(['run_id']);
    expect(JSON.stringify(steps?.responses)).toContain('#/components/schemas/Step');
    expect(doc.paths['/v1/runs/{run_id}/steps']?.['post']).toBeDefined();
  });
});
