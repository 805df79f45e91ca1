/**
 * @module The Redis store's format (issue 47): a store written by format 1 (a step's log a
 * list of its own; `test/fixtures/stores/redis-format-1.json`, written by the code of that
 * format — see the README there) is migrated in place when the new code opens it and reads
 * back exactly; a marker of a format this code does not know refuses.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Redis, type Cluster } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { ConflictError } from '../../../src/errors/conflict-error.js';
import { redisStore } from '../../../src/store/redis/redis-store.js';
import type { RunRecord, StepRecord } from '../../../src/store/records.js';
import type { StepEvent } from '../../../src/streams/events.js';
import { makeStep, narration } from '../../support/records.js';
import {
  clearClusterPrefix,
  clearRedisPrefix,
  connectTestCluster,
  redisCluster,
  redisUrl,
} from '../../support/redis.js';

/** A key as the fixture holds it: its type and contents. */
type Dumped =
  | { readonly string: string }
  | { readonly hash: Record<string, string> }
  | { readonly list: string[] }
  | { readonly zset: string[] }
  | { readonly set: string[] };

interface Fixture {
  readonly format: number;
  readonly keys: Record<string, Dumped>;
  readonly read: {
    readonly runs: RunRecord[];
    readonly steps: Record<string, StepRecord[]>;
    readonly events: Record<string, StepEvent[]>;
  };
}

const fixture = JSON.parse(
  readFileSync(new URL('../../fixtures/stores/redis-format-1.json', import.meta.url), 'utf8'),
) as Fixture;

const base = `axon-test:${randomUUID()}:`;
const prefix = (): string => `${base}${randomUUID()}:`;
const client = new Redis(redisUrl());

afterAll(async () => {
  await clearRedisPrefix(base);
  await client.quit();
});

/** Writes the fixture's keys under `p`, as format 1's code left them, on `to`. */
async function load(p: string, to: Redis | Cluster = client): Promise<void> {
  const pipeline = to.pipeline();
  for (const [name, dumped] of Object.entries(fixture.keys)) {
    const key = p + name;
    if ('string' in dumped) pipeline.set(key, dumped.string);
    else if ('hash' in dumped) pipeline.hset(key, dumped.hash);
    else if ('list' in dumped) pipeline.rpush(key, ...dumped.list);
    else if ('zset' in dumped) {
      const args: string[] = [];
      for (let i = 0; i + 1 < dumped.zset.length; i += 2) {
        args.push(dumped.zset[i + 1] as string, dumped.zset[i] as string);
      }
      pipeline.zadd(key, ...args);
    } else pipeline.sadd(key, ...dumped.set);
  }
  await pipeline.exec();
}

