/**
 * A flow's name and its identity (API.md "Flows", docs/http-api.md "Flows"): a flow is its
 * content (NERVE-4001 hashes ast, tools and config, not the name), so the same content posted
 * under another name is the flow stored before — and the 200 says so: `name` is the stored
 * flow's, `posted_name` the name that was not kept. Its runs carry the stored name as their
 * `entry`.
 */
import { describe, expect, it } from 'vitest';
import { useTestServers } from '../support/server.js';

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
});
