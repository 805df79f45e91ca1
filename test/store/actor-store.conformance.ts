/**
 * The ActorStore conformance suite (issue 46): actors, mailboxes, wakes and schedules. Every
 * RunStore with `actors` runs it from its own test file, beside `describeRunStore`:
 *
 * @example
 * describeActorStore('memory', () => memoryStore());
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NotFoundError } from '../../src/errors/not-found-error.js';
import { QueueFullError } from '../../src/errors/queue-full-error.js';
import {
  actorEntry,
  actorIdOf,
  type ActorRecord,
  type ScheduleRecord,
  type WakeRecord,
} from '../../src/store/actor-records.js';
import type { ActorStore } from '../../src/store/actor-store.js';
import { zeroUsage, type StepRecord } from '../../src/store/records.js';
import { flushed, type RunStore } from '../../src/store/run-store.js';
import { makeRun, makeStep, uid } from '../support/records.js';

/** A new actor of `name` under a unique key, with its run's record. */
function newActor(
  name = 'notebook',
  overrides: Partial<ActorRecord> = {},
): { actor: ActorRecord; run: ReturnType<typeof makeRun> } {
  const key = overrides.key ?? uid('k');
  const userId = overrides.user_id === undefined ? 'user-1' : overrides.user_id;
  const run = makeRun({ entry: actorEntry(name, key), user_id: userId });
  const actor: ActorRecord = {
    actor_id: actorIdOf(userId, name, key),
    user_id: userId,
    name,
    key,
    run_id: run.run_id,
    version: 1,
    state: { notes: [] },
    status: 'idle',
    created_at: new Date().toISOString(),
    updated_at: new Date().toISOString(),
    ...overrides,
  };
  return { actor, run: { ...run, run_id: actor.run_id } };
}

/** A queued message step of `actor`. */
function message(actor: ActorRecord, overrides: Partial<StepRecord> = {}): StepRecord {
  return makeStep(actor.run_id, {
    name: actor.name,
    actor_path: [actor.name],
    input: { text: 'hello' },
    status: 'queued',
    started_at: null,
    ...overrides,
  });
}

/** A pending wake of `actor`. */
function wake(actor: ActorRecord, overrides: Partial<WakeRecord> = {}): WakeRecord {
  return {
    wake_id: uid('wake'),
    actor_id: actor.actor_id,
    user_id: actor.user_id,
    kind: 'sleep',
    step_id: null,
    due_at: 1_000,
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
    ...overrides,
  };
}

/** A schedule of user-1. */
function schedule(overrides: Partial<ScheduleRecord> = {}): ScheduleRecord {
  return {
    schedule_id: uid('sched'),
    user_id: 'user-1',
    agent: 'notebook',
    key: 'k-1',
    message: { text: 'tick' },
    cron: '*/5 * * * *',
    timezone: 'UTC',
    overlap: 'skip',
    catchup: false,
    status: 'active',
    next_at: 5_000,
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
    ...overrides,
  };
}

