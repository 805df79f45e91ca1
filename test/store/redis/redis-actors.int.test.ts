/**
 * Durable agents in the Redis store (issue 46), beyond the ActorStore conformance suite that
 * redis-store.int.test.ts runs: several processes (one connection each) racing on one actor,
 * what an actor costs in keys once at rest, pages read from the indexes a chunk at a time,
 * and the end of a message with the messages merged into it.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { QueueFullError } from '../../../src/errors/queue-full-error.js';
import {
  actorEntry,
  actorIdOf,
  type ActorRecord,
  type WakeRecord,
} from '../../../src/store/actor-records.js';
import type { RedisRunStore } from '../../../src/store/redis/redis-store.js';
import { redisStore } from '../../../src/store/redis/redis-store.js';
import type { StepRecord } from '../../../src/store/records.js';
import { makeRun, makeStep, narration, uid } from '../../support/records.js';
import { clearRedisPrefix, redisUrl } from '../../support/redis.js';

/** Every key these tests write starts with this; removed at the end. */
const base = `axon-test:${randomUUID()}:`;
const prefix = (): string => `${base}${randomUUID()}:`;

afterAll(async () => {
  await clearRedisPrefix(base);
});

/** `n` stores on one prefix, as `n` processes sharing a Redis. */
function processes(n: number, p = prefix()): RedisRunStore[] {
  return Array.from({ length: n }, () => redisStore({ url: redisUrl(), prefix: p }));
}

/** A new actor of user `userId` under `key`, with its run. */
function newActor(key = uid('k'), userId = 'user-1', name = 'notebook') {
  const run = makeRun({ entry: actorEntry(name, key), user_id: userId });
  const now = new Date().toISOString();
  const actor: ActorRecord = {
    actor_id: actorIdOf(userId, name, key),
    user_id: userId,
    name,
    key,
    run_id: run.run_id,
    version: 1,
    state: { notes: [] },
    status: 'idle',
    created_at: now,
    updated_at: now,
  };
  return { actor, run };
}

/** A queued message of `actor`. */
function message(actor: ActorRecord, overrides: Partial<StepRecord> = {}): StepRecord {
  return makeStep(actor.run_id, {
    name: actor.name,
    status: 'queued',
    started_at: null,
    ...overrides,
  });
}

/** A pending sleep of `actor`'s message `stepId`, due at `dueAt`. */
function sleep(actor: ActorRecord, stepId: string, dueAt: number): WakeRecord {
  return {
    wake_id: `${stepId}.1`,
    actor_id: actor.actor_id,
    user_id: actor.user_id,
    kind: 'sleep',
    step_id: stepId,
    due_at: dueAt,
    event: null,
    name: null,
    match: null,
    schema: null,
    message: null,
    every_ms: null,
    status: 'pending',
    data: null,
    timed_out: false,
    fired_at: null,
    created_at: 1,
  };
}

async function closeAll(stores: readonly RedisRunStore[]): Promise<void> {
  await Promise.all(stores.map((s) => s.close()));
}

