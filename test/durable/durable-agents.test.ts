/**
 * Durable agents on the in-memory store (issue 46): identity and messages, the mailbox and its
 * policies, state versions, passivation, and errors a user would meet.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../src/actors/define-agent.js';
import { ConflictError } from '../../src/errors/conflict-error.js';
import { InvalidParamsError } from '../../src/errors/invalid-params-error.js';
import { NotFoundError } from '../../src/errors/not-found-error.js';
import { QueueFullError } from '../../src/errors/queue-full-error.js';
import { SchemaViolationError } from '../../src/errors/schema-violation-error.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import { durableRuntime, notebook, until } from './durable-fixtures.js';

let runtimes: Runtime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.map((r) => r.close()));
  runtimes = [];
});

function start(...args: Parameters<typeof durableRuntime>): ReturnType<typeof durableRuntime> {
  const made = durableRuntime(...args);
  runtimes.push(made.runtime);
  return made;
}

/** A gate a handler waits on until the test opens it. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { wait, open };
}

/** A durable agent whose handler waits for the test's gate of each message. */
function gatedAgent(
  name: string,
  mailbox: Parameters<typeof defineAgent>[0] extends never ? never : object,
  gates: Map<string, ReturnType<typeof gate>>,
) {
  return defineAgent({
    name,
    input: z.object({ id: z.string() }),
    durable: {
      state: z.object({ seen: z.array(z.string()) }),
      initial: { seen: [] },
      version: 1,
      mailbox,
    },
    handler: async (message, actor) => {
      const g = gates.get(message.id);
      if (g) await g.wait;
      return { state: { seen: [...actor.state.seen, message.id] }, output: message.id };
    },
  });
}

