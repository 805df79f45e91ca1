import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { BudgetExceededError } from '../../../src/errors/budget-exceeded-error.js';
import { ConflictError } from '../../../src/errors/conflict-error.js';
import { NotFoundError } from '../../../src/errors/not-found-error.js';
import { redisStore } from '../../../src/store/redis/redis-store.js';
import { makeRun, makeStep, narration } from '../../support/records.js';
import { clearRedisPrefix, redisUrl } from '../../support/redis.js';
import { describeActorStore } from '../actor-store.conformance.js';
import { describeRunStore } from '../run-store.conformance.js';

/** Every key these tests write starts with this; removed at the end. */
const base = `axon-test:${randomUUID()}:`;
const prefix = (): string => `${base}${randomUUID()}:`;

/** A store of a prefix of its own, with one run and one step of it. */
async function storeWithStep() {
  const store = redisStore({ url: redisUrl(), prefix: prefix() });
  const run = makeRun();
  const step = makeStep(run.run_id);
  await store.createRun(run);
  await store.createStep(step);
  return { store, run, step };
}

afterAll(async () => {
  await clearRedisPrefix(base);
});

describeRunStore('redis (REDIS_URL, a key prefix per store)', () =>
  redisStore({ url: redisUrl(), prefix: prefix() }),
);

describeActorStore('redis (REDIS_URL, a key prefix per store)', () =>
  redisStore({ url: redisUrl(), prefix: prefix() }),
);