describe('RedisActors', () => {
  it('of eight processes opening one actor at once, one creates it and its run; all get that run', async () => {
    const stores = processes(8);
    const { actor, run } = newActor();
    const opens = await Promise.all(
      stores.map((s, i) =>
        s.actors.openActor(
          { ...actor, run_id: `${run.run_id}-${i}` },
          { ...run, run_id: `${run.run_id}-${i}` },
        ),
      ),
    );
    expect(opens.filter((o) => o.created)).toHaveLength(1);
    const runIds = new Set(opens.map((o) => o.actor.run_id));
    expect(runIds.size).toBe(1);
    const [runId] = [...runIds];
    expect((await stores[0]?.getRun(runId ?? ''))?.entry).toBe(actorEntry('notebook', actor.key));
    const runs = await stores[0]?.pageRuns({ entry: actorEntry('notebook', actor.key), limit: 10 });
    expect(runs?.map((r) => r.run_id)).toEqual([runId]);
    await closeAll(stores);
  });

  it('of eight processes sending to one actor with room for three, three are accepted and five refused QUEUE_FULL', async () => {
    const stores = processes(8);
    const { actor, run } = newActor();
    await stores[0]?.actors.openActor(actor, run);
    const sent = stores.map(() => message(actor));
    const results = await Promise.allSettled(
      stores.map((s, i) => s.actors.acceptMessage(actor.actor_id, sent[i] as StepRecord, 3)),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    expect(refused).toHaveLength(5);
    for (const err of refused) expect(err).toBeInstanceOf(QueueFullError);
    expect(await stores[1]?.actors.mailboxDepth(actor.actor_id)).toBe(3);
    // Only the accepted messages are steps of the actor's run.
    expect(await stores[2]?.listSteps(actor.run_id)).toHaveLength(3);
    await closeAll(stores);
  });

  it('of eight processes firing one wake at once, one fires it, with its data', async () => {
    const stores = processes(8);
    const { actor, run } = newActor();
    await stores[0]?.actors.openActor(actor, run);
    const wake = sleep(actor, uid('step'), 5_000);
    await stores[0]?.actors.putWake(wake);
    const fired = await Promise.all(
      stores.map((s, i) => s.actors.fireWake(wake.wake_id, { by: i }, 6_000 + i, false)),
    );
    const winners = fired.filter((w) => w !== null);
    expect(winners).toHaveLength(1);
    expect(await stores[3]?.actors.getWake(wake.wake_id)).toEqual(winners[0]);
    expect((await stores[3]?.actors.dueWakes(10_000, 100))?.map((w) => w.wake_id)).toEqual([]);
    await closeAll(stores);
  });

  it('an actor at rest is one key, its hash: its mailbox and its wakes go with its last message', async () => {
    const p = prefix();
    const [store] = processes(1, p) as [RedisRunStore];
    const admin = new Redis(redisUrl());
    const actorKeys = async (): Promise<string[]> => (await admin.keys(`${p}actor:*`)).sort();
    const { actor, run } = newActor();
    await store.actors.openActor(actor, run);
    expect(await actorKeys()).toEqual([`${p}actor:${actor.actor_id}`]);
    const a = message(actor);
    await store.actors.acceptMessage(actor.actor_id, a, 10);
    await store.actors.takeMessage(actor.actor_id, a.step_id);
    await store.actors.putWake(sleep(actor, a.step_id, 1_000));
    expect(await actorKeys()).toHaveLength(3);
    await store.endStep({
      stepId: a.step_id,
      runId: actor.run_id,
      events: [],
      patch: { status: 'succeeded', output: { count: 1 } },
      actor: { actor_id: actor.actor_id, updated_at: new Date().toISOString() },
    });
    expect(await actorKeys()).toEqual([`${p}actor:${actor.actor_id}`]);
    expect(await store.actors.dueWakes(1_000, 100)).toEqual([]);
    expect(await store.actors.nextWakeAt()).toBeNull();
    await Promise.all([store.close(), admin.quit()]);
  });

  it('pages past many actors that do not fit a query, a chunk at a time, and goes on after before', async () => {
    const [store] = processes(1) as [RedisRunStore];
    const made: ActorRecord[] = [];
    for (let i = 0; i < 150; i++) {
      const { actor, run } = newActor(`k-${String(i).padStart(3, '0')}`);
      made.push((await store.actors.openActor(actor, run)).actor);
    }
    // The two oldest are live: a page of live ones reads past the 148 newer ones.
    const [first, second] = made as [ActorRecord, ActorRecord];
    for (const a of [first, second]) await store.actors.setActorStatus(a.actor_id, 'live', 'now');
    const page1 = await store.actors.pageActors({ userId: 'user-1', status: ['live'], limit: 1 });
    expect(page1.map((a) => a.actor_id)).toEqual([second.actor_id]);
    const page2 = await store.actors.pageActors({
      userId: 'user-1',
      status: ['live'],
      limit: 1,
      before: second.actor_id,
    });
    expect(page2.map((a) => a.actor_id)).toEqual([first.actor_id]);
    // By key prefix (fewer than the user's actors): k-10x and k-1xx, newest first.
    const byKey = await store.actors.pageActors({ userId: 'user-1', keyPrefix: 'k-10', limit: 4 });
    expect(byKey.map((a) => a.key)).toEqual(['k-109', 'k-108', 'k-107', 'k-106']);
    const after = await store.actors.pageActors({
      keyPrefix: 'k-1',
      limit: 100,
      before: made[120]?.actor_id ?? '',
    });
    expect(after.map((a) => a.key)).toEqual(
      made
        .slice(100, 120)
        .map((a) => a.key)
        .reverse(),
    );
    await store.close();
  });

  it("a message's end appends the events of the messages merged into it to their logs; an event of another step is refused, nothing written", async () => {
    const [store] = processes(1) as [RedisRunStore];
    const { actor, run } = newActor();
    await store.actors.openActor(actor, run);
    const [a, b, stranger] = [message(actor), message(actor), message(actor)];
    for (const m of [a, b, stranger]) await store.actors.acceptMessage(actor.actor_id, m, 10);
    await store.actors.takeMessage(actor.actor_id, a.step_id);
    const end = {
      stepId: a.step_id,
      runId: actor.run_id,
      patch: { status: 'succeeded' as const },
      actor: {
        actor_id: actor.actor_id,
        updated_at: new Date().toISOString(),
        merged: [{ stepId: b.step_id, patch: { status: 'succeeded' as const } }],
      },
    };
    await expect(
      store.endStep({ ...end, events: [narration(a.step_id, 1), narration(stranger.step_id, 1)] }),
    ).rejects.toThrow(TypeError);
    expect((await store.getStep(a.step_id))?.status).toBe('queued');
    await store.endStep({ ...end, events: [narration(a.step_id, 1), narration(b.step_id, 1)] });
    expect((await store.readEvents(a.step_id)).map((e) => e.seq)).toEqual([1]);
    expect((await store.readEvents(b.step_id)).map((e) => e.seq)).toEqual([1]);
    expect((await store.getStep(b.step_id))?.status).toBe('succeeded');
    expect((await store.actors.openMessages(actor.actor_id, 10)).map((s) => s.step_id)).toEqual([
      stranger.step_id,
    ]);
    expect((await store.actors.getActor(actor.actor_id))?.status).toBe('live');
    await store.close();
  });

  it('refuses bad arguments with an error naming them, and writes nothing', async () => {
    const [store] = processes(1) as [RedisRunStore];
    const { actor, run } = newActor();
    await expect(store.actors.openActor({ ...actor, actor_id: 'a:b' }, run)).rejects.toThrow(
      /actor_id "a:b" cannot be part of a key/,
    );
    expect(await store.getRun(run.run_id)).toBeNull();
    await store.actors.openActor(actor, run);
    const wake = sleep(actor, uid('step'), 5_000);
    await store.actors.putWake(wake);
    await expect(store.actors.fireWake(wake.wake_id, null, NaN, false)).rejects.toThrow(
      /fireWake: firedAt must be a finite number/,
    );
    expect((await store.actors.getWake(wake.wake_id))?.status).toBe('pending');
    await expect(store.actors.pageActors({ limit: 0 })).rejects.toThrow(RangeError);
    await expect(store.actors.dueWakes(10_000, -1)).rejects.toThrow(/dueWakes: limit/);
    await expect(
      store.actors.setActorStatus(actor.actor_id, 'asleep' as 'idle', 'now'),
    ).rejects.toThrow(/"asleep" is not one of idle, live, waiting/);
    expect((await store.actors.getActor(actor.actor_id))?.status).toBe('idle');
    await store.close();
  });
});
