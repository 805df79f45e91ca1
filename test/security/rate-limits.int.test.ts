/**
 * Per-user rate limits of the server's policy are the fleet's, not each process's
 * (docs/security.md, "Limits"): two `axon serve --redis` API processes on one config count a
 * user's requests together in Redis, so a user gets `requests_per_minute` in all, however
 * the requests are spread.
 */
import { describe, expect, it } from 'vitest';
import { request } from '../support/server.js';
import { KEYS, useTarget } from './targets.js';

const PER_MINUTE = 6;

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
