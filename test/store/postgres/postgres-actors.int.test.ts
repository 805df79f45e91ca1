/**
 * The PostgreSQL store's durable agents across processes (issue 46): two stores on one schema,
 * each with its own connections, standing for two processes. Opening an actor, accepting a
 * message (its client token and its mailbox's bound) and firing a wake are each atomic across
 * them; a message's end is its step end's write, so a refused end (a log out of order, a
 * fleet turn lost) changes nothing of the actor either.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConflictError } from '../../../src/errors/conflict-error.js';
import { QueueFullError } from '../../../src/errors/queue-full-error.js';
import { WorkerLostError } from '../../../src/errors/worker-lost-error.js';
import {
  actorEntry,
  actorIdOf,
  type ActorRecord,
  type WakeRecord,
} from '../../../src/store/actor-records.js';
import {
  postgresStore,
  type PostgresRunStore,
} from '../../../src/store/postgres/postgres-store.js';
import type { RunRecord, StepRecord } from '../../../src/store/records.js';
import type { TurnFence } from '../../../src/store/write-target.js';
import { dropSchemas, POSTGRES_URL, sql, testSchema } from '../../support/postgres.js';
import { makeRun, makeStep, narration, uid } from '../../support/records.js';

const schema = testSchema('pg_actors');
const turns: TurnFence[] = [];
let a: PostgresRunStore;
let b: PostgresRunStore;

beforeAll(async () => {
  await dropSchemas([schema]);
  // `a` fences its writes with the turns in `turns` (a fleet replica's), `b` does not.
  a = postgresStore({
    connection: POSTGRES_URL,
    schema,
    fence: (target) => turns.find((t) => t.stepId === target.stepId) ?? null,
  });
  b = postgresStore({ connection: POSTGRES_URL, schema });
  await a.ready();
  await b.ready();
});

afterAll(async () => {
  await Promise.all([a.close(), b.close()]);
  await dropSchemas([schema]);
});

/** A new actor under a unique key, and its run's record, with `runId` for its run. */
function newActor(key = uid('k'), runId = uid('run')): { actor: ActorRecord; run: RunRecord } {
  const run = makeRun({ run_id: runId, entry: actorEntry('notebook', key), user_id: 'u' });
  const actor: ActorRecord = {
    actor_id: actorIdOf('u', 'notebook', key),
    user_id: 'u',
    name: 'notebook',
    key,
    run_id: runId,
    version: 1,
    state: { notes: [] },
    status: 'idle',
    created_at: run.created_at,
    updated_at: run.created_at,
  };
  return { actor, run };
}

/** An actor opened through `a`. */
async function opened(): Promise<ActorRecord> {
  const { actor, run } = newActor();
  return (await a.actors.openActor(actor, run)).actor;
}

/** A queued message step of `actor`. */
const message = (actor: ActorRecord, overrides: Partial<StepRecord> = {}): StepRecord =>
  makeStep(actor.run_id, { status: 'queued', started_at: null, ...overrides });

describe('durable agents in PostgreSQL, from two processes at once', () => {
  it('of two processes opening the same actors at once, one creates each, with one run', async () => {
    const keys = Array.from({ length: 40 }, () => uid('k'));
    const open = (store: PostgresRunStore, side: string, order: string[]) =>
      Promise.all(
        order.map((key) => {
          const { actor, run } = newActor(key, `run_${side}_${key}`);
          return store.actors.openActor(actor, run);
        }),
      );
    // Opposite orders: the two batches meet on every row, from both ends.
    const [fromA, fromB] = await Promise.all([
      open(a, 'a', keys),
      open(b, 'b', [...keys].reverse()),
    ]);
    const byKey = new Map(fromB.map((o) => [o.actor.key, o]));
    for (const [i, key] of keys.entries()) {
      const one = fromA[i];
      const other = byKey.get(key);
      expect([one?.created, other?.created].filter(Boolean)).toHaveLength(1);
      expect(other?.actor).toEqual(one?.actor);
      // The loser's run was never written: one run per actor.
      const runs = await sql<{ n: number }>(
        `SELECT count(*)::int AS n FROM "${schema}".runs WHERE entry = $1`,
        [actorEntry('notebook', key)],
      );
      expect(runs).toEqual([{ n: 1 }]);
      expect((await b.getRun(one?.actor.run_id ?? ''))?.entry).toBe(actorEntry('notebook', key));
    }
  });

  it('of two processes firing the same wakes at once, one fires each, with its data', async () => {
    const actor = await opened();
    const wakes: WakeRecord[] = Array.from({ length: 40 }, () => ({
      wake_id: uid('wake'),
      actor_id: actor.actor_id,
      user_id: actor.user_id,
      kind: 'event',
      step_id: null,
      due_at: 5_000,
      event: 'approved',
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
    }));
    await Promise.all(wakes.map((w) => a.actors.putWake(w)));
    const [byA, byB] = await Promise.all([
      Promise.all(wakes.map((w) => a.actors.fireWake(w.wake_id, { by: 'a' }, 2_000, false))),
      Promise.all(wakes.map((w) => b.actors.fireWake(w.wake_id, null, 5_000, true))),
    ]);
    for (const [i, w] of wakes.entries()) {
      const winners = [byA[i], byB[i]].filter((x) => x !== null);
      expect(winners).toHaveLength(1);
      expect(await b.actors.getWake(w.wake_id)).toEqual(winners[0]);
    }
  });

  it('messages sent by two processes at once fill the mailbox to its bound and no further', async () => {
    const actor = await opened();
    const send = (store: PostgresRunStore) =>
      Promise.allSettled(
        Array.from({ length: 10 }, () =>
          store.actors.acceptMessage(actor.actor_id, message(actor), 5),
        ),
      );
    const settled = (await Promise.all([send(a), send(b)])).flat();
    const accepted = settled.filter((s) => s.status === 'fulfilled');
    expect(accepted).toHaveLength(5);
    for (const s of settled) {
      if (s.status === 'rejected') expect(s.reason).toBeInstanceOf(QueueFullError);
    }
    expect(await a.actors.mailboxDepth(actor.actor_id)).toBe(5);
    // A refused message left no step in the actor's run.
    expect(await b.listSteps(actor.run_id)).toHaveLength(5);
    expect((await b.actors.getActor(actor.actor_id))?.status).toBe('live');
  });

  it('a client token sent by two processes at once is one message, and both are answered with it', async () => {
    const actor = await opened();
    const tokens = Array.from({ length: 20 }, (_, i) => `m-${i}`);
    const send = (store: PostgresRunStore) =>
      Promise.all(
        tokens.map((t) =>
          store.actors.acceptMessage(actor.actor_id, message(actor, { client_token: t }), 100),
        ),
      );
    const [fromA, fromB] = await Promise.all([send(a), send(b)]);
    for (const [i] of tokens.entries()) {
      const pair = [fromA[i], fromB[i]];
      expect(pair.filter((x) => x?.created)).toHaveLength(1);
      expect(pair[0]?.step.step_id).toBe(pair[1]?.step.step_id);
    }
    expect(await a.actors.mailboxDepth(actor.actor_id)).toBe(tokens.length);
    expect(await b.listSteps(actor.run_id)).toHaveLength(tokens.length);
  });
});