/** Registers the ActorStore conformance suite for the RunStore that `create` makes. */
export function describeActorStore(name: string, create: () => Promise<RunStore> | RunStore): void {
  describe(`ActorStore conformance: ${name}`, () => {
    let store: RunStore;
    let actors: ActorStore;

    beforeEach(async () => {
      store = await create();
      if (!store.actors) throw new Error(`${name} has no actors`);
      actors = store.actors;
    });

    afterEach(async () => {
      await store.close();
    });

    /** An actor opened (with its run) in the store. */
    async function opened(
      agent = 'notebook',
      overrides: Partial<ActorRecord> = {},
    ): Promise<ActorRecord> {
      const { actor, run } = newActor(agent, overrides);
      const got = await actors.openActor(actor, run);
      await flushed(store);
      return got.actor;
    }

    describe('actors', () => {
      it('creates an actor with its run once; opening it again finds it and writes nothing', async () => {
        const { actor, run } = newActor();
        const first = await actors.openActor(actor, run);
        expect(first.created).toBe(true);
        const again = await actors.openActor(
          { ...actor, run_id: 'run_other', state: { notes: ['x'] } },
          { ...run, run_id: 'run_other' },
        );
        await flushed(store);
        expect(again.created).toBe(false);
        expect(again.actor).toEqual(actor);
        expect(await actors.getActor(actor.actor_id)).toEqual(actor);
        expect((await store.getRun(actor.run_id))?.entry).toBe(actorEntry('notebook', actor.key));
        expect(await store.getRun('run_other')).toBeNull();
      });

      it('of concurrent opens of one actor, one creates it', async () => {
        const { actor, run } = newActor();
        const opens = await Promise.all(
          [1, 2, 3].map((i) =>
            actors.openActor(
              { ...actor, run_id: `${run.run_id}-${i}` },
              { ...run, run_id: `${run.run_id}-${i}` },
            ),
          ),
        );
        await flushed(store);
        expect(opens.filter((o) => o.created)).toHaveLength(1);
        const runIds = new Set(opens.map((o) => o.actor.run_id));
        expect(runIds.size).toBe(1);
      });

      it('gives the same actor id for the same user, name and key, and others for others', () => {
        expect(actorIdOf('u', 'a', 'k')).toBe(actorIdOf('u', 'a', 'k'));
        expect(actorIdOf('u', 'a', 'k')).not.toBe(actorIdOf('v', 'a', 'k'));
        expect(actorIdOf(null, 'a', 'k')).not.toBe(actorIdOf('u', 'a', 'k'));
        expect(actorIdOf('u', 'a', 'k')).not.toBe(actorIdOf('u', 'b', 'k'));
        expect(actorIdOf('u', 'a', 'k')).toMatch(/^actor_[0-9a-f]{32}$/);
      });

      it('reads null for an unknown actor', async () => {
        expect(await actors.getActor('actor_nope')).toBeNull();
      });

      it('pages actors newest first, by user, agent, status and key prefix', async () => {
        const user = uid('user');
        const made: ActorRecord[] = [];
        for (let i = 0; i < 5; i++) {
          made.push(
            await opened(i % 2 === 0 ? 'notebook' : 'follow-up', {
              user_id: user,
              key: `cust-${i}-${uid('k')}`,
            }),
          );
        }
        const mine = await actors.pageActors({ userId: user, limit: 10 });
        expect(mine.map((a) => a.actor_id)).toEqual(made.map((a) => a.actor_id).reverse());
        const page1 = await actors.pageActors({ userId: user, limit: 2 });
        const page2 = await actors.pageActors({
          userId: user,
          limit: 2,
          before: page1.at(-1)?.actor_id ?? '',
        });
        expect([...page1, ...page2].map((a) => a.actor_id)).toEqual(
          mine.slice(0, 4).map((a) => a.actor_id),
        );
        const notebooks = await actors.pageActors({ userId: user, name: 'notebook', limit: 10 });
        expect(notebooks.map((a) => a.key)).toEqual([made[4], made[2], made[0]].map((a) => a?.key));
        const third = await actors.pageActors({ userId: user, keyPrefix: 'cust-3-', limit: 10 });
        expect(third.map((a) => a.actor_id)).toEqual([made[3]?.actor_id]);
        expect(await actors.pageActors({ userId: user, status: ['live'], limit: 10 })).toEqual([]);
        await expect(actors.pageActors({ limit: 1, before: 'actor_nope' })).rejects.toThrow(
          NotFoundError,
        );
      });
    });

    describe('mailboxes', () => {
      it('accepts a message queued in the actor run and makes the actor live', async () => {
        const actor = await opened();
        const step = message(actor, { client_token: 'm-1' });
        const accepted = await actors.acceptMessage(actor.actor_id, step, 10);
        await flushed(store);
        expect(accepted.created).toBe(true);
        expect(accepted.step.step_id).toBe(step.step_id);
        expect((await store.getStep(step.step_id))?.status).toBe('queued');
        expect((await actors.getActor(actor.actor_id))?.status).toBe('live');
        expect(await actors.mailboxDepth(actor.actor_id)).toBe(1);
      });

      it('answers a client token seen before with its message, and accepts nothing', async () => {
        const actor = await opened();
        const first = message(actor, { client_token: 'm-1' });
        await actors.acceptMessage(actor.actor_id, first, 10);
        const again = await actors.acceptMessage(
          actor.actor_id,
          message(actor, { client_token: 'm-1', input: { text: 'other' } }),
          10,
        );
        await flushed(store);
        expect(again.created).toBe(false);
        expect(again.step.step_id).toBe(first.step_id);
        expect(again.step.input).toEqual({ text: 'hello' });
        expect(await actors.mailboxDepth(actor.actor_id)).toBe(1);
      });

      it('refuses a message past maxQueue with QUEUE_FULL, and accepts none of it', async () => {
        const actor = await opened();
        await actors.acceptMessage(actor.actor_id, message(actor), 2);
        await actors.acceptMessage(actor.actor_id, message(actor), 2);
        const third = message(actor, { client_token: 'm-3' });
        const refused = await actors
          .acceptMessage(actor.actor_id, third, 2)
          .catch((e: unknown) => e);
        await flushed(store);
        expect(refused).toBeInstanceOf(QueueFullError);
        expect((refused as QueueFullError).code).toBe('QUEUE_FULL');
        expect(await store.getStep(third.step_id)).toBeNull();
        expect(await actors.mailboxDepth(actor.actor_id)).toBe(2);
      });

      it('counts a taken message out of the depth, and lists it first among the open ones', async () => {
        const actor = await opened();
        const [a, b, c] = [message(actor), message(actor), message(actor)];
        for (const m of [a, b, c]) await actors.acceptMessage(actor.actor_id, m, 10);
        await actors.takeMessage(actor.actor_id, a.step_id);
        await flushed(store);
        expect(await actors.mailboxDepth(actor.actor_id)).toBe(2);
        expect((await actors.openMessages(actor.actor_id, 10)).map((s) => s.step_id)).toEqual([
          a.step_id,
          b.step_id,
          c.step_id,
        ]);
        expect((await actors.openMessages(actor.actor_id, 2)).map((s) => s.step_id)).toEqual([
          a.step_id,
          b.step_id,
        ]);
        // A taken message's slot is free: the mailbox takes another up to its bound.
        await actors.acceptMessage(actor.actor_id, message(actor), 3);
        await expect(actors.acceptMessage(actor.actor_id, message(actor), 3)).rejects.toThrow(
          QueueFullError,
        );
      });

      it('refuses a message to an unknown actor with NOT_FOUND', async () => {
        const { actor } = newActor();
        await expect(actors.acceptMessage(actor.actor_id, message(actor), 10)).rejects.toThrow(
          NotFoundError,
        );
      });

      it("writes a message's end, the actor's new state and its mailbox in one write", async () => {
        const actor = await opened();
        const [a, b] = [message(actor), message(actor)];
        await actors.acceptMessage(actor.actor_id, a, 10);
        await actors.acceptMessage(actor.actor_id, b, 10);
        await actors.takeMessage(actor.actor_id, a.step_id);
        await store.updateStep(a.step_id, { status: 'running', started_at: a.created_at });
        await store.endStep({
          stepId: a.step_id,
          runId: actor.run_id,
          events: [],
          patch: { status: 'succeeded', output: { count: 1 }, ended_at: a.created_at },
          runUsage: zeroUsage(),
          actor: {
            actor_id: actor.actor_id,
            state: { value: { notes: ['hello'] }, version: 2 },
            updated_at: '2026-12-06T00:00:00.000Z',
          },
        });
        await flushed(store);
        const after = await actors.getActor(actor.actor_id);
        expect(after?.state).toEqual({ notes: ['hello'] });
        expect(after?.version).toBe(2);
        expect(after?.updated_at).toBe('2026-12-06T00:00:00.000Z');
        // b is still queued: the actor is live.
        expect(after?.status).toBe('live');
        expect((await store.getStep(a.step_id))?.status).toBe('succeeded');
        expect((await actors.openMessages(actor.actor_id, 10)).map((s) => s.step_id)).toEqual([
          b.step_id,
        ]);
        await actors.takeMessage(actor.actor_id, b.step_id);
        await store.endStep({
          stepId: b.step_id,
          runId: actor.run_id,
          events: [],
          patch: { status: 'failed', ended_at: b.created_at },
          actor: { actor_id: actor.actor_id, updated_at: '2026-12-06T00:00:01.000Z' },
        });
        await flushed(store);
        const idle = await actors.getActor(actor.actor_id);
        // A failed message leaves the state as it was.
        expect(idle?.state).toEqual({ notes: ['hello'] });
        expect(idle?.status).toBe('idle');
        expect(await actors.mailboxDepth(actor.actor_id)).toBe(0);
      });

      it('ends the messages merged into one with it, and removes the wakes of all of them', async () => {
        const actor = await opened();
        const [a, b, c] = [message(actor), message(actor), message(actor)];
        for (const m of [a, b, c]) await actors.acceptMessage(actor.actor_id, m, 10);
        await actors.takeMessage(actor.actor_id, a.step_id);
        await actors.putWake(wake(actor, { wake_id: `${a.step_id}.1`, step_id: a.step_id }));
        const other = await opened();
        const kept = wake(other, { wake_id: uid('kept') });
        await actors.putWake(kept);
        const merged = { status: 'succeeded', output: { merged_into: a.step_id } } as const;
        await store.endStep({
          stepId: a.step_id,
          runId: actor.run_id,
          events: [],
          patch: { status: 'succeeded', output: { count: 3 } },
          actor: {
            actor_id: actor.actor_id,
            state: { value: { notes: ['a', 'b', 'c'] }, version: 1 },
            updated_at: '2026-12-06T00:00:00.000Z',
            merged: [
              { stepId: b.step_id, patch: merged },
              { stepId: c.step_id, patch: merged },
            ],
          },
        });
        await flushed(store);
        expect((await store.getStep(b.step_id))?.output).toEqual({ merged_into: a.step_id });
        expect((await store.getStep(c.step_id))?.status).toBe('succeeded');
        expect(await actors.openMessages(actor.actor_id, 10)).toEqual([]);
        expect((await actors.getActor(actor.actor_id))?.status).toBe('idle');
        expect(await actors.getWake(`${a.step_id}.1`)).toBeNull();
        expect(await actors.getWake(kept.wake_id)).not.toBeNull();
      });

      it('refuses the end of a message of an unknown actor, and writes none of the step end', async () => {
        const actor = await opened();
        const a = message(actor);
        await actors.acceptMessage(actor.actor_id, a, 10);
        await flushed(store);
        await expect(
          store.endStep({
            stepId: a.step_id,
            runId: actor.run_id,
            events: [],
            patch: { status: 'succeeded' },
            actor: { actor_id: 'actor_nope', updated_at: '2026-12-06T00:00:00.000Z' },
          }),
        ).rejects.toThrow(NotFoundError);
        await flushed(store).catch(() => undefined);
        expect((await store.getStep(a.step_id))?.status).toBe('queued');
      });

      it('sets statuses and lists the actors with some, in id order, page by page', async () => {
        const made = [await opened(), await opened(), await opened()];
        const live = made.slice(0, 2);
        for (const a of live) await actors.setActorStatus(a.actor_id, 'live', a.updated_at);
        await actors.setActorStatus(made[2]?.actor_id ?? '', 'waiting', '2026-01-01T00:00:00Z');
        await flushed(store);
        const ids = new Set(made.map((a) => a.actor_id));
        const all: ActorRecord[] = [];
        let after: string | null = null;
        for (;;) {
          const page: ActorRecord[] = await actors.actorsWith(['live'], after, 1);
          if (page.length === 0) break;
          all.push(...page);
          after = page.at(-1)?.actor_id ?? null;
        }
        const found = all.filter((a) => ids.has(a.actor_id)).map((a) => a.actor_id);
        expect(found).toEqual(live.map((a) => a.actor_id).sort());
        expect(
          (await actors.actorsWith(['waiting'], null, 1000)).some(
            (a) => a.actor_id === made[2]?.actor_id,
          ),
        ).toBe(true);
        await expect(
          actors.setActorStatus('actor_nope', 'live', '2026-01-01T00:00:00Z'),
        ).rejects.toThrow(NotFoundError);
      });
    });

    describe('wakes', () => {
      it('stores a wake once, and finds it again by its id', async () => {
        const actor = await opened();
        const w = wake(actor);
        expect((await actors.putWake(w)).created).toBe(true);
        const again = await actors.putWake({ ...w, due_at: 9 });
        await flushed(store);
        expect(again.created).toBe(false);
        expect(again.wake.due_at).toBe(1_000);
        expect(await actors.getWake(w.wake_id)).toEqual(w);
      });

      it('gives the due wakes soonest first, from one index, and the next due time', async () => {
        const actor = await opened();
        const base = 10_000_000 + Math.floor(Math.random() * 1_000_000);
        const later = wake(actor, { due_at: base + 30 });
        const sooner = wake(actor, { due_at: base + 10 });
        const middle = wake(actor, { due_at: base + 20 });
        const eventless = wake(actor, { kind: 'event', event: 'x', due_at: null });
        for (const w of [later, sooner, middle, eventless]) await actors.putWake(w);
        await flushed(store);
        const mine = (ws: WakeRecord[]): string[] =>
          ws.filter((w) => w.actor_id === actor.actor_id).map((w) => w.wake_id);
        expect(mine(await actors.dueWakes(base + 20, 1000))).toEqual([
          sooner.wake_id,
          middle.wake_id,
        ]);
        const next = await actors.nextWakeAt();
        expect(next).not.toBeNull();
        expect(next ?? Infinity).toBeLessThanOrEqual(base + 10);
        expect(mine(await actors.actorWakes(actor.actor_id))).toEqual([
          sooner.wake_id,
          middle.wake_id,
          later.wake_id,
          eventless.wake_id,
        ]);
      });

      it('fires a wake once: the second firing finds it fired and writes nothing', async () => {
        const actor = await opened();
        const w = wake(actor, { kind: 'event', event: 'approved', due_at: 5_000 });
        await actors.putWake(w);
        const [first, second] = await Promise.all([
          actors.fireWake(w.wake_id, { answer: 'yes' }, 2_000, false),
          actors.fireWake(w.wake_id, null, 5_000, true),
        ]);
        await flushed(store);
        expect(first?.status).toBe('fired');
        expect(first?.data).toEqual({ answer: 'yes' });
        expect(second).toBeNull();
        const stored = await actors.getWake(w.wake_id);
        expect(stored?.data).toEqual({ answer: 'yes' });
        expect(stored?.timed_out).toBe(false);
        expect(stored?.fired_at).toBe(2_000);
        expect((await actors.dueWakes(10_000, 1000)).map((x) => x.wake_id)).not.toContain(
          w.wake_id,
        );
        expect((await actors.firedWakes(10_000)).map((x) => x.wake_id)).toContain(w.wake_id);
        expect(await actors.fireWake('wake_nope', null, 1, false)).toBeNull();
      });

      it('rearms a reminder for its next period, and deletes wakes', async () => {
        const actor = await opened();
        const base = 20_000_000 + Math.floor(Math.random() * 1_000_000);
        const reminder = wake(actor, {
          kind: 'reminder',
          name: 'daily',
          due_at: base,
          every_ms: 100,
          message: { text: 'hi' },
        });
        await actors.putWake(reminder);
        await actors.fireWake(reminder.wake_id, null, base, false);
        await actors.rearmWake(reminder.wake_id, base + 100);
        await flushed(store);
        const rearmed = await actors.getWake(reminder.wake_id);
        expect(rearmed?.status).toBe('pending');
        expect(rearmed?.due_at).toBe(base + 100);
        const due = (await actors.dueWakes(base + 100, 1000)).map((w) => w.wake_id);
        expect(due.filter((id) => id === reminder.wake_id)).toHaveLength(1);
        await actors.deleteWakes([reminder.wake_id, 'wake_nope']);
        await flushed(store);
        expect(await actors.getWake(reminder.wake_id)).toBeNull();
        expect((await actors.dueWakes(base + 100, 1000)).map((w) => w.wake_id)).not.toContain(
          reminder.wake_id,
        );
      });

      it('finds the pending waits for an event of one user only, oldest first', async () => {
        const mine = await opened('follow-up', { user_id: uid('u') });
        const theirs = await opened('follow-up', { user_id: uid('u') });
        const event = uid('ev');
        const w1 = wake(mine, { kind: 'event', event, due_at: null, created_at: 1 });
        const w2 = wake(mine, {
          kind: 'event',
          event,
          due_at: null,
          created_at: 2,
          match: { id: 1 },
        });
        const other = wake(theirs, { kind: 'event', event, due_at: null });
        const otherEvent = wake(mine, { kind: 'event', event: `${event}-x`, due_at: null });
        for (const w of [w2, w1, other, otherEvent]) await actors.putWake(w);
        await actors.fireWake(w2.wake_id, {}, 3, false);
        await flushed(store);
        expect((await actors.eventWaiters(mine.user_id, event, 100)).map((w) => w.wake_id)).toEqual(
          [w1.wake_id],
        );
        expect(
          (await actors.eventWaiters(theirs.user_id, event, 100)).map((w) => w.wake_id),
        ).toEqual([other.wake_id]);
      });
    });

    describe('schedules', () => {
      it('stores, reads, lists by user, patches and deletes schedules', async () => {
        const user = uid('user');
        const s = schedule({ user_id: user });
        const t = schedule({ user_id: user, cron: '0 9 * * *' });
        const other = schedule({ user_id: uid('user') });
        for (const x of [s, t, other]) expect((await actors.putSchedule(x)).created).toBe(true);
        expect((await actors.putSchedule({ ...s, cron: '* * * * *' })).created).toBe(false);
        await flushed(store);
        expect(await actors.getSchedule(s.schedule_id)).toEqual(s);
        expect((await actors.listSchedules(user)).map((x) => x.schedule_id)).toEqual([
          s.schedule_id,
          t.schedule_id,
        ]);
        expect((await actors.listSchedules()).map((x) => x.schedule_id)).toEqual(
          expect.arrayContaining([s.schedule_id, t.schedule_id, other.schedule_id]),
        );
        await actors.updateSchedule(s.schedule_id, { status: 'paused', updated_at: 'later' });
        await flushed(store);
        expect((await actors.getSchedule(s.schedule_id))?.status).toBe('paused');
        await expect(actors.updateSchedule('sched_nope', { status: 'paused' })).rejects.toThrow(
          NotFoundError,
        );
        expect(await actors.deleteSchedule(t.schedule_id)).toBe(true);
        expect(await actors.deleteSchedule(t.schedule_id)).toBe(false);
        await flushed(store);
        expect(await actors.getSchedule(t.schedule_id)).toBeNull();
      });

      it('gives the due active schedules soonest first, and the next firing', async () => {
        const base = 30_000_000 + Math.floor(Math.random() * 1_000_000);
        const a = schedule({ next_at: base + 20 });
        const b = schedule({ next_at: base + 10 });
        const paused = schedule({ next_at: base, status: 'paused' });
        const done = schedule({ next_at: null });
        for (const x of [a, b, paused, done]) await actors.putSchedule(x);
        await flushed(store);
        const ids = new Set([a, b, paused, done].map((x) => x.schedule_id));
        const due = (await actors.dueSchedules(base + 20, 1000))
          .map((x) => x.schedule_id)
          .filter((id) => ids.has(id));
        expect(due).toEqual([b.schedule_id, a.schedule_id]);
        expect((await actors.nextScheduleAt()) ?? Infinity).toBeLessThanOrEqual(base + 10);
      });
    });
  });
}
