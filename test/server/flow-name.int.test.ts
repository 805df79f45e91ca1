/**
 * A flow's name and its identity (API.md "Flows", docs/http-api.md "Flows"): a flow is its
 * content (NERVE-4001 hashes ast, tools and config, not the name), so the same content posted
 * under another name is the flow stored before — and the 200 says so: `name` is the stored
 * flow's, `posted_name` the name that was not kept. Its runs carry the stored name as their
 * `entry`, unless one is made with `entry` set to the name its caller used (issue 45): then it
 * is that name, in its body, in `GET /v1/runs` and under `?entry=`.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { expectApiError, useTestServers, type ApiResponse } from '../support/server.js';

const servers = useTestServers('server-flow-name');

describe("POST /v1/flows: a flow's name is not its identity", () => {
  it('the same content under another name is 200 with the stored flow, its own name and the posted one in posted_name', async () => {
    const s = await servers.start();
    const content = { ast: { steps: ['greet'] }, config: { tone: 'warm' } };
    const hello = await s.api('POST', '/v1/flows', { name: 'hello', ...content });
    expect(hello.status).toBe(201);
    const { flow_id, hash } = hello.body as { flow_id: string; hash: string };
    expect(hello.body).toEqual({ flow_id, hash, name: 'hello' });

    const trip = await s.api('POST', '/v1/flows', { name: 'trip', ...content });
    expect(trip.status).toBe(200);
    expect(trip.body).toEqual({ flow_id, hash, name: 'hello', posted_name: 'trip' });

    // The same name again: nothing to say.
    const again = await s.api('POST', '/v1/flows', { name: 'hello', ...content });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ flow_id, hash, name: 'hello' });

    // What is stored, and what a run of it is listed as, is the first name.
    expect((await s.api('GET', `/v1/flows/${flow_id}`)).body).toMatchObject({ name: 'hello' });
    const run = await s.api('POST', `/v1/flows/${flow_id}/runs`, {});
    expect(run.status).toBe(201);
    expect(run.body).toMatchObject({ entry: 'hello' });

    // Other content under the name `trip` is a flow of its own, named `trip`.
    const other = await s.api('POST', '/v1/flows', { name: 'trip', ast: { steps: ['fly'] } });
    expect(other.status).toBe(201);
    expect(other.body).toEqual({
      flow_id: expect.not.stringMatching(flow_id) as string,
      hash: expect.not.stringMatching(hash) as string,
      name: 'trip',
    });
  });

  it('a run made with the posted name as its entry is listed under that name: its body, GET /v1/runs and ?entry=', async () => {
    const s = await servers.start();
    const content = { ast: { steps: ['greet', randomUUID()] } };
    const hello = (await s.api('POST', '/v1/flows', { name: 'hello', ...content })).body as {
      flow_id: string;
    };
    const trip = await s.api('POST', '/v1/flows', { name: 'trip', ...content });
    expect(trip.body).toMatchObject({ flow_id: hello.flow_id, name: 'hello', posted_name: 'trip' });

    const asPosted = await s.api('POST', `/v1/flows/${hello.flow_id}/runs`, { entry: 'trip' });
    expect(asPosted.status, asPosted.text).toBe(201);
    const runId = (asPosted.body as { run_id: string }).run_id;
    expect(asPosted.body).toMatchObject({ flow_id: hello.flow_id, entry: 'trip' });
    const asStored = await s.api('POST', `/v1/flows/${hello.flow_id}/runs`, {});
    const storedId = (asStored.body as { run_id: string }).run_id;
    expect(asStored.body).toMatchObject({ entry: 'hello' });

    expect((await s.api('GET', `/v1/runs/${runId}`)).body).toMatchObject({ entry: 'trip' });
    const listed = (path: string) =>
      s.api('GET', path).then((r: ApiResponse) => {
        expect(r.status, r.text).toBe(200);
        return (r.body as { run_id: string; entry: string }[]).map((run) => [
          run.run_id,
          run.entry,
        ]);
      });
    expect(await listed('/v1/runs?limit=10')).toEqual([
      [storedId, 'hello'],
      [runId, 'trip'],
    ]);
    expect(await listed('/v1/runs?entry=trip')).toEqual([[runId, 'trip']]);
    expect(await listed('/v1/runs?entry=hello')).toEqual([[storedId, 'hello']]);
    // Ended, it keeps the name.
    expect((await s.api('POST', `/v1/runs/${runId}/complete`)).status).toBe(200);
    expect(await listed('/v1/runs?entry=trip&status=completed')).toEqual([[runId, 'trip']]);
  });

  it.each([
    ['empty', ''],
    ['past 256 characters', 'x'.repeat(257)],
    ["a workflow thread's", 'workflow:review'],
    ['not a string', 7],
  ])(
    'refuses a run entry that is %s: 400 INVALID_PARAMS naming entry, no run made',
    async (_, entry) => {
      const s = await servers.start();
      const flow = (await s.api('POST', '/v1/flows', { name: 'hello' })).body as {
        flow_id: string;
      };
      const res = await s.api('POST', `/v1/flows/${flow.flow_id}/runs`, { entry });
      expectApiError(res, 400, 'INVALID_PARAMS');
      const { issues } = (res.body as { error: { details: { issues: { path: unknown[] }[] } } })
        .error.details;
      expect(issues.map((i) => i.path)).toEqual([['entry']]);
      expect((await s.api('GET', '/v1/runs')).body).toEqual([]);
    },
  );
});