describe('durable agents: identity and messages', () => {
  it('keeps state between messages and handles them in the order they were accepted', async () => {
    const { runtime } = start([notebook]);
    const notes = runtime.actor('notebook', 'customer-42');
    expect(await notes.state()).toBeNull();
    const receipts = await Promise.all(['a', 'b', 'c'].map((text) => notes.send({ text })));
    expect(receipts.map((r) => r.status)).toEqual(['queued', 'queued', 'queued']);
    expect(new Set(receipts.map((r) => r.run_id)).size).toBe(1);
    expect(await notes.ask({ text: 'd' })).toEqual({ count: 4 });
    const view = await notes.state();
    expect(view?.state).toEqual({ notes: ['a', 'b', 'c', 'd'] });
    expect(view?.mailbox_depth).toBe(0);
    expect(view?.run_id).toBe(receipts[0]?.run_id);
    // Each message is a step of the actor's run, in order.
    const steps = await runtime.listSteps(view?.run_id ?? '');
    expect(steps.map((s) => s.input)).toEqual(['a', 'b', 'c', 'd'].map((text) => ({ text })));
    expect(steps.every((s) => s.status === 'succeeded')).toBe(true);
  });

  it('is one actor per (name, key) and per user: other keys and users share nothing', async () => {
    const { runtime } = start([notebook]);
    await runtime.actor('notebook', 'k').ask({ text: 'mine' });
    await runtime.actor('notebook', 'k', { userId: 'u2' }).ask({ text: 'theirs' });
    await runtime.actor('notebook', 'other').ask({ text: 'elsewhere' });
    expect((await runtime.actor('notebook', 'k').state())?.state).toEqual({ notes: ['mine'] });
    expect((await runtime.actor('notebook', 'k', { userId: 'u2' }).state())?.state).toEqual({
      notes: ['theirs'],
    });
  });

  it('answers a client token seen before with the first message, and runs nothing', async () => {
    const { runtime } = start([notebook]);
    const notes = runtime.actor('notebook', 'tok');
    const first = await notes.send({ text: 'once' }, { clientToken: 'm-1' });
    const again = await notes.send({ text: 'twice?' }, { clientToken: 'm-1' });
    expect(again.created).toBe(false);
    expect(again.step_id).toBe(first.step_id);
    expect(await notes.ask({ text: 'then' })).toEqual({ count: 2 });
    expect((await notes.state())?.state).toEqual({ notes: ['once', 'then'] });
  });

  it('refuses a message failing the input schema before accepting it (SCHEMA_VIOLATION)', async () => {
    const { runtime } = start([notebook]);
    const notes = runtime.actor('notebook', 'strict');
    const refused = await notes.send({ txt: 'typo' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(SchemaViolationError);
    expect((refused as SchemaViolationError).code).toBe('SCHEMA_VIOLATION');
    expect(await notes.state()).toBeNull();
  });

  it('refuses an unknown agent (NOT_FOUND) and a key of the wrong form (INVALID_PARAMS)', () => {
    const { runtime } = start([notebook]);
    expect(() => runtime.actor('nobody', 'k')).toThrow(NotFoundError);
    for (const key of ['', 'has space', 'x'.repeat(129), 'a/b']) {
      expect(() => runtime.actor('notebook', key)).toThrow(InvalidParamsError);
    }
    expect(() => runtime.actor('notebook', 'A-z.0_9~')).not.toThrow();
  });

  it('fails a message whose handler throws, leaving the state as it was', async () => {
    const picky = defineAgent({
      name: 'picky',
      input: z.object({ n: z.number() }),
      durable: { state: z.object({ total: z.number() }), initial: { total: 0 }, version: 1 },
      handler: (message, actor) => {
        if (message.n < 0) throw new Error('no negatives');
        return {
          state: { total: actor.state.total + message.n },
          output: actor.state.total + message.n,
        };
      },
    });
    const { runtime } = start([picky]);
    const a = runtime.actor('picky', 'p');
    expect(await a.ask({ n: 2 })).toBe(2);
    const failed = await a.ask({ n: -1 }).catch((e: unknown) => e);
    expect(failed).toMatchObject({ code: 'INTERNAL' });
    expect((await a.state())?.state).toEqual({ total: 2 });
    expect(await a.ask({ n: 3 })).toBe(5);
  });

  it('fails a message whose next state breaks the state schema (SCHEMA_VIOLATION), state kept', async () => {
    const sloppy = defineAgent({
      name: 'sloppy',
      durable: { state: z.object({ n: z.number() }), initial: { n: 1 }, version: 1 },
      handler: () => ({ state: { n: 'not a number' } as unknown as { n: number } }),
    });
    const { runtime } = start([sloppy]);
    const a = runtime.actor('sloppy', 's');
    await expect(a.ask({})).rejects.toMatchObject({ code: 'SCHEMA_VIOLATION' });
    expect((await a.state())?.state).toEqual({ n: 1 });
  });

  it("streams a message step's events, tokens included, and its result", async () => {
    const talker = defineAgent({
      name: 'talker',
      durable: { state: z.object({ said: z.number() }), initial: { said: 0 }, version: 1 },
      async *handler(_m, actor) {
        yield 'hel';
        yield 'lo';
        return { state: { said: actor.state.said + 1 }, output: 'done' };
      },
    });
    const { runtime } = start([talker]);
    const stream = runtime.actor('talker', 't').stream({});
    const types: string[] = [];
    for await (const ev of stream) types.push(ev.type === 'token' ? `token:${ev.t}` : ev.type);
    expect(types).toEqual(['started', 'token:hel', 'token:lo', 'end']);
    expect(await stream.result).toBe('done');
  });

  it('refuses to be invoked like an ordinary agent (INVALID_PARAMS)', async () => {
    const { runtime } = start([notebook]);
    const result = await runtime.invoke('notebook', 'hello');
    expect(result.status).toBe('error');
    expect(result.error).toMatchObject({ code: 'INVALID_PARAMS' });
  });

  it('refuses a durable agent on a store that keeps no actors', () => {
    const store = memoryStore();
    const bare = Object.assign(Object.create(Object.getPrototypeOf(store) as object), store, {
      actors: undefined,
    }) as typeof store;
    expect(() => durableRuntime([notebook], { store: bare })).toThrow(/keeps no durable agents/);
  });
});

describe('durable agents: mailbox policies', () => {
  it('queue: holds at most maxQueue waiting messages; past it QUEUE_FULL, nothing accepted', async () => {
    const gates = new Map([['m1', gate()]]);
    const { runtime } = start([gatedAgent('q', { policy: 'queue', maxQueue: 2 }, gates)]);
    const a = runtime.actor('q', 'k');
    const running = a.ask({ id: 'm1' });
    await until(
      async () => (await a.state())?.status === 'busy' && (await a.state())?.mailbox_depth === 0,
    );
    await a.send({ id: 'm2' });
    await a.send({ id: 'm3' });
    const refused = await a.send({ id: 'm4' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(QueueFullError);
    gates.get('m1')?.open();
    expect(await running).toBe('m1');
    await until(async () => (await a.state())?.mailbox_depth === 0);
    expect(await a.ask({ id: 'm5' })).toBe('m5');
    expect((await a.state())?.state).toEqual({ seen: ['m1', 'm2', 'm3', 'm5'] });
  });

  it('reject: a message to a busy actor is refused CONFLICT; its retry under the same token is answered', async () => {
    const gates = new Map([['m1', gate()]]);
    const { runtime } = start([gatedAgent('r', { policy: 'reject' }, gates)]);
    const a = runtime.actor('r', 'k');
    const first = await a.send({ id: 'm1' }, { clientToken: 't1' });
    await until(async () => (await a.state())?.status === 'busy');
    await expect(a.send({ id: 'm2' })).rejects.toBeInstanceOf(ConflictError);
    const retry = await a.send({ id: 'm1' }, { clientToken: 't1' });
    expect(retry.step_id).toBe(first.step_id);
    gates.get('m1')?.open();
    await until(async () => (await a.state())?.status !== 'busy');
    expect(await a.ask({ id: 'm3' })).toBe('m3');
    expect((await a.state())?.state).toEqual({ seen: ['m1', 'm3'] });
  });

  it('interrupt: the running message ends CANCELLED, its state change not applied, and the new one runs', async () => {
    const gates = new Map([['m1', gate()]]);
    const { runtime } = start([gatedAgent('i', { policy: 'interrupt' }, gates)]);
    const a = runtime.actor('i', 'k');
    const first = a.ask({ id: 'm1' });
    await until(async () => (await a.state())?.status === 'busy');
    expect(await a.ask({ id: 'm2' })).toBe('m2');
    await expect(first).rejects.toMatchObject({ code: 'CANCELLED' });
    gates.get('m1')?.open();
    const view = await a.state();
    expect(view?.state).toEqual({ seen: ['m2'] });
    const steps = await runtime.listSteps(view?.run_id ?? '');
    expect(steps.map((s) => s.status)).toEqual(['cancelled', 'succeeded']);
  });

  it('merge: the waiting messages are folded into one, and each folded one points to it', async () => {
    const gates = new Map([['first', gate()]]);
    const merging = defineAgent({
      name: 'm',
      input: z.object({ ids: z.array(z.string()) }),
      durable: {
        state: z.object({ batches: z.array(z.array(z.string())) }),
        initial: { batches: [] },
        version: 1,
        mailbox: {
          policy: 'merge',
          merge: (messages) => ({ ids: messages.flatMap((m) => m.ids) }),
        },
      },
      handler: async (message, actor) => {
        const g = gates.get(message.ids[0] ?? '');
        if (g) await g.wait;
        return {
          state: { batches: [...actor.state.batches, message.ids] },
          output: message.ids.length,
        };
      },
    });
    const { runtime } = start([merging]);
    const a = runtime.actor('m', 'k');
    const first = a.ask({ ids: ['first'] });
    await until(async () => (await a.state())?.status === 'busy');
    const b = await a.send({ ids: ['b'] });
    const asks = [a.ask({ ids: ['c'] }), a.ask({ ids: ['d'] })];
    gates.get('first')?.open();
    expect(await first).toBe(1);
    expect(await Promise.all(asks)).toEqual([3, 3]);
    expect((await a.state())?.state).toEqual({ batches: [['first'], ['b', 'c', 'd']] });
    const steps = await runtime.listSteps(b.run_id);
    expect(steps.map((s) => s.status)).toEqual([
      'succeeded',
      'succeeded',
      'succeeded',
      'succeeded',
    ]);
    expect(steps[2]?.output).toEqual({ merged_into: b.step_id });
    expect(steps[3]?.output).toEqual({ merged_into: b.step_id });
  });

  it('cancel(): the message being handled and the queued ones end CANCELLED; the state stays', async () => {
    const gates = new Map([['m1', gate()]]);
    const { runtime } = start([gatedAgent('c', {}, gates)]);
    const a = runtime.actor('c', 'k');
    await a.ask({ id: 'm0' });
    const running = a.ask({ id: 'm1' });
    await until(async () => (await a.state())?.status === 'busy');
    const queued = a.ask({ id: 'm2' });
    expect(await a.cancel()).toBe(2);
    await expect(running).rejects.toMatchObject({ code: 'CANCELLED' });
    await expect(queued).rejects.toMatchObject({ code: 'CANCELLED' });
    gates.get('m1')?.open();
    const view = await a.state();
    expect(view?.state).toEqual({ seen: ['m0'] });
    expect(view?.mailbox_depth).toBe(0);
    await expect(runtime.actor('c', 'never').cancel()).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('durable agents: state versions', () => {
  function versioned(version: number, migrate?: (s: unknown, from: number) => { items: string[] }) {
    return defineAgent({
      name: 'cart',
      input: z.object({ item: z.string() }),
      durable: {
        state: z.object({ items: z.array(z.string()) }),
        initial: { items: [] },
        version,
        ...(migrate ? { migrate } : {}),
      },
      handler: (message, actor) => ({
        state: { items: [...actor.state.items, message.item] },
        output: actor.state.items.length + 1,
      }),
    });
  }

  it('brings an actor stored at an older version up with migrate when it wakes', async () => {
    const store = memoryStore();
    const old = defineAgent({
      name: 'cart',
      input: z.object({ item: z.string() }),
      durable: { state: z.object({ list: z.string() }), initial: { list: '' }, version: 1 },
      handler: (message, actor) => ({
        state: { list: actor.state.list ? `${actor.state.list},${message.item}` : message.item },
      }),
    });
    const first = durableRuntime([old], { store });
    await first.runtime.actor('cart', 'c').ask({ item: 'apple' });
    await first.runtime.actor('cart', 'c').ask({ item: 'pear' });
    await first.runtime.durable.close();
    const next = start(
      [
        versioned(2, (s, from) => ({
          items: from === 1 ? (s as { list: string }).list.split(',') : [],
        })),
      ],
      { store },
    );
    const cart = next.runtime.actor('cart', 'c');
    expect(await cart.ask({ item: 'fig' })).toBe(3);
    const view = await cart.state();
    expect(view?.version).toBe(2);
    expect(view?.state).toEqual({ items: ['apple', 'pear', 'fig'] });
  });

  it('fails the messages of an actor whose stored version has no migration, and leaves it untouched', async () => {
    const store = memoryStore();
    const first = durableRuntime([versioned(1)], { store });
    await first.runtime.actor('cart', 'c').ask({ item: 'apple' });
    await first.runtime.durable.close();
    const next = start([versioned(2)], { store });
    const cart = next.runtime.actor('cart', 'c');
    const failed = await cart.ask({ item: 'fig' }).catch((e: unknown) => e);
    expect(failed).toMatchObject({ code: 'INVALID_PARAMS' });
    expect((failed as Error).message).toMatch(
      /stored at version 1 and cart is at 2 with no migrate/,
    );
    const view = await cart.state();
    expect(view?.version).toBe(1);
    expect(view?.state).toEqual({ items: ['apple'] });
  });
});

describe('durable agents: passivation', () => {
  it('an idle actor leaves memory after idleMs, and its next message wakes it from the store', async () => {
    const quick = defineAgent({
      name: 'quick',
      durable: {
        state: z.object({ n: z.number() }),
        initial: { n: 0 },
        version: 1,
        idleMs: 50,
      },
      handler: (_m, actor) => ({ state: { n: actor.state.n + 1 }, output: actor.state.n + 1 }),
    });
    const { runtime, clock } = start([quick]);
    const a = runtime.actor('quick', 'k');
    expect(await a.ask({})).toBe(1);
    expect(runtime.durable.awake).toBe(1);
    expect((await a.state())?.status).toBe('awake');
    clock.advance(60);
    await until(() => runtime.durable.awake === 0, 3_000);
    expect((await a.state())?.status).toBe('asleep');
    expect(await a.ask({})).toBe(2);
  });

  it('keeps at most maxAwake actors in memory; the least recently used sleep', async () => {
    const { runtime } = start([notebook], { maxAwake: 3 });
    for (let i = 0; i < 10; i++) await runtime.actor('notebook', `k${i}`).ask({ text: `t${i}` });
    expect(runtime.durable.awake).toBeLessThanOrEqual(3);
    for (let i = 0; i < 10; i++) {
      expect((await runtime.actor('notebook', `k${i}`).state())?.state).toEqual({
        notes: [`t${i}`],
      });
    }
  });
});

describe('defineAgent({ durable }) checks its options', () => {
  const base = {
    name: 'x',
    durable: { state: z.object({}), initial: {}, version: 1 },
    handler: () => ({}),
  };
  it.each([
    [{ ...base, durable: { ...base.durable, version: 0 } }, /version must be an integer >= 1/],
    [
      { ...base, durable: { ...base.durable, initial: { a: 1 }, state: z.strictObject({}) } },
      /initial does not match/,
    ],
    [{ ...base, durable: { ...base.durable, idleMs: -1 } }, /idleMs/],
    [
      { ...base, durable: { ...base.durable, mailbox: { policy: 'drop' } } },
      /policy must be one of/,
    ],
    [{ ...base, durable: { ...base.durable, mailbox: { maxQueue: 0 } } }, /maxQueue/],
    [
      { ...base, durable: { ...base.durable, mailbox: { policy: 'merge' } } },
      /needs durable.mailbox.merge/,
    ],
    [{ ...base, placement: 'worker' }, /not implemented for durable agents/],
    [{ ...base, durable: { ...base.durable, state: {} } }, /state must be a zod schema/],
  ])('refuses %#', (spec, message) => {
    expect(() => defineAgent(spec as never)).toThrow(message);
  });
});
