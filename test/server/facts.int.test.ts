/**
 * A run's facts over real HTTP (NERVE-4004): `POST` and `GET /v1/runs/{run_id}/facts` with
 * `type`, `after` and `limit`, the flow's `fact_schemas`, append-only; facts a step emits, on
 * its stream as `fact` events; and `gate_eval` steps, which wait for them.
 */
import { describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import {
  expectApiError,
  openStream,
  streamFrames,
  useTestServers,
  type SseFrame,
  type TestServer,
} from '../support/server.js';

const servers = useTestServers('server-facts');

/** A server with an agent `reporter` that emits three facts of type `found`. */
async function start(): Promise<{ s: TestServer }> {
  const reporter = defineAgent({
    name: 'reporter',
    handler: async (input, ctx, runtime) => {
      for (const n of [1, 2, 3]) await runtime.emitFact({ type: 'found', data: { n } }, ctx);
      return `reported ${input.message}`;
    },
  });
  return { s: await servers.start({ runtime: { agents: [reporter] } }) };
}

const last = (frames: readonly SseFrame[]): SseFrame | undefined => frames.at(-1);

describe('facts (NERVE-4004)', () => {
  it('POST /v1/runs/{id}/facts is 201 Fact; GET lists them in append order, by type, after, limit', async () => {
    const { s } = await start();
    const run = await s.newRun();
    const posted: Record<string, unknown>[] = [];
    for (const [type, n] of [
      ['a', 1],
      ['b', 2],
      ['a', 3],
      ['a', 4],
      ['b', 5],
    ] as const) {
      const res = await s.api('POST', `/v1/runs/${run.run_id}/facts`, { type, data: { n } });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        fact_id: expect.any(String) as string,
        run_id: run.run_id,
        type,
        schema_uri: null,
        data: { n },
        emitted_by_step: null,
        ts: expect.any(Number) as number,
      });
      posted.push(res.body as Record<string, unknown>);
    }
    const get = async (query: string): Promise<unknown[]> => {
      const res = await s.api('GET', `/v1/runs/${run.run_id}/facts${query}`);
      expect(res.status).toBe(200);
      return (res.body as { data: { n: number } }[]).map((f) => f.data.n);
    };
    expect(await get('')).toEqual([1, 2, 3, 4, 5]);
    expect(await get('?type=a')).toEqual([1, 3, 4]);
    expect(await get(`?after=${String(posted[1]?.['fact_id'])}`)).toEqual([3, 4, 5]);
    expect(await get('?type=a&limit=2')).toEqual([1, 3]);
    expect(await get(`?type=b&after=${String(posted[1]?.['fact_id'])}&limit=5`)).toEqual([5]);
    expectApiError(
      await s.api('GET', `/v1/runs/${run.run_id}/facts?limit=0`),
      400,
      'INVALID_PARAMS',
    );
    expectApiError(await s.api('GET', '/v1/runs/run_nope/facts'), 404, 'NOT_FOUND');
    // Append-only: no update, no delete (a fact has no path of its own; the list takes GET
    // and POST only).
    const factId = String(posted[0]?.['fact_id']);
    for (const method of ['PUT', 'PATCH', 'DELETE']) {
      expectApiError(
        await s.api(method, `/v1/runs/${run.run_id}/facts/${factId}`, { type: 'a', data: {} }),
        404,
        'NOT_FOUND',
      );
      expectApiError(
        await s.api(method, `/v1/runs/${run.run_id}/facts`, { type: 'a', data: {} }),
        405,
        'METHOD_NOT_ALLOWED',
      );
    }
    expect(await get('')).toEqual([1, 2, 3, 4, 5]);
  });

  it("NERVE-4004: data of a type in the flow's config.fact_schemas must validate: 422 SCHEMA_VIOLATION otherwise", async () => {
    const { s } = await start();
    const flow = await s.api('POST', '/v1/flows', {
      name: 'facts',
      config: {
        fact_schemas: {
          booking: { type: 'object', required: ['ref'], properties: { ref: { type: 'string' } } },
        },
      },
    });
    const { flow_id } = flow.body as { flow_id: string };
    const run = (await s.api('POST', `/v1/flows/${flow_id}/runs`, {})).body as { run_id: string };
    for (const data of [{}, { ref: 7 }, 'booked', null]) {
      expectApiError(
        await s.api('POST', `/v1/runs/${run.run_id}/facts`, { type: 'booking', data }),
        422,
        'SCHEMA_VIOLATION',
      );
    }
    expect(
      (
        await s.api('POST', `/v1/runs/${run.run_id}/facts`, {
          type: 'booking',
          data: { ref: 'AX1' },
        })
      ).status,
    ).toBe(201);
    // Types without a schema take any data.
    expect(
      (await s.api('POST', `/v1/runs/${run.run_id}/facts`, { type: 'note', data: 'free' })).status,
    ).toBe(201);
    // A schema_uri naming no registered schema is refused too.
    expectApiError(
      await s.api('POST', `/v1/runs/${run.run_id}/facts`, {
        type: 'note',
        data: 1,
        schema_uri: 'urn:none',
      }),
      422,
      'SCHEMA_VIOLATION',
    );
    const facts = (await s.api('GET', `/v1/runs/${run.run_id}/facts`)).body as unknown[];
    expect(facts).toHaveLength(2);
    expectApiError(
      await s.api('POST', `/v1/runs/${run.run_id}/facts`, { type: 'note' }),
      400,
      'INVALID_PARAMS',
    );
  });

  it("fact events carry the Fact itself, as GET lists it, plus step_id and seq; the facts are the run's, emitted by the step", async () => {
    const { s } = await start();
    const run = await s.newRun();
    const id = await s.submit(run.run_id, {
      type: 'agent',
      input: { agent: 'reporter', message: 'x' },
    });
    const frames = await streamFrames(s, id);
    const facts = frames.filter((f) => f.event === 'fact');
    expect(facts).toHaveLength(3);
    const listed = (await s.api('GET', `/v1/runs/${run.run_id}/facts?type=found`)).body as Record<
      string,
      unknown
    >[];
    expect(listed.map((f) => f['emitted_by_step'])).toEqual([id, id, id]);
    facts.forEach((f, k) => {
      // The Fact as GET lists it (its own ts, when it was appended), plus step_id and seq.
      const { step_id, seq, ...fact } = f.data;
      expect({ step_id, seq }).toEqual({ step_id: id, seq: Number(f.id) });
      expect(fact).toEqual(listed[k]);
    });
  });

  it('gate_eval ends with end {passed}: at once without wait_ms, or once the facts come within wait_ms', async () => {
    const { s } = await start();
    const run = await s.newRun();
    const gate = (input: Record<string, unknown>): Promise<string> =>
      s.submit(run.run_id, { type: 'gate_eval', input });
    expect(
      last(await streamFrames(s, await gate({ fact_type: 'booking' })))?.data['output'],
    ).toEqual({
      passed: false,
    });

    // A waiting gate passes when the fact arrives (posted once its stream has begun).
    const waiting = await gate({
      fact_type: 'booking',
      where: { ok: true },
      min_count: 2,
      wait_ms: 60_000,
    });
    const stream = await openStream(`${s.url}/v1/steps/${waiting}/stream`);
    expect(await stream.readUntil((t) => t.includes('event: started'))).toContain('event: started');
    for (const data of [{ ok: false }, { ok: true }, { ok: true }]) {
      expect(
        (await s.api('POST', `/v1/runs/${run.run_id}/facts`, { type: 'booking', data })).status,
      ).toBe(201);
    }
    const rest = await stream.readToEnd();
    expect(rest).toContain('event: end');
    expect((await s.api('GET', `/v1/steps/${waiting}`)).body).toMatchObject({
      output: { passed: true },
    });

    // Facts already there: it passes at once; a short wait with none ends passed: false.
    expect(
      last(await streamFrames(s, await gate({ fact_type: 'booking', where: { ok: true } })))?.data[
        'output'
      ],
    ).toEqual({ passed: true });
    expect(
      last(await streamFrames(s, await gate({ fact_type: 'other', wait_ms: 50 })))?.data['output'],
    ).toEqual({ passed: false });
  });
});
