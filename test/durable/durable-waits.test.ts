/**
 * Durable agents' time (issue 46): `sleep`, `waitFor` and `remind` as stored wakes on one
 * clock (a simulated one here), events, and schedules.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../src/actors/define-agent.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { InvalidParamsError } from '../../src/errors/invalid-params-error.js';
import { NotFoundError } from '../../src/errors/not-found-error.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { SimulatedClock } from '../../src/context/clock.js';
import { sqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { advance, durableRuntime, followUp, notebook, until } from './durable-fixtures.js';

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

describe('sleep', () => {
  it('waits in the store, holding nothing in memory, and goes on once its time came', async () => {
    const { runtime, clock } = start([followUp]);
    const a = runtime.actor('follow-up', 'f');
    const answer = a.ask({ text: 'call back', after_ms: 3 * 24 * 3600 * 1000 });
    await until(async () => (await a.state())?.status === 'waiting');
    const view = await a.state();
    expect(view?.next_timer_at).toBe(new Date(clock.now() + 3 * 24 * 3600 * 1000).toISOString());
    expect(runtime.durable.awake).toBe(0);
    const [step] = await runtime.listSteps(view?.run_id ?? '');
    expect(step?.status).toBe('waiting');
    await advance(clock, 3 * 24 * 3600 * 1000 - 1);
    expect((await a.state())?.status).toBe('waiting');
    await advance(clock, 1);
    expect(await answer).toEqual({ logged: 'call back' });
    expect((await a.state())?.state).toEqual({ log: ['call back'] });
  });

  it('runs the handler again past the sleep: calls made before it are not made again, tokens not logged twice', async () => {
    let calls = 0;
    const count = defineTool({
      name: 'count',
      description: 'Counts its calls',
      input: z.object({}),
      handler: () => ({ n: ++calls }),
    });
    const sleepy = defineAgent({
      name: 'sleepy',
      durable: { state: z.object({ n: z.number() }), initial: { n: 0 }, version: 1 },
      async *handler(_m, actor, runtime) {
        const r = await runtime.callTool<{ n: number }>('count', {}, actor.ctx);
        yield `before ${r.output?.n}`;
        await actor.sleep(1_000);
        yield ' after';
        return { state: { n: r.output?.n ?? -1 }, output: r.output?.n };
      },
    });
    const { runtime, clock } = start([sleepy]);
    runtime.registerTool(count);
    const a = runtime.actor('sleepy', 's');
    const answer = a.ask({});
    await until(async () => (await a.state())?.status === 'waiting');
    await advance(clock, 1_000);
    expect(await answer).toBe(1);
    expect(calls).toBe(1);
    const run = (await a.state())?.run_id ?? '';
    const message = (await runtime.listSteps(run)).find((s) => s.parent_step_id === null);
    const tokens = (await runtime.readStepEvents(message?.step_id ?? '')).filter(
      (e) => e.type === 'token',
    );
    expect(tokens.map((t) => (t as { t: string }).t)).toEqual(['before 1', ' after']);
  });

  it('queues later messages behind a sleeping one, in order', async () => {
    const { runtime, clock } = start([followUp]);
    const a = runtime.actor('follow-up', 'q');
    const first = a.ask({ text: 'one', after_ms: 500 });
    await until(async () => (await a.state())?.status === 'waiting');
    const second = a.ask({ text: 'two', after_ms: 0 });
    await until(async () => (await a.state())?.mailbox_depth === 1);
    await advance(clock, 500);
    expect(await first).toEqual({ logged: 'one' });
    await until(
      async () => (await a.state())?.status === 'waiting' || (await a.state())?.state !== undefined,
    );
    await advance(clock, 1);
    expect(await second).toEqual({ logged: 'two' });
    expect((await a.state())?.state).toEqual({ log: ['one', 'two'] });
  });
});

describe('waitFor and signal', () => {
  it("wakes the waits of the signal's user whose match fits, with the data", async () => {
    const approver = defineAgent({
      name: 'approver',
      input: z.object({ order: z.string() }),
      durable: {
        state: z.object({ decided: z.array(z.string()) }),
        initial: { decided: [] },
        version: 1,
      },
      handler: async (message, actor) => {
        const d = await actor.waitFor<{ ok: boolean }>('approval', {
          match: { order: message.order },
        });
        const line = `${message.order}:${d?.ok ? 'yes' : 'no'}`;
        return { state: { decided: [...actor.state.decided, line] }, output: line };
      },
    });
    const { runtime } = start([approver]);
    const mine = runtime.actor('approver', 'a', { userId: 'u1' }).ask({ order: 'o-1' });
    const theirs = runtime.actor('approver', 'a', { userId: 'u2' }).ask({ order: 'o-1' });
    await until(
      async () =>
        (await runtime.actor('approver', 'a', { userId: 'u2' }).state())?.status === 'waiting',
    );
    await until(
      async () =>
        (await runtime.actor('approver', 'a', { userId: 'u1' }).state())?.status === 'waiting',
    );
    expect(await runtime.signal('approval', { order: 'o-2', ok: true }, { userId: 'u1' })).toEqual({
      woken: 0,
      refused: [],
    });
    expect(await runtime.signal('approval', { order: 'o-1', ok: true }, { userId: 'u1' })).toEqual({
      woken: 1,
      refused: [],
    });
    expect(await mine).toBe('o-1:yes');
    expect(await runtime.signal('approval', { order: 'o-1', ok: true }, { userId: 'u1' })).toEqual({
      woken: 0,
      refused: [],
    });
    expect((await runtime.actor('approver', 'a', { userId: 'u2' }).state())?.status).toBe(
      'waiting',
    );
    await runtime.signal('approval', { order: 'o-1', ok: false }, { userId: 'u2' });
    expect(await theirs).toBe('o-1:no');
  });

  it('leaves a wait whose schema the data fails, and names it in the answer', async () => {
    const { runtime } = start([followUp]);
    const a = runtime.actor('follow-up', 'w');
    const answer = a.ask({ text: 'q', await: 'answered' });
    await until(async () => (await a.state())?.status === 'waiting');
    const refused = await runtime.signal('answered', { answer: 42 });
    expect(refused.woken).toBe(0);
    expect(refused.refused).toHaveLength(1);
    expect(refused.refused[0]).toMatchObject({ agent: 'follow-up', key: 'w' });
    expect(refused.refused[0]?.issues[0]?.path).toEqual(['answer']);
    expect((await a.state())?.status).toBe('waiting');
    expect((await runtime.signal('answered', { answer: 'yes' })).woken).toBe(1);
    expect(await answer).toEqual({ logged: 'q:yes' });
  });

  it('resolves null once its timeout passed', async () => {
    const patient = defineAgent({
      name: 'patient',
      durable: { state: z.object({}), initial: {}, version: 1 },
      handler: async (_m, actor) => ({
        output: await actor.waitFor('never', { timeoutMs: 60_000 }),
      }),
    });
    const { runtime, clock } = start([patient]);
    const answer = runtime.actor('patient', 'p').ask({});
    await until(async () => (await runtime.actor('patient', 'p').state())?.status === 'waiting');
    await advance(clock, 60_000);
    expect(await answer).toBeNull();
    expect((await runtime.signal('never', {})).woken).toBe(0);
  });

  it('refuses a malformed event name', async () => {
    const { runtime } = start([followUp]);
    await expect(runtime.signal('has space', {})).rejects.toBeInstanceOf(InvalidParamsError);
  });
});

describe('remind', () => {
  it('sends its message at its time and then every period, once each; cancelReminder stops it', async () => {
    const pinger = defineAgent({
      name: 'pinger',
      input: z.object({ op: z.enum(['start', 'tick', 'stop']) }),
      durable: { state: z.object({ ticks: z.number() }), initial: { ticks: 0 }, version: 1 },
      handler: async (message, actor) => {
        if (message.op === 'start')
          await actor.remind('tick', { every: 1_000, message: { op: 'tick' } });
        if (message.op === 'stop') await actor.cancelReminder('tick');
        return { state: { ticks: actor.state.ticks + (message.op === 'tick' ? 1 : 0) } };
      },
    });
    const { runtime, clock } = start([pinger]);
    const a = runtime.actor('pinger', 'p');
    await a.ask({ op: 'start' });
    for (let i = 1; i <= 3; i++) {
      await advance(clock, 1_000);
      await until(async () => ((await a.state())?.state as { ticks: number }).ticks === i);
    }
    await a.ask({ op: 'stop' });
    await advance(clock, 5_000);
    await advance(clock, 5_000);
    expect((await a.state())?.state).toEqual({ ticks: 3 });
    const run = (await a.state())?.run_id ?? '';
    const tokens = (await runtime.listSteps(run)).map((s) => s.client_token ?? '');
    expect(tokens.filter((t) => t.startsWith('reminder:'))).toHaveLength(3);
  });
});

describe('schedules', () => {
  it('messages the actor at each time of its cron, each firing once under its own token', async () => {
    const { runtime, clock } = start([notebook]);
    const s = await runtime.schedule({
      cron: '*/10 * * * * *',
      agent: 'notebook',
      key: 'cron',
      message: { text: 'tick' },
    });
    expect(s).toMatchObject({
      agent: 'notebook',
      key: 'cron',
      status: 'active',
      timezone: 'UTC',
      overlap: 'skip',
    });
    expect(s.next_at).toBe(Math.ceil((clock.now() + 1) / 10_000) * 10_000);
    const a = runtime.actor('notebook', 'cron');
    for (let i = 1; i <= 3; i++) {
      await advance(clock, 10_000);
      await until(
        async () =>
          ((await a.state())?.state as { notes: string[] } | undefined)?.notes.length === i,
      );
    }
    const run = (await a.state())?.run_id ?? '';
    const tokens = (await runtime.listSteps(run)).map((x) => x.client_token);
    expect(tokens.every((t) => t?.startsWith(`schedule:${s.schedule_id}:`))).toBe(true);
    expect(new Set(tokens).size).toBe(3);
  });

  it('is paused and resumed, listed by its user, and removed', async () => {
    const { runtime, clock } = start([notebook]);
    const schedules = runtime.durable.schedules;
    const s = await runtime.schedule(
      { cron: '0 * * * *', agent: 'notebook', key: 'h', message: { text: 'hourly' } },
      { userId: 'u1' },
    );
    expect((await schedules.list('u1')).map((x) => x.schedule_id)).toEqual([s.schedule_id]);
    expect(await schedules.list('u2')).toEqual([]);
    await expect(schedules.get(s.schedule_id, 'u2')).rejects.toBeInstanceOf(NotFoundError);
    expect((await schedules.pause(s.schedule_id, 'u1')).status).toBe('paused');
    await advance(clock, 3_600_000);
    expect(await runtime.actor('notebook', 'h', { userId: 'u1' }).state()).toBeNull();
    const resumed = await schedules.resume(s.schedule_id, 'u1');
    expect(resumed.status).toBe('active');
    expect(resumed.next_at).toBeGreaterThan(clock.now());
    await schedules.delete(s.schedule_id, 'u1');
    await expect(schedules.get(s.schedule_id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('skips a firing that finds its actor busy with the one before (overlap skip)', async () => {
    const { runtime, clock } = start([followUp]);
    await runtime.schedule({
      cron: '*/10 * * * * *',
      agent: 'follow-up',
      key: 'busy',
      message: { text: 'slow', after_ms: 25_000 },
    });
    const a = runtime.actor('follow-up', 'busy');
    await advance(clock, 10_000);
    await until(async () => (await a.state())?.status === 'waiting');
    await advance(clock, 10_000);
    await advance(clock, 10_000);
    expect((await a.state())?.mailbox_depth).toBe(0);
    const run = (await a.state())?.run_id ?? '';
    expect(await runtime.listSteps(run)).toHaveLength(1);
  });

  it('queues a firing behind the one before (overlap queue): each is handled, in turn', async () => {
    const { runtime, clock } = start([followUp]);
    const s = await runtime.schedule({
      cron: '*/10 * * * * *',
      agent: 'follow-up',
      key: 'queue',
      message: { text: 'slow', after_ms: 25_000 },
      overlap: 'queue',
    });
    const a = runtime.actor('follow-up', 'queue');
    await advance(clock, 10_000);
    await until(async () => (await a.state())?.status === 'waiting');
    await advance(clock, 10_000);
    await advance(clock, 10_000);
    await runtime.durable.schedules.pause(s.schedule_id);
    // The first sleeps until 35 s; the two after it wait in its mailbox.
    await until(async () => (await a.state())?.mailbox_depth === 2);
    await advance(clock, 5_000);
    await advance(clock, 25_000);
    await advance(clock, 25_000);
    await until(async () => (await a.state())?.status === 'awake');
    expect(await a.state()).toMatchObject({ mailbox_depth: 0, next_timer_at: null });
    expect((await a.state())?.state).toEqual({ log: ['slow', 'slow', 'slow'] });
    const run = (await a.state())?.run_id ?? '';
    const steps = await runtime.listSteps(run);
    expect(steps.map((x) => x.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
  });

  it('cancels the message before when a firing finds it open (overlap cancel_previous)', async () => {
    const { runtime, clock } = start([followUp]);
    const s = await runtime.schedule({
      cron: '*/10 * * * * *',
      agent: 'follow-up',
      key: 'cancel',
      message: { text: 'slow', after_ms: 25_000 },
      overlap: 'cancel_previous',
    });
    const a = runtime.actor('follow-up', 'cancel');
    await advance(clock, 10_000);
    await until(async () => (await a.state())?.status === 'waiting');
    const run = (await a.state())?.run_id ?? '';
    await advance(clock, 10_000);
    await runtime.durable.schedules.pause(s.schedule_id);
    await until(async () => {
      const steps = await runtime.listSteps(run);
      return steps.length === 2 && steps[1]?.status === 'waiting';
    });
    expect((await runtime.listSteps(run)).map((x) => x.status)).toEqual(['cancelled', 'waiting']);
    // The second sleeps its whole 25 s from when it started (20 s), not from the first's.
    await advance(clock, 24_000);
    expect((await a.state())?.status).toBe('waiting');
    await advance(clock, 1_000);
    await until(async () => (await a.state())?.status === 'awake');
    expect((await a.state())?.state).toEqual({ log: ['slow'] });
    expect((await runtime.listSteps(run)).map((x) => x.status)).toEqual(['cancelled', 'succeeded']);
  });

  it.each([
    [false, 1],
    [true, 10],
  ])(
    'after ten minutes with no runtime running, catchup %s delivers %i of the ten missed firings',
    async (catchup, delivered) => {
      const dir = mkdtempSync(join(tmpdir(), 'axon-durable-catchup-'));
      try {
        const file = join(dir, 'axon.db');
        const clock = new SimulatedClock(Date.UTC(2026, 11, 6, 12));
        const first = durableRuntime([notebook], { store: sqliteStore(file), clock });
        await first.runtime.schedule({
          cron: '* * * * *',
          agent: 'notebook',
          key: 'down',
          message: { text: 'minute' },
          catchup,
        });
        await first.runtime.close();
        clock.advance(10 * 60_000);
        const after = start([notebook], { store: sqliteStore(file), clock });
        await advance(after.clock, 0);
        const a = after.runtime.actor('notebook', 'down');
        await until(
          async () =>
            ((await a.state())?.state as { notes: string[] } | undefined)?.notes.length ===
            delivered,
        );
        await advance(after.clock, 0);
        expect((await a.state())?.state).toEqual({ notes: Array(delivered).fill('minute') });
        // The next firing is the next minute's, not one of the missed ones.
        const [schedule] = await after.runtime.durable.schedules.list();
        expect(schedule?.next_at).toBe(clock.now() + 60_000);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it.each([
    [{ cron: 'every minute' }, 'cron', /does not parse/],
    [{ cron: '61 * * * *' }, 'cron', /does not parse/],
    [{ cron: '* * * *' }, 'cron', /4 fields/],
    [{ cron: '2027-01-01T00:00:00' }, 'cron', /does not parse/],
    [{ timezone: 'Mars/Olympus' }, 'timezone', /not an IANA time zone/],
    [{ overlap: 'sometimes' }, 'overlap', /overlap must be one of/],
    [{ key: 'bad key' }, 'key', /key must match/],
  ])('refuses %o naming %s, storing nothing', async (patch, param, message) => {
    const { runtime } = start([notebook]);
    const refused = await runtime
      .schedule({
        cron: '* * * * *',
        agent: 'notebook',
        key: 'k',
        message: { text: 't' },
        ...patch,
      } as never)
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(InvalidParamsError);
    expect((refused as InvalidParamsError).param).toBe(param);
    expect((refused as Error).message).toMatch(message);
    expect(await runtime.durable.schedules.list()).toEqual([]);
  });

  it('refuses an unknown agent and a message failing its input', async () => {
    const { runtime } = start([notebook]);
    await expect(
      runtime.schedule({ cron: '* * * * *', agent: 'nobody', key: 'k', message: {} }),
    ).rejects.toBeInstanceOf(NotFoundError);
    await expect(
      runtime.schedule({ cron: '* * * * *', agent: 'notebook', key: 'k', message: { nope: 1 } }),
    ).rejects.toMatchObject({ code: 'SCHEMA_VIOLATION' });
  });
});
