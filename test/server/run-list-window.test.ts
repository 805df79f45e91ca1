/**
 * `GET /v1/runs`'s time window over a real store (the in-memory one), past one page of the
 * store: `until` passes over the runs created after it, 500 at a time, to fill a page; `since`
 * stops at the first run created before it; both keep the store's other filters and `before`.
 */
import { describe, expect, it } from 'vitest';
import { InvalidParamsError } from '../../src/errors/invalid-params-error.js';
import {
  MAX_RUN_LIMIT,
  MAX_RUNS_PASSED,
  pageRunsInWindow,
} from '../../src/server/run-list-routes.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import type { RunPageQuery } from '../../src/store/run-store.js';
import { makeRun } from '../support/records.js';

const T0 = Date.parse('2026-11-28T00:00:00.000Z');

/** A store of `n` runs created 1 s apart (run i at T0 + i s), every third `completed`. */
async function storeOf(n: number) {
  const store = memoryStore({ maxRuns: n });
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const run = makeRun({
      created_at: new Date(T0 + i * 1000).toISOString(),
      status: i % 3 === 0 ? 'completed' : 'running',
    });
    await store.createRun(run);
    ids.push(run.run_id);
  }
  let reads = 0;
  const pageRuns = (q: RunPageQuery) => {
    reads++;
    return store.pageRuns(q);
  };
  return { ids, pageRuns, reads: () => reads };
}

describe('pageRunsInWindow', () => {
  it('fills a page before until, past more than one page of the store of newer runs', async () => {
    const { ids, pageRuns, reads } = await storeOf(1200);
    // Runs 0..199 are created before T0 + 200 s: the 1000 newer ones are passed over.
    const got = await pageRunsInWindow(pageRuns, { limit: 50 }, null, T0 + 200_000);
    expect(got.map((r) => r.run_id)).toEqual(ids.slice(150, 200).reverse());
    expect(reads()).toBe(3);
  });

  it('refuses an until more than MAX_RUNS_PASSED runs back (400 INVALID_PARAMS), after reading no more than them', async () => {
    const { pageRuns, reads } = await storeOf(MAX_RUNS_PASSED + 10);
    // Runs 0..4 are before T0 + 5 s: MAX_RUNS_PASSED + 5 newer ones would be passed over.
    const asked = pageRunsInWindow(pageRuns, { limit: 50 }, null, T0 + 5_000);
    await expect(asked).rejects.toBeInstanceOf(InvalidParamsError);
    await expect(asked).rejects.toMatchObject({
      code: 'INVALID_PARAMS',
      details: { param: 'until' },
    });
    expect(reads()).toBe(MAX_RUNS_PASSED / MAX_RUN_LIMIT + 1);
  });

  it('stops at the first run created before since, with one read', async () => {
    const { ids, pageRuns, reads } = await storeOf(300);
    const got = await pageRunsInWindow(pageRuns, { limit: 100 }, T0 + 280_000, null);
    expect(got.map((r) => r.run_id)).toEqual(ids.slice(280).reverse());
    expect(reads()).toBe(1);
  });

  it('keeps the store’s filters and before inside the window; without one, is the store’s page', async () => {
    const { ids, pageRuns } = await storeOf(30);
    const completed = await pageRunsInWindow(
      pageRuns,
      { limit: 5, status: ['completed'], before: ids[25] ?? '' },
      T0 + 6_000,
      T0 + 20_000,
    );
    // Completed: 0, 3, …, 27; before run 25 and in [6 s, 20 s): 18, 15, 12, 9, 6.
    expect(completed.map((r) => r.run_id)).toEqual([18, 15, 12, 9, 6].map((i) => ids[i]));
    const plain = await pageRunsInWindow(pageRuns, { limit: 3 }, null, null);
    expect(plain.map((r) => r.run_id)).toEqual([29, 28, 27].map((i) => ids[i]));
  });
});
