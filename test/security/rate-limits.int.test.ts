/**
 * Rate limits are the fleet's, not each process's (docs/security.md, "Limits of a shared
 * server"): two `axon serve --redis` API processes on one config count together in Redis a
 * user's requests, so a user gets the policy's `requests_per_minute` in all, and a run's
 * steps, so a run gets its `steps_per_minute` in all, however the requests are spread.
 */
import { describe, expect, it } from 'vitest';
import { request } from '../support/server.js';
import { KEYS, useTarget } from './targets.js';

const PER_MINUTE = 6;
/** A run's own `steps_per_minute` in the second test. */
const STEPS_PER_MINUTE = 4;

describe('per-user rate limits across two API processes', () => {
  const target = useTarget(
    'fleet',
    `policy:\n  rate_limits:\n    per_user: { requests_per_minute: ${PER_MINUTE}, on_exceed: reject }\n`,
  );

  it(`let ${PER_MINUTE} of one user's step submissions through in all, the rest 429 RATE_LIMITED, another user untouched`, async () => {
    const t = target();
    const second = await t.anotherApi();
    const run = await t.newRun('alice');
    const statuses: number[] = [];
    for (let i = 0; i < PER_MINUTE * 2; i++) {
      // Alternately on each API process.
      const res = await request(
        i % 2 === 0 ? t.url : second,
        'POST',
        `/v1/runs/${run.run_id}/steps`,
        { type: 'checkpoint', input: {} },
        { authorization: `Bearer ${KEYS.alice}` },
      );
      statuses.push(res.status);
      if (res.status === 429) {
        expect(res.body).toMatchObject({ error: { code: 'RATE_LIMITED' } });
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      }
    }
    expect(statuses.filter((s) => s === 201)).toHaveLength(PER_MINUTE);
    expect(statuses.filter((s) => s === 429)).toHaveLength(PER_MINUTE);
    // Each process took some of them: the count is shared, not per process.
    expect(statuses.slice(0, PER_MINUTE)).toEqual(Array(PER_MINUTE).fill(201));
    const bobs = await t.newRun('bob');
    const bob = await request(
      second,
      'POST',
      `/v1/runs/${bobs.run_id}/steps`,
      { type: 'checkpoint', input: {} },
      { authorization: `Bearer ${KEYS.bob}` },
    );
    expect(bob.status, bob.text).toBe(201);
  });
});

/** Every other submission on each API process: what each answered, in order. */
async function alternate(
  apis: readonly [string, string],
  runId: string,
  count: number,
): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) {
    const res = await request(
      apis[i % 2] ?? apis[0],
      'POST',
      `/v1/runs/${runId}/steps`,
      { type: 'checkpoint', input: {} },
      { authorization: `Bearer ${KEYS.alice}` },
    );
    statuses.push(res.status);
    if (res.status === 429) {
      expect(res.body).toMatchObject({ error: { code: 'RATE_LIMITED' } });
      expect((res.body as { error: { message: string } }).error.message).toContain(
        `past its ${STEPS_PER_MINUTE} steps per minute`,
      );
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    }
  }
  return statuses;
}

describe("a run's steps_per_minute across two API processes", () => {
  // No per-user limit here: only the run's own counts.
  const target = useTarget('fleet');

  it(`lets ${STEPS_PER_MINUTE} of a run's steps through in all, the rest 429 RATE_LIMITED, another run untouched`, async () => {
    const t = target();
    const apis = [t.url, await t.anotherApi()] as const;
    const policy = { steps_per_minute: STEPS_PER_MINUTE };
    const run = await t.newRun('alice', { policy });
    // Counted per process, each would let 4 through: 8 in all.
    const statuses = await alternate(apis, run.run_id, STEPS_PER_MINUTE * 2);
    expect(statuses).toEqual([
      ...Array<number>(STEPS_PER_MINUTE).fill(201),
      ...Array<number>(STEPS_PER_MINUTE).fill(429),
    ]);
    // Another run of the same user has its own count, on either process.
    const other = await t.newRun('alice', { policy });
    expect(await alternate(apis, other.run_id, 2)).toEqual([201, 201]);
  });
});