describe('RedisRunStore', () => {
  it('two connections with one prefix share runs, steps and logs; other prefixes do not see them', async () => {
    const p = prefix();
    const a = redisStore({ url: redisUrl(), prefix: p });
    const b = redisStore({ url: redisUrl(), prefix: p });
    const other = redisStore({ url: redisUrl(), prefix: prefix() });
    const run = makeRun();
    const step = makeStep(run.run_id);
    await a.createRun(run);
    await a.createStep(step);
    await a.appendEvents([narration(step.step_id, 1)]);

    expect(await b.getRun(run.run_id)).toEqual(run);
    expect(await b.listSteps(run.run_id)).toEqual([step]);
    await b.appendEvents([narration(step.step_id, 2)]);
    expect((await a.readEvents(step.step_id)).map((e) => e.seq)).toEqual([1, 2]);
    expect(await other.getRun(run.run_id)).toBeNull();
    await Promise.all([a.close(), b.close(), other.close()]);
  });

  it("reads a log longer than a read's first page whole and by pages, to its last event and no further (issue 47)", async () => {
    const { store, step } = await storeWithStep();
    const events = Array.from({ length: 2_500 }, (_, i) => narration(step.step_id, i + 1));
    for (let at = 0; at < events.length; at += 500) {
      await store.appendEvents(events.slice(at, at + 500));
    }
    const seqs = async (after?: number, limit?: number): Promise<number[]> =>
      (await store.readEvents(step.step_id, after, limit)).map((e) => e.seq);
    const range = (from: number, to: number): number[] =>
      Array.from({ length: to - from + 1 }, (_, i) => from + i);
    expect(await store.readEvents(step.step_id)).toEqual(events);
    expect(await seqs(1_500)).toEqual(range(1_501, 2_500));
    expect(await seqs(999, 2)).toEqual([1_000, 1_001]);
    expect(await seqs(500, 1_700)).toEqual(range(501, 2_200));
    expect(await seqs(2_400, 1_000)).toEqual(range(2_401, 2_500));
    expect(await seqs(2_500)).toEqual([]);
    expect(await seqs(0, 0)).toEqual([]);
    // Past any seq there can be: nothing, at once.
    expect(await seqs(Number.MAX_SAFE_INTEGER)).toEqual([]);
    expect(await seqs(1e300, 10)).toEqual([]);
    // An event appended in the same turn as the read is read: the held write goes first.
    const appended = store.appendEvents([narration(step.step_id, 2_501)]);
    expect(await seqs(2_499)).toEqual([2_500, 2_501]);
    await appended;
    expect(await store.readEvents('step_none')).toEqual([]);
    await store.close();
  });

  it('of two processes appending the same seq at once, exactly one wins and the log stays whole', async () => {
    const p = prefix();
    const stores = Array.from({ length: 8 }, () => redisStore({ url: redisUrl(), prefix: p }));
    const run = makeRun();
    const step = makeStep(run.run_id);
    await stores[0]?.createRun(run);
    await stores[0]?.createStep(step);

    const results = await Promise.allSettled(
      stores.map((s, i) => s.appendEvents([narration(step.step_id, 1, `writer ${i}`)])),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(refused).toHaveLength(7);
    for (const r of refused) expect(r.reason).toBeInstanceOf(ConflictError);
    expect(await stores[1]?.readEvents(step.step_id)).toHaveLength(1);
    await Promise.all(stores.map((s) => s.close()));
  });

  it('an unreachable Redis fails calls with an error, not a hang, and reports it', async () => {
    const seen: Error[] = [];
    const store = redisStore({
      url: 'redis://127.0.0.1:6391',
      prefix: prefix(),
      redis: { connectTimeout: 500, retryStrategy: () => null },
      onError: (err) => seen.push(err),
    });
    await expect(store.getRun('run_x')).rejects.toThrow();
    expect(seen.some((e) => e.message.includes('ECONNREFUSED'))).toBe(true);
    await store.close();
  });

  it('a read of a log whose connection Redis dropped fails with an error, not an empty log (issue 47)', async () => {
    const store = redisStore({
      url: redisUrl(),
      prefix: prefix(),
      redis: { retryStrategy: () => null, maxRetriesPerRequest: 0 },
    });
    const run = makeRun();
    const step = makeStep(run.run_id);
    await store.createRun(run);
    await store.createStep(step);
    await store.appendEvents([narration(step.step_id, 1)]);
    expect(await store.readEvents(step.step_id)).toHaveLength(1);
    const admin = new Redis(redisUrl());
    const id = (await store.client.call('CLIENT', 'ID')) as number;
    await admin.call('CLIENT', 'KILL', 'ID', String(id));
    await expect(store.readEvents(step.step_id)).rejects.toThrow(/Connection is closed|closed/i);
    await Promise.all([store.close(), admin.quit()]);
  });

  it('the writes of one turn travel in calls of at most 8; each write settles on its own; a read queued after them goes in their last call and sees them', async () => {
    const store = redisStore({ url: redisUrl(), prefix: prefix() });
    const taken = makeRun();
    await store.createRun(taken);
    const calls: string[] = [];
    const monitor = await new Redis(redisUrl()).monitor();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const port = String((store.client as Redis).stream.localPort);
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source.endsWith(`:${port}`)) calls.push(String(args[0]).toLowerCase());
    });
    const runs = Array.from({ length: 17 }, () => makeRun());
    // 20 writes in one turn, three of them refused (the run exists), then a read.
    const writes = [...runs.slice(0, 10), taken, taken, ...runs.slice(10), taken].map((r) =>
      store.createRun(r),
    );
    const read = store.getRun(runs[16]?.run_id ?? '');
    const settled = await Promise.allSettled(writes);
    expect(await read).toEqual(runs[16]);
    expect(settled.map((r) => r.status)).toEqual([
      ...Array<string>(10).fill('fulfilled'),
      'rejected',
      'rejected',
      ...Array<string>(7).fill('fulfilled'),
      'rejected',
    ]);
    for (const r of settled) {
      if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(ConflictError);
    }
    for (const r of runs) expect(await store.getRun(r.run_id)).toEqual(r);
    // The monitor hears of the last call a moment after its reply.
    await new Promise((resolve) => setTimeout(resolve, 100));
    monitor.disconnect();
    // 20 writes and a read: two full calls of 8, then the last 4 writes with the read; then
    // the 17 reads above, one call each.
    expect(calls).toEqual(Array<string>(3 + 17).fill('evalsha'));
    await store.close();
  });

  it('a write Redis fails (a key of the wrong type) rejects alone; the writes of its call after it are made', async () => {
    const p = prefix();
    const store = redisStore({ url: redisUrl(), prefix: p });
    const admin = new Redis(redisUrl());
    const broken = makeRun();
    await admin.set(`${p}run:${broken.run_id}`, 'not a hash');
    const after = makeRun();
    const [first, second] = await Promise.allSettled([
      store.updateRun(broken.run_id, { status: 'failed' }),
      store.createRun(after),
    ]);
    expect(first.status).toBe('rejected');
    expect(String((first as PromiseRejectedResult).reason)).toMatch(/WRONGTYPE/);
    expect(second.status).toBe('fulfilled');
    expect(await store.getRun(after.run_id)).toEqual(after);
    await Promise.all([store.close(), admin.quit()]);
  });

  it('an append sent again after its answer was lost (the same events) changes nothing; other events at those seqs are refused', async () => {
    const { store, step } = await storeWithStep();
    const batch = [narration(step.step_id, 1), narration(step.step_id, 2)];
    await store.appendEvents(batch);
    // As ioredis resends a command the connection dropped before its answer came.
    await store.appendEvents(batch);
    // Partly sent before: the rest is appended once.
    await store.appendEvents([narration(step.step_id, 2), narration(step.step_id, 3)]);
    expect((await store.readEvents(step.step_id)).map((e) => e.seq)).toEqual([1, 2, 3]);
    await expect(
      store.appendEvents([narration(step.step_id, 3, 'another writer')]),
    ).rejects.toBeInstanceOf(ConflictError);
    expect(await store.readEvents(step.step_id)).toEqual([...batch, narration(step.step_id, 3)]);
    await store.close();
  });

  it('a Redis that lost the script (SCRIPT FLUSH, a restart) is sent it again', async () => {
    const store = redisStore({ url: redisUrl(), prefix: prefix() });
    const admin = new Redis(redisUrl());
    await store.createRun(makeRun());
    await admin.script('FLUSH');
    const run = makeRun();
    await store.createRun(run);
    expect(await store.getRun(run.run_id)).toEqual(run);
    await Promise.all([store.close(), admin.quit()]);
  });

  it('a fenced writer whose token its fence no longer holds writes nothing: each write refused WORKER_LOST, in the same call as the check', async () => {
    const p = prefix();
    const fenceKey = `${p}fence`;
    const client = new Redis(redisUrl());
    await client.set(fenceKey, 'mine');
    const targets: unknown[] = [];
    const fenced = redisStore({
      url: redisUrl(),
      prefix: p,
      fence: (target) => {
        targets.push(target);
        return target.stepId === undefined ? [] : [{ key: fenceKey, token: 'mine' }];
      },
    });
    const run = makeRun();
    const step = makeStep(run.run_id);
    await fenced.createRun(run);
    await fenced.createStep(step);
    await fenced.appendEvents([narration(step.step_id, 1)]);
    expect(targets).toContainEqual({ stepId: step.step_id });
    // Another writer takes the turn: every write of this one about the step is refused.
    await client.set(fenceKey, 'theirs');
    const refusals = await Promise.all(
      [
        fenced.appendEvents([narration(step.step_id, 2)]),
        fenced.updateStep(step.step_id, { status: 'failed' }),
        fenced.addRunUsage(
          run.run_id,
          { tokens_in: 1, tokens_out: 1, cost_usd: 0, wall_ms: 1 },
          step.step_id,
        ),
        fenced.budgets.reserve(
          { runId: run.run_id, stepId: step.step_id, token: 'mine' },
          { tokens_in: 0, tokens_out: 1, cost_usd: 0 },
          run.budgets,
        ),
      ].map((p) =>
        p.then(
          () => null,
          (e: unknown) => e,
        ),
      ),
    );
    for (const err of refusals) {
      expect(err).toMatchObject({ code: 'WORKER_LOST', details: { reason: 'fenced' } });
    }
    expect((await fenced.readEvents(step.step_id)).map((e) => e.seq)).toEqual([1]);
    expect((await fenced.getStep(step.step_id))?.status).toBe(step.status);
    expect((await fenced.getRun(run.run_id))?.budget_usage.tokens_in).toBe(0);
    // A write of no step is not fenced.
    await fenced.updateRun(run.run_id, { status: 'completed' });
    expect((await fenced.getRun(run.run_id))?.status).toBe('completed');
    await fenced.close();
    await client.quit();
  });

  it("wakes: each call that appends to a watched step adds its last seq to each watcher's stream that exists, in the same call; an unwatched step wakes no one", async () => {
    const p = prefix();
    const client = new Redis(redisUrl());
    const store = redisStore({ url: redisUrl(), prefix: p, wakes: { prefix: `${p}wake:` } });
    const run = makeRun();
    const watched = makeStep(run.run_id);
    const unwatched = makeStep(run.run_id);
    await store.createRun(run);
    await store.createStep(watched);
    await store.createStep(unwatched);
    // Two processes watch the step; one of them keeps its wake stream, the other is gone.
    await client.xadd(`${p}wake:here`, '*', 'w', '1');
    await store.watchStep(watched.step_id, 'here', true);
    await store.watchStep(watched.step_id, 'gone', true);
    await store.appendEvents([narration(watched.step_id, 1), narration(watched.step_id, 2)]);
    await store.appendEvents([narration(unwatched.step_id, 1)]);
    await store.endStep({
      stepId: watched.step_id,
      runId: run.run_id,
      events: [narration(watched.step_id, 3)],
      patch: { status: 'succeeded' },
    });
    const entries = await client.xrange(`${p}wake:here`, '-', '+');
    expect(entries.map(([, fields]) => fields)).toEqual([
      ['w', '1'],
      [watched.step_id, '2'],
      [watched.step_id, '3'],
    ]);
    // Nothing made a stream for the process gone.
    expect(await client.exists(`${p}wake:gone`)).toBe(0);
    // Taken off, it is woken no more; a step that does not exist is passed over.
    await store.watchStep(watched.step_id, 'here', false);
    await store.watchStep('step_missing', 'here', true);
    await store.appendEvents([narration(watched.step_id, 4)]);
    expect(await client.xlen(`${p}wake:here`)).toBe(3);
    expect(await client.exists(`${p}step:step_missing`)).toBe(0);
    await store.close();
    await client.quit();
  });

  it("endNotice: a step's end is said in the same call only once it is written; a refused end says nothing", async () => {
    const p = prefix();
    const client = new Redis(redisUrl());
    const said: [string, boolean][] = [];
    const store = redisStore({
      url: redisUrl(),
      prefix: p,
      endNotice: (stepId, status) => ({
        keys: [`${p}ended`, `${p}counts`, `${p}ended`, `${p}open`], // no fence: the first key stands in
        args: [stepId, status, '1000', 'completed', ''],
        said: (yes) => said.push([stepId, yes]),
      }),
    });
    const run = makeRun();
    const ok = makeStep(run.run_id);
    const refused = makeStep(run.run_id);
    await store.createRun(run);
    await store.createStep(ok);
    await store.createStep(refused);
    await client.zadd(`${p}open`, 1, ok.step_id, 2, refused.step_id);
    await store.endStep({
      stepId: ok.step_id,
      runId: run.run_id,
      events: [],
      patch: { status: 'succeeded' },
    });
    // Its events do not continue the log: nothing is written, nothing said.
    await expect(
      store.endStep({
        stepId: refused.step_id,
        runId: run.run_id,
        events: [narration(refused.step_id, 5)],
        patch: { status: 'failed' },
      }),
    ).rejects.toBeInstanceOf(ConflictError);
    await new Promise((resolve) => setImmediate(resolve));
    expect(said).toEqual([
      [ok.step_id, true],
      [refused.step_id, false],
    ]);
    const ended = await client.xrange(`${p}ended`, '-', '+');
    expect(ended.map(([, fields]) => fields)).toEqual([[ok.step_id, 'succeeded']]);
    expect(await client.hget(`${p}counts`, 'completed')).toBe('1');
    expect(await client.zrange(`${p}open`, 0, -1)).toEqual([refused.step_id]);
    await store.close();
    await client.quit();
  });

  it('takeTurn tells whether the mark exists only while its fence holds its token; a write in its call is guarded by the same fence', async () => {
    const p = prefix();
    const client = new Redis(redisUrl());
    const fence = { key: `${p}lock`, token: 'second' };
    const store = redisStore({ url: redisUrl(), prefix: p, fence: () => [fence] });
    const run = makeRun();
    const step = makeStep(run.run_id);
    await store.createRun(run);
    await client.set(`${p}mark`, '1');
    await client.set(fence.key, 'second');
    // The take and a guarded write in one turn: both run while the fence holds.
    const taken = store.takeTurn(fence, `${p}mark`);
    const created = store.createStep(step);
    expect(await taken).toBe(true);
    await created;
    expect(await store.takeTurn(fence, `${p}no-mark`)).toBe(false);
    expect((await store.getStep(step.step_id))?.step_id).toBe(step.step_id);
    // Another holds the fence now (a replica that took the job over): the take is refused,
    // and so is the write that goes with it.
    await client.set(fence.key, 'third');
    const late = store.takeTurn(fence, `${p}mark`);
    const write = store.updateStep(step.step_id, { status: 'running' });
    await expect(late).rejects.toMatchObject({
      code: 'WORKER_LOST',
      details: { reason: 'fenced' },
    });
    await expect(write).rejects.toMatchObject({ code: 'WORKER_LOST' });
    expect((await store.getStep(step.step_id))?.status).toBe(step.status);
    await store.close();
    await client.quit();
  });

  it("a run's shared budget ledger (POLICY-3000): of eight processes reserving 40 of 100 tokens out at once, two fit and six are refused BUDGET_EXCEEDED with what was left", async () => {
    const p = prefix();
    const stores = Array.from({ length: 8 }, () => redisStore({ url: redisUrl(), prefix: p }));
    const run = makeRun({ budgets: { max_tokens_out: 100 } });
    await stores[0]?.createRun(run);
    const draw = { tokens_in: 0, tokens_out: 40, cost_usd: 0 };
    const results = await Promise.allSettled(
      stores.map((s, i) =>
        s.budgets.reserve(
          { runId: run.run_id, stepId: `step_${i}`, token: 't' },
          draw,
          run.budgets,
        ),
      ),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(2);
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    expect(refused).toHaveLength(6);
    for (const err of refused) {
      expect(err).toBeInstanceOf(BudgetExceededError);
      expect(err).toMatchObject({ limit: 'max_tokens_out', requested: 40, remaining: 20 });
    }
    await Promise.all(stores.map((s) => s.close()));
  });

  it("a settled reservation gives back what it did not use; a step's use entering its run takes its entry off the ledger; limits of cost hold to the cent", async () => {
    const store = redisStore({ url: redisUrl(), prefix: prefix() });
    const run = makeRun({ budgets: { max_tokens_out: 100, max_cost_usd: 0.3 } });
    await store.createRun(run);
    const a = { runId: run.run_id, stepId: 'step_a', token: 't1' };
    const b = { runId: run.run_id, stepId: 'step_b', token: 't1' };
    const draw = (out: number, cost = 0) => ({ tokens_in: 0, tokens_out: out, cost_usd: cost });
    await store.budgets.reserve(a, draw(60, 0.1), run.budgets);
    await expect(store.budgets.reserve(b, draw(60), run.budgets)).rejects.toMatchObject({
      code: 'BUDGET_EXCEEDED',
      remaining: 40,
    });
    // a used 10 of its 60: 90 are left.
    await store.budgets.settle(a, draw(-50));
    await store.budgets.reserve(b, draw(90, 0.1), run.budgets);
    await expect(store.budgets.reserve(b, draw(1), run.budgets)).rejects.toMatchObject({
      limit: 'max_tokens_out',
      remaining: 0,
    });
    // a ends: its use moves from the ledger into the run's, nothing counted twice.
    await store.addRunUsage(
      run.run_id,
      { tokens_in: 0, tokens_out: 10, cost_usd: 0.1, wall_ms: 5 },
      'step_a',
    );
    await expect(store.budgets.reserve(b, draw(1), run.budgets)).rejects.toMatchObject({
      remaining: 0,
    });
    await store.budgets.settle(b, draw(-90));
    await store.budgets.reserve(a, draw(90, 0.1), run.budgets);
    // Three dimes fit $0.30; a fourth cent does not.
    await expect(store.budgets.reserve(b, draw(0, 0.01), run.budgets)).rejects.toMatchObject({
      limit: 'max_cost_usd',
    });
    await expect(
      store.budgets.reserve({ ...a, runId: 'run_missing' }, draw(1), run.budgets),
    ).rejects.toBeInstanceOf(NotFoundError);
    await store.close();
  });

  it("a new attempt at a step drops the lost attempt's reservations; the lost one's settles change nothing", async () => {
    const store = redisStore({ url: redisUrl(), prefix: prefix() });
    const run = makeRun({ budgets: { max_tokens_out: 100 } });
    await store.createRun(run);
    const lost = { runId: run.run_id, stepId: 'step_a', token: 'attempt-1' };
    const next = { ...lost, token: 'attempt-2' };
    const draw = (out: number) => ({ tokens_in: 0, tokens_out: out, cost_usd: 0 });
    await store.budgets.reserve(lost, draw(80), run.budgets);
    await store.budgets.reserve(next, draw(100), run.budgets);
    await store.budgets.settle(lost, draw(-80));
    await expect(store.budgets.reserve(next, draw(1), run.budgets)).rejects.toMatchObject({
      remaining: 0,
    });
    await store.close();
  });

  it('runs stored before the indexes were kept are put in them by the first listing, once', async () => {
    const p = prefix();
    const old = redisStore({ url: redisUrl(), prefix: p });
    const runs = [makeRun({ user_id: 'ann' }), makeRun({ user_id: 'ann', status: 'completed' })];
    for (const r of runs) await old.createRun(r);
    await old.close();
    // As a store of an axon that kept no indexes left them: no index keys at all.
    const admin = new Redis(redisUrl());
    const indexes = await admin.keys(`${p}runs:i*`);
    expect(indexes.length).toBeGreaterThan(0);
    await admin.del(...indexes);
    const store = redisStore({ url: redisUrl(), prefix: p });
    const page = await store.pageRuns({ userId: 'ann', status: ['completed'], limit: 10 });
    expect(page).toEqual([runs[1]]);
    expect(await admin.exists(`${p}runs:i:v1`)).toBe(1);
    expect((await store.listRuns()).map((r) => r.run_id).sort()).toEqual(
      runs.map((r) => r.run_id).sort(),
    );
    await Promise.all([store.close(), admin.quit()]);
  });

  it('uses a given client without closing it', async () => {
    const client = new Redis(redisUrl());
    const store = redisStore({ client, prefix: prefix() });
    await store.createRun(makeRun());
    await store.close();
    expect(await client.ping()).toBe('PONG');
    await client.quit();
  });
});
