/**
 * Workflows (seed 001's Nerve on axon's runs): the moderator steers roles' turns; a thread is
 * a durable run; kill, overflow, max rounds, replay.
 */
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRole } from '../../src/adapters/create-role.js';
import type { ChatRequest } from '../../src/engines/chat-request.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import type { Runtime, RuntimeOptions } from '../../src/runtime/runtime.js';
import {
  defineWorkflow,
  END,
  type ThreadSoFar,
  type WorkflowRoleSpec,
  type WorkflowSpec,
} from '../../src/workflows/workflow-definition.js';
import { WorkflowEngine } from '../../src/workflows/workflow-engine.js';
import {
  followThread,
  parseThreadCursor,
  type ThreadFrame,
} from '../../src/workflows/thread-stream.js';
import { quietRuntime, until } from '../support/runtime.js';
import { endEngines } from '../support/workflows.js';

const engines: WorkflowEngine[] = [];
const runtimes: Runtime[] = [];
afterEach(async () => {
  await endEngines(engines);
  await Promise.all(runtimes.splice(0).map((r) => r.close()));
});

/** The coder writes version n; the reviewer approves version 3. */
function coderReviewerScript(request: ChatRequest): string {
  const system = request.messages.find((m) => m.role === 'system')?.content ?? '';
  const user = request.messages.find((m) => m.role === 'user')?.content ?? '';
  const versions = (user.match(/## coder/g) ?? []).length;
  if (system.startsWith('You write')) return `code v${versions + 1}`;
  return versions >= 3 ? 'APPROVED' : `fix v${versions}`;
}

const alternate = (t: ThreadSoFar): string => {
  const last = t.turns.at(-1);
  if (last?.raw === 'APPROVED') return END;
  return last?.role === 'coder' ? 'reviewer' : 'coder';
};

function setup(
  spec: Partial<WorkflowSpec> = {},
  options: RuntimeOptions = {},
  tokenDelayMs = 0,
): { rt: Runtime; engine: WorkflowEngine; asked: ChatRequest[] } {
  const asked: ChatRequest[] = [];
  const rt = quietRuntime({
    engines: [
      createScriptedEngine({
        tokenDelayMs,
        script: (r) => {
          asked.push(r);
          return coderReviewerScript(r);
        },
      }),
    ],
    ...options,
  });
  runtimes.push(rt);
  const workflow = defineWorkflow({
    name: 'review',
    roles: {
      coder: { kind: 'engine', prompt: 'You write code.' },
      reviewer: { kind: 'engine', prompt: 'You review code. Answer APPROVED when it is good.' },
    },
    moderator: alternate,
    maxRounds: 10,
    ...spec,
  });
  const engine = new WorkflowEngine(rt, [workflow]);
  engines.push(engine);
  return { rt, engine, asked };
}

describe('a workflow thread', () => {
  it('runs the roles the moderator names until END; each turn is a step of the thread’s run', async () => {
    const { rt, engine } = setup();
    const started = await engine.trigger('review', 'Add a README');
    expect(['queued', 'started']).toContain(started.status);
    const t = await engine.wait(started.thread_id);
    expect(t.status).toBe('completed');
    expect(t.end_reason).toBe('end');
    expect(t.turns.map((x) => `${x.role}:${x.raw}`)).toEqual([
      'coder:code v1',
      'reviewer:fix v1',
      'coder:code v2',
      'reviewer:fix v2',
      'coder:code v3',
      'reviewer:APPROVED',
    ]);
    expect(t.rounds).toBe(6);
    expect((await rt.getRun(t.thread_id))?.status).toBe('completed');
    const steps = await rt.listSteps(t.thread_id);
    expect(steps.map((s) => s.client_token)).toEqual(t.turns.map((x) => `turn-${x.n}`));
  });

  it('ends a thread that does not converge at maxRounds, with its own reason', async () => {
    const { engine } = setup({ maxRounds: 3, moderator: () => 'coder' });
    const t = await engine.wait((await engine.trigger('review', 'x')).thread_id);
    expect(t.status).toBe('completed');
    expect(t.end_reason).toBe('max_rounds');
    expect(t.turns).toHaveLength(3);
  });

  it('fails a thread whose moderator names no role, or throws', async () => {
    const { engine } = setup({ moderator: () => 'tester' });
    const t = await engine.wait((await engine.trigger('review', 'x')).thread_id);
    expect(t).toMatchObject({ status: 'failed', end_reason: 'unknown_role' });
    expect(t.error?.message).toMatch(/tester/);
  });

  it('types each turn’s output with the role’s schema, for the moderator', async () => {
    const seen: unknown[] = [];
    const verdict = z.object({ approved: z.boolean() });
    const rt = quietRuntime({
      engines: [createScriptedEngine({ tokenDelayMs: 0, script: () => '{"approved": true}' })],
    });
    runtimes.push(rt);
    const engine = new WorkflowEngine(rt, [
      defineWorkflow({
        name: 'typed',
        roles: { judge: { kind: 'engine', prompt: 'Judge.', schema: verdict } },
        moderator: (t) => {
          seen.push(t.turns.at(-1)?.output);
          return t.turns.length === 0 ? 'judge' : END;
        },
      }),
    ]);
    engines.push(engine);
    const t = await engine.wait((await engine.trigger('typed', 'x')).thread_id);
    expect(t.turns[0]?.output).toEqual({ approved: true });
    expect(seen).toEqual([undefined, { approved: true }]);
  });

  it('runs a createRole role over an adapter', async () => {
    const rt = quietRuntime();
    runtimes.push(rt);
    const echo = createRole(
      async (thread) => JSON.stringify({ words: thread.start.split(' ').length }),
      'Count the words.',
      z.object({ words: z.number() }),
    );
    const engine = new WorkflowEngine(rt, [
      defineWorkflow({
        name: 'count',
        roles: { counter: { role: echo } },
        moderator: (t) => (t.turns.length === 0 ? 'counter' : END),
      }),
    ]);
    engines.push(engine);
    const t = await engine.wait((await engine.trigger('count', 'one two three')).thread_id);
    expect(t.turns[0]?.output).toEqual({ words: 3 });
  });
});

describe('defineWorkflow', () => {
  it('refuses what it cannot run, naming it', () => {
    const base = {
      name: 'w',
      roles: { a: { kind: 'engine' as const, prompt: 'p' } },
      moderator: () => END,
    };
    expect(() => defineWorkflow({ ...base, name: 'Bad Name' })).toThrow(/name/);
    expect(() => defineWorkflow({ ...base, roles: {} })).toThrow(/at least one role/);
    expect(() => defineWorkflow({ ...base, maxRounds: 0 })).toThrow(/maxRounds/);
    expect(() => defineWorkflow({ ...base, concurrency: { overflow: 'spill' as 'drop' } })).toThrow(
      /overflow/,
    );
    expect(() =>
      defineWorkflow({
        ...base,
        roles: { a: { kind: 'engine', prompt: 'p', promt: 'typo' } as WorkflowRoleSpec },
      }),
    ).toThrow(/role "a": unknown option promt/);
    expect(() => defineWorkflow({ ...base, extra: 1 } as WorkflowSpec)).toThrow(
      /unknown option extra/,
    );
  });
});

describe('killing, overflow and streaming', () => {
  it('kill cancels the running turn end to end and ends the thread killed', async () => {
    const { rt, engine } = setup({ moderator: () => 'coder' }, {}, 50);
    const t = await engine.trigger('review', 'x');
    // Wait until the first turn streams.
    for await (const f of followThread(engine, t.thread_id)) {
      if (f.kind === 'turn_event' && f.event.type === 'token') break;
    }
    const killed = await engine.kill(t.thread_id);
    expect(killed.status).toBe('killed');
    expect(killed.end_reason).toBe('killed');
    expect(killed.turns[0]?.status).toBe('cancelled');
    expect((await rt.getRun(t.thread_id))?.status).toBe('cancelled');
    await expect(engine.kill(t.thread_id)).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(engine.kill('run_nope')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it("kill reaches a createRole role's plain AgentFn through the turn context's signal", async () => {
    const rt = quietRuntime();
    runtimes.push(rt);
    let started = false;
    let aborted: unknown = null;
    const waiting = createRole(
      (_thread, _prompt, options) =>
        new Promise<string>((_resolve, reject) => {
          started = true;
          options?.signal?.addEventListener('abort', () => {
            aborted = options.signal?.reason;
            reject(new Error('stopped'));
          });
        }),
      'Wait.',
      z.string(),
    );
    const engine = new WorkflowEngine(rt, [
      defineWorkflow({
        name: 'waits',
        roles: { waiter: { role: waiting } },
        moderator: (t) => (t.turns.length === 0 ? 'waiter' : END),
      }),
    ]);
    engines.push(engine);
    const t = await engine.trigger('waits', 'x');
    await until(() => started);
    const killed = await engine.kill(t.thread_id);
    expect(killed.status).toBe('killed');
    expect(aborted).toMatchObject({ code: 'CANCELLED' });
  });

  it('regression: following a thread that waits adds no listener to the reader’s signal per look', async () => {
    const rt = quietRuntime();
    runtimes.push(rt);
    let release: (text: string) => void = () => undefined;
    const gated = createRole(
      () =>
        new Promise<string>((resolve) => {
          release = resolve;
        }),
      'Wait.',
      z.string(),
    );
    const engine = new WorkflowEngine(rt, [
      defineWorkflow({
        name: 'one-at-a-time',
        roles: { waiter: { role: gated } },
        moderator: (t) => (t.turns.length === 0 ? 'waiter' : END),
        concurrency: { max: 1, overflow: 'queue', maxQueue: 1 },
      }),
    ]);
    engines.push(engine);
    await engine.trigger('one-at-a-time', 'first');
    const queued = await engine.trigger('one-at-a-time', 'second');
    expect(queued.status).toBe('queued');
    // The follow of the queued thread looks again every 200 ms while it waits.
    const reader = new AbortController();
    const frames: ThreadFrame[] = [];
    const following = (async () => {
      for await (const f of followThread(engine, queued.thread_id, undefined, reader.signal)) {
        frames.push(f);
      }
    })();
    const counts: number[] = [];
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setTimeout(r, 250));
      counts.push(getEventListeners(reader.signal, 'abort').length);
    }
    expect(Math.max(...counts)).toBeLessThanOrEqual(1);
    reader.abort();
    await following;
    expect(getEventListeners(reader.signal, 'abort')).toHaveLength(0);
    expect(frames).toEqual([]);
    release('done');
  });

  it('queue: threads past max wait in order and start as others end; past maxQueue refused', async () => {
    const { engine } = setup(
      { maxRounds: 1, concurrency: { max: 1, overflow: 'queue', maxQueue: 2 } },
      {},
      5,
    );
    const a = await engine.trigger('review', 'a');
    const b = await engine.trigger('review', 'b');
    const c = await engine.trigger('review', 'c');
    expect(b.status).toBe('queued');
    expect(c.status).toBe('queued');
    expect(engine.get('review')).toMatchObject({ running: 1, queued: 2 });
    await expect(engine.trigger('review', 'd')).rejects.toMatchObject({ code: 'QUEUE_FULL' });
    const ends: string[] = [];
    await Promise.all(
      [a, b, c].map(async (t) => {
        const done = await engine.wait(t.thread_id);
        ends.push(done.input);
        expect(done.status).toBe('completed');
      }),
    );
    expect(ends).toEqual(['a', 'b', 'c']);
    // A refused thread left no run behind.
    expect((await engine.threads()).map((t) => t.input).sort()).toEqual(['a', 'b', 'c']);
  });

  it('lists threads from the index newest first: by status (live ones among ended), by user, a page at a time', async () => {
    const { engine } = setup(
      { maxRounds: 1, concurrency: { max: 8, overflow: 'queue', maxQueue: 8 } },
      {},
      5,
    );
    const done = [];
    for (const input of ['a', 'b', 'c']) {
      const t = await engine.trigger('review', input, { userId: input === 'b' ? 'bob' : 'ann' });
      done.push(await engine.wait(t.thread_id));
    }
    expect(done.map((t) => t.status)).toEqual(['completed', 'completed', 'completed']);
    const inputs = (list: { input: string }[]) => list.map((t) => t.input);
    expect(inputs(await engine.threads())).toEqual(['c', 'b', 'a']);
    expect(inputs(await engine.threads({ limit: 2 }))).toEqual(['c', 'b']);
    expect(inputs(await engine.threads({ userId: 'ann' }))).toEqual(['c', 'a']);
    expect(inputs(await engine.threads({ userId: 'ann', limit: 1 }))).toEqual(['c']);
    expect(await engine.threads({ status: ['queued', 'started'] })).toEqual([]);
    expect(inputs(await engine.threads({ status: ['completed'], userId: 'bob' }))).toEqual(['b']);
    expect(await engine.threads({ workflow: 'review', status: ['failed', 'killed'] })).toEqual([]);
  });

  it('triggers that arrive together cannot all take the one free slot (queue and drop)', async () => {
    const { engine } = setup(
      { maxRounds: 1, concurrency: { max: 1, overflow: 'queue', maxQueue: 2 } },
      {},
      5,
    );
    const burst = await Promise.allSettled(
      ['a', 'b', 'c', 'd'].map((x) => engine.trigger('review', x)),
    );
    expect(burst.map((r) => (r.status === 'fulfilled' ? r.value.status : 'refused'))).toEqual([
      'started',
      'queued',
      'queued',
      'refused',
    ]);
    expect(engine.get('review')).toMatchObject({ running: 1, queued: 2 });
    const started = burst.flatMap((r) => (r.status === 'fulfilled' ? [r.value.thread_id] : []));
    await Promise.all(started.map((id) => engine.wait(id)));

    const drop = setup({ maxRounds: 1, concurrency: { max: 1, overflow: 'drop' } }, {}, 5);
    const dropped = await Promise.allSettled(
      ['a', 'b', 'c'].map((x) => drop.engine.trigger('review', x)),
    );
    expect(dropped.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
    expect(await drop.engine.threads()).toHaveLength(1);
  });

  it('drop: a thread past max is refused with a typed error and leaves nothing', async () => {
    const { engine } = setup({ maxRounds: 1, concurrency: { max: 1, overflow: 'drop' } }, {}, 20);
    const a = await engine.trigger('review', 'a');
    await expect(engine.trigger('review', 'b')).rejects.toMatchObject({ code: 'QUEUE_FULL' });
    await engine.wait(a.thread_id);
    expect(await engine.threads()).toHaveLength(1);
    // Room again: taken.
    const c = await engine.trigger('review', 'c');
    expect((await engine.wait(c.thread_id)).status).toBe('completed');
  });

  it('a killed waiting thread leaves the queue', async () => {
    const { engine } = setup({ maxRounds: 1, concurrency: { max: 1 } }, {}, 20);
    const a = await engine.trigger('review', 'a');
    const b = await engine.trigger('review', 'b');
    expect((await engine.kill(b.thread_id)).status).toBe('killed');
    expect(engine.get('review').queued).toBe(0);
    await engine.wait(a.thread_id);
    expect((await engine.thread(b.thread_id))?.turns).toEqual([]);
  });

  it('streams each turn’s tokens as they come, then the end; a reader resumes after the last id it saw', async () => {
    const { engine } = setup({}, {}, 1);
    const t = await engine.trigger('review', 'x');
    const frames: ThreadFrame[] = [];
    for await (const f of followThread(engine, t.thread_id)) frames.push(f);
    const end = frames.at(-1);
    expect(end?.kind).toBe('thread_end');
    const text = (n: number): string =>
      frames
        .flatMap((f) =>
          f.kind === 'turn_event' && f.turn === n && f.event.type === 'token' ? [f.event.t] : [],
        )
        .join('');
    expect(text(1)).toBe('code v1');
    expect(text(6)).toBe('APPROVED');
    const ids = frames.map((f) => f.id);
    expect(new Set(ids).size).toBe(ids.length);
    // Resume after a frame in the middle: the rest, exactly.
    const middle = frames[Math.floor(frames.length / 2)];
    const rest: string[] = [];
    for await (const f of followThread(
      engine,
      t.thread_id,
      parseThreadCursor(middle?.id ?? '') ?? undefined,
    )) {
      rest.push(f.id);
    }
    expect(rest).toEqual(ids.slice(Math.floor(frames.length / 2) + 1));
  });
});

describe('replay', () => {
  it('a thread under strict_replay reproduces the role sequence and outputs byte for byte, asking no model (NERVE-4021)', async () => {
    const { engine, asked } = setup();
    const first = await engine.wait(
      (await engine.trigger('review', 'Add a README', { seed: 5 })).thread_id,
    );
    const calls = asked.length;
    const again = await engine.wait(
      (
        await engine.trigger('review', 'Add a README', {
          mode: 'strict_replay',
          replayOf: first.thread_id,
        })
      ).thread_id,
    );
    expect(again.status).toBe('completed');
    expect(JSON.stringify(again.turns.map((t) => [t.role, t.raw, t.output]))).toBe(
      JSON.stringify(first.turns.map((t) => [t.role, t.raw, t.output])),
    );
    expect(asked).toHaveLength(calls);
  });
});