/** The keys under `p`, after it. */
async function keysUnder(p: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${p}*`, 'COUNT', 1000);
    cursor = next;
    found.push(...keys.map((k) => k.slice(p.length)));
  } while (cursor !== '0');
  return found.sort();
}

/** Every run, step and event of the fixture, as `store` reads them. */
async function readAll(store: ReturnType<typeof redisStore>): Promise<Fixture['read']> {
  const runs: RunRecord[] = [];
  const steps: Record<string, StepRecord[]> = {};
  const events: Record<string, StepEvent[]> = {};
  for (const run of fixture.read.runs) {
    const got = await store.getRun(run.run_id);
    if (got) runs.push(got);
    steps[run.run_id] = await store.listSteps(run.run_id);
  }
  for (const stepId of Object.keys(fixture.read.events)) {
    events[stepId] = await store.readEvents(stepId);
  }
  return { runs, steps, events };
}

describe('the Redis store format (issue 47)', () => {
  it('the fixture is a format 1 store: logs as lists, steps without a log of their own', () => {
    expect(fixture.format).toBe(1);
    expect(Object.keys(fixture.keys).filter((k) => k.startsWith('log:'))).toHaveLength(3);
    expect(fixture.read.events['step_long']).toHaveLength(674);
  });

  it('opens a format 1 store migrating it in place: its logs go into their steps, the marker says 2, and every run, step and event reads back exactly', async () => {
    const p = prefix();
    await load(p);
    const store = redisStore({ url: redisUrl(), prefix: p });
    // The first call opens the format (the whole store moves before it runs).
    expect(await store.getStep('step_long')).toEqual(
      fixture.read.steps['run_f1']?.find((s) => s.step_id === 'step_long'),
    );
    expect(await client.get(`${p}format`)).toBe('2');
    const keys = await keysUnder(p);
    expect(keys.filter((k) => k.startsWith('log:'))).toEqual([]);
    expect(keys).toEqual(
      [...Object.keys(fixture.keys).filter((k) => !k.startsWith('log:')), 'format'].sort(),
    );
    expect(await readAll(store)).toEqual(fixture.read);
    // Pages of a migrated log, as before.
    expect(await store.readEvents('step_long', 499, 3)).toEqual(
      fixture.read.events['step_long']?.slice(499, 502),
    );
    expect(await store.readEvents('step_long', 674)).toEqual([]);
    // A migrated step goes on: its next event after its last, its end adding to its run.
    await expect(store.appendEvents([narration('step_long', 674)])).rejects.toBeInstanceOf(
      ConflictError,
    );
    await store.endStep({
      stepId: 'step_long',
      runId: 'run_f1',
      events: [narration('step_long', 675, 'last')],
      patch: { status: 'succeeded' },
      runUsage: { tokens_in: 1, tokens_out: 2, cost_usd: 0.7, wall_ms: 3 },
    });
    const events = await store.readEvents('step_long');
    expect(events).toEqual([
      ...(fixture.read.events['step_long'] ?? []),
      narration('step_long', 675, 'last'),
    ]);
    const before = fixture.read.runs[0]?.budget_usage;
    expect((await store.getRun('run_f1'))?.budget_usage).toEqual({
      tokens_in: (before?.tokens_in ?? 0) + 1,
      tokens_out: (before?.tokens_out ?? 0) + 2,
      cost_usd: (before?.cost_usd ?? 0) + 0.7,
      wall_ms: (before?.wall_ms ?? 0) + 3,
    });
    // A new step in a migrated run is listed after the old ones.
    const added = makeStep('run_f1', { step_id: `step_${randomUUID()}` });
    await store.createStep(added);
    expect((await store.listSteps('run_f1')).map((s) => s.step_id)).toEqual([
      ...(fixture.read.steps['run_f1'] ?? []).map((s) => s.step_id),
      added.step_id,
    ]);
    await store.close();
    // Opened again, it is not migrated twice: everything reads as it was left.
    const again = redisStore({ url: redisUrl(), prefix: p });
    expect(await again.readEvents('step_long')).toEqual(events);
    await again.close();
  });

  it('two stores opening one format 1 store at once migrate it once, each reading it whole', async () => {
    const p = prefix();
    await load(p);
    const a = redisStore({ url: redisUrl(), prefix: p });
    const b = redisStore({ url: redisUrl(), prefix: p });
    const [readA, readB] = await Promise.all([readAll(a), readAll(b)]);
    expect(readA).toEqual(fixture.read);
    expect(readB).toEqual(fixture.read);
    expect((await keysUnder(p)).filter((k) => k.startsWith('log:'))).toEqual([]);
    await a.close();
    await b.close();
  });

  it('a format 1 step written after the marker (an older process still writing) is moved when it is first read', async () => {
    const p = prefix();
    await load(p);
    await client.set(`${p}format`, '2');
    const store = redisStore({ url: redisUrl(), prefix: p });
    // The append moves the step it writes to, and only that one.
    await store.appendEvents([narration('step_short', 3, 'three')]);
    expect(await client.exists(`${p}log:step_short`)).toBe(0);
    expect(await client.llen(`${p}log:step_long`)).toBe(674);
    // A read of a step still in format 1 goes by the script, which moves it in first.
    expect(await store.readEvents('step_long', 499, 3)).toEqual(
      fixture.read.events['step_long']?.slice(499, 502),
    );
    expect(await client.exists(`${p}log:step_long`)).toBe(0);
    expect(await store.readEvents('step_short')).toEqual([
      ...(fixture.read.events['step_short'] ?? []),
      narration('step_short', 3, 'three'),
    ]);
    // The others move as they are read, and read back exactly.
    const read = await readAll(store);
    expect(read.events['step_long']).toEqual(fixture.read.events['step_long']);
    expect(read.events['step_done']).toEqual(fixture.read.events['step_done']);
    expect(read.events['step_empty']).toEqual([]);
    expect(read.steps).toEqual(fixture.read.steps);
    expect((await keysUnder(p)).filter((k) => k.startsWith('log:'))).toEqual([]);
    await store.close();
  });

  it('refuses a store of a format it does not know with ConflictError naming it, and touches nothing', async () => {
    const p = prefix();
    await load(p);
    await client.set(`${p}format`, '3');
    const store = redisStore({ url: redisUrl(), prefix: p });
    const refused = await store.readEvents('step_long').then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(ConflictError);
    expect((refused as ConflictError).details).toEqual({ format: '3', known: 2 });
    await expect(store.appendEvents([narration('step_long', 675)])).rejects.toBeInstanceOf(
      ConflictError,
    );
    await expect(store.createStep(makeStep('run_f1'))).rejects.toBeInstanceOf(ConflictError);
    expect(await client.get(`${p}format`)).toBe('3');
    expect(await client.llen(`${p}log:step_long`)).toBe(674);
    expect(await client.hexists(`${p}step:step_long`, 'n')).toBe(0);
    await store.close();
  });
});

describe('the Redis store format on a Redis Cluster', () => {
  it('migrates a format 1 store under a hash-tagged prefix in place, on the master holding its slot', async () => {
    const tag = `{axon-test:format:${randomUUID()}`;
    const p = `${tag}}:`;
    const cluster = connectTestCluster();
    try {
      await cluster.ping();
      await load(p, cluster);
      const store = redisStore({ cluster: redisCluster(), prefix: p });
      expect(await readAll(store)).toEqual(fixture.read);
      expect(await cluster.get(`${p}format`)).toBe('2');
      for (const name of Object.keys(fixture.keys).filter((k) => k.startsWith('log:'))) {
        expect(await cluster.exists(p + name)).toBe(0);
      }
      await store.close();
    } finally {
      cluster.disconnect();
      await clearClusterPrefix(tag);
    }
  });
});