describe('a message’s end in PostgreSQL is its step end’s one write', () => {
  /** An actor with message `taken` running (and a wake of it) and `next` queued. */
  async function busy(): Promise<{ actor: ActorRecord; taken: StepRecord; next: StepRecord }> {
    const actor = await opened();
    const [taken, next] = [message(actor), message(actor)];
    await a.actors.acceptMessage(actor.actor_id, taken, 10);
    await a.actors.acceptMessage(actor.actor_id, next, 10);
    await b.actors.takeMessage(actor.actor_id, taken.step_id);
    await b.updateStep(taken.step_id, { status: 'running' });
    await b.actors.putWake({
      wake_id: `${taken.step_id}.1`,
      actor_id: actor.actor_id,
      user_id: actor.user_id,
      kind: 'sleep',
      step_id: taken.step_id,
      due_at: 1_000,
      event: null,
      name: null,
      match: null,
      schema: null,
      message: null,
      every_ms: null,
      status: 'fired',
      data: null,
      timed_out: false,
      fired_at: 1_000,
      created_at: 1,
    });
    return { actor, taken, next };
  }

  /** What a user sees of the actor: its record, its open messages and its wakes. */
  async function seen(actor: ActorRecord): Promise<unknown> {
    return {
      actor: await b.actors.getActor(actor.actor_id),
      open: (await b.actors.openMessages(actor.actor_id, 10)).map((s) => [s.step_id, s.status]),
      wakes: (await b.actors.actorWakes(actor.actor_id)).map((w) => w.wake_id),
    };
  }

  const end = (actor: ActorRecord, step: StepRecord, events = [narration(step.step_id, 1)]) => ({
    stepId: step.step_id,
    runId: actor.run_id,
    events,
    patch: { status: 'succeeded' as const, output: 'ok' },
    actor: {
      actor_id: actor.actor_id,
      state: { value: { notes: ['ended'] }, version: 2 },
      updated_at: '2026-12-07T00:00:00.000Z',
    },
  });

  it('an end whose log does not continue is refused whole: the actor keeps its state, mailbox and wakes', async () => {
    const { actor, taken } = await busy();
    const before = await seen(actor);
    await expect(
      a.endStep(end(actor, taken, [narration(taken.step_id, 2)])),
    ).rejects.toBeInstanceOf(ConflictError);
    expect(await seen(actor)).toEqual(before);
    expect((await b.getStep(taken.step_id))?.status).toBe('running');
  });

  it('an end by a replica whose turn another took is refused whole; the later turn’s end is written whole', async () => {
    const { actor, taken, next } = await busy();
    turns.push({ stepId: taken.step_id, token: 'replica-a:1' });
    await a.takeTurn(taken.step_id, 1, 'replica-a:1');
    await b.takeTurn(taken.step_id, 2, 'replica-b:1');
    const before = await seen(actor);
    const lost = await a.endStep(end(actor, taken)).catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(WorkerLostError);
    expect(await seen(actor)).toEqual(before);

    await b.endStep(end(actor, taken));
    expect(await seen(actor)).toEqual({
      actor: {
        ...actor,
        state: { notes: ['ended'] },
        version: 2,
        status: 'live',
        updated_at: '2026-12-07T00:00:00.000Z',
      },
      open: [[next.step_id, 'queued']],
      wakes: [],
    });
    expect((await a.getStep(taken.step_id))?.output).toBe('ok');
    expect((await a.readEvents(taken.step_id)).map((e) => e.seq)).toEqual([1]);
  });
});
