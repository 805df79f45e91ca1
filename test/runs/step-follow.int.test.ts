import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { SubmittedStep } from '../../src/runs/submitted-step.js';
import { NotFoundError } from '../../src/errors/not-found-error.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import type { RunStore } from '../../src/store/run-store.js';
import { sqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { StepEvent } from '../../src/streams/events.js';
import { quietRuntime } from '../support/runtime.js';
import { useTestResources } from '../support/test-resources.js';

const resources = useTestResources('follow');
const runtimes: Runtime[] = [];
afterAll(async () => {
  await Promise.all(runtimes.map((r) => r.close()));
});

/**
 * A runtime whose agent `talker` pushes `args.tokens` tokens, waiting for `release()` after
 * the first `args.hold` of them.
 */
function setup(store: RunStore = memoryStore()) {
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const talker = defineAgent({
    name: 'talker',
    async *handler(input) {
      const tokens = Number(input.args?.['tokens'] ?? 5);
      const hold = Number(input.args?.['hold'] ?? -1);
      for (let i = 0; i < tokens; i++) {
        if (i === hold) await held;
        yield ` t${i}`;
      }
    },
  });
  const rt = quietRuntime({ store, agents: [talker] });
  runtimes.push(rt);
  return { rt, release };
}

async function submitTalker(rt: Runtime, args: Record<string, number>): Promise<string> {
  return (await submitted(rt, args)).step_id;
}

async function submitted(rt: Runtime, args: Record<string, number>): Promise<SubmittedStep> {
  const { flow } = await rt.createFlow({ name: 'follow', ast: { id: randomUUID() } });
  const run = await rt.createRun(flow.flow_id);
  return rt.submitStep(run.run_id, {
    type: 'agent',
    client_token: 'talk',
    input: { agent: 'talker', message: 'go', args },
  });
}

async function collect(events: AsyncIterable<StepEvent>): Promise<StepEvent[]> {
  const out: StepEvent[] = [];
  for await (const ev of events) out.push(ev);
  return out;
}

/**
 * A memory store whose next read of a log that finds nothing new first runs the action
 * `setAction` was last given (once), then returns what it found.
 */
function storeActingOnEmptyRead(): {
  base: RunStore;
  store: RunStore;
  setAction: (act: () => Promise<unknown>) => void;
} {
  const base = memoryStore();
  let action: (() => Promise<unknown>) | null = null;
  const store = new Proxy(base, {
    get(target, key) {
      if (key === 'readEvents') {
        return async (stepId: string, afterSeq?: number, limit?: number) => {
          const events = await target.readEvents(stepId, afterSeq, limit);
          if (events.length === 0 && action) {
            const act = action;
            action = null;
            await act();
          }
          return events;
        };
      }
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
    },
  });
  return {
    base,
    store,
    setAction: (act) => {
      action = act;
    },
  };
}

describe('runtime.followStep: a step log from a seq, then live, to its end (API.md stream)', () => {
  it.each([
    ['memory', () => memoryStore()],
    ['sqlite', () => sqliteStore(resources.file())],
  ])(
    'on the %s store, a follower of a running step gets every event once, in order',
    async (_n, make) => {
      const { rt, release } = setup(make());
      const stepId = await submitTalker(rt, { tokens: 40, hold: 10 });
      const following = collect(rt.followStep(stepId));
      // The step waits after 10 tokens; the follower is then between the log and the live part.
      release();
      const events = await following;
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      expect(events.filter((e) => e.type === 'token')).toHaveLength(40);
      expect(events.at(-1)?.type).toBe('end');
      expect(events).toEqual(await rt.readStepEvents(stepId));
    },
  );

  it('from a Last-Event-ID only the later events; a step that ended replays its log and closes', async () => {
    const { rt } = setup();
    const stepId = await submitTalker(rt, { tokens: 5 });
    const whole = await collect(rt.followStep(stepId));
    expect(whole.map((e) => e.type)).toEqual(['started', ...Array<string>(5).fill('token'), 'end']);
    const after = await collect(rt.followStep(stepId, { afterSeq: 4 }));
    expect(after.map((e) => e.seq)).toEqual([5, 6, 7]);
    expect(await collect(rt.followStep(stepId, { afterSeq: 7 }))).toEqual([]);
  });

  it('a step run by another runtime on the same store is read every pollMs', async () => {
    const store = memoryStore();
    const { rt: runner, release } = setup(store);
    const { rt: reader } = setup(store);
    const stepId = await submitTalker(runner, { tokens: 12, hold: 4 });
    const following = collect(reader.followStep(stepId, { pollMs: 5 }));
    release();
    const events = await following;
    expect(events.filter((e) => e.type === 'token')).toHaveLength(12);
    expect(events).toEqual(await runner.readStepEvents(stepId));
  });

  it('a slow follower holds nothing up and misses nothing', async () => {
    const { rt } = setup();
    const step = await submitted(rt, { tokens: 3_000 });
    let read = 0;
    for await (const ev of rt.followStep(step.step_id)) {
      read++;
      // After 10 events this follower waits for the whole step to end: it ends.
      if (read === 10) await step.done;
      expect(ev.seq).toBe(read);
    }
    expect(read).toBe(3_002);
  });

  it('regression: a step that ends between an empty read of its log and the check of its record still gives its follower its last event', async () => {
    // The follower's read finds nothing new; before it looks at the step's record, the step
    // logs its end and its record ends. The follower used to stop there, without `end`.
    const { store, setAction } = storeActingOnEmptyRead();
    const { rt, release } = setup(store);
    const step = await submitted(rt, { tokens: 3, hold: 1 });
    const events: StepEvent[] = [];
    for await (const ev of rt.followStep(step.step_id)) {
      events.push(ev);
      // Caught up (`started`, one token): the next read is empty, and returns once the step has ended.
      if (events.length === 2) {
        setAction(() => step.done);
        release();
      }
    }
    expect(events.map((e) => e.type)).toEqual(['started', 'token', 'token', 'token', 'end']);
  });

  it('an append while the follower reads an empty page wakes it: it does not sleep through to its poll', async () => {
    // The follower's read finds nothing; before it returns, the step appends a token. Had
    // the follower then waited for the next append (or its ten-minute poll), it would hang.
    const { base, store, setAction } = storeActingOnEmptyRead();
    const gate = (): { promise: Promise<void>; resolve: () => void } => {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      return { promise, resolve };
    };
    const gates = [gate(), gate()];
    const gated = defineAgent({
      name: 'gated',
      async *handler() {
        yield 'a';
        await gates[0]?.promise;
        yield 'b';
        await gates[1]?.promise;
      },
    });
    const rt = quietRuntime({ store, agents: [gated] });
    runtimes.push(rt);
    const { flow } = await rt.createFlow({ name: 'gated', ast: { id: randomUUID() } });
    const run = await rt.createRun(flow.flow_id);
    const step = await rt.submitStep(run.run_id, {
      type: 'agent',
      client_token: 'gated',
      input: { agent: 'gated', message: 'go' },
    });
    const texts: string[] = [];
    let lastType = '';
    for await (const ev of rt.followStep(step.step_id, { pollMs: 600_000 })) {
      lastType = ev.type;
      if (ev.type === 'token') texts.push(ev.t);
      if (ev.type === 'token' && ev.t === 'a') {
        setAction(async () => {
          gates[0]?.resolve();
          // Until `b` is in the log: appended while this (empty) read is out.
          while ((await base.readEvents(step.step_id, ev.seq)).length === 0) {
            await new Promise((r) => setImmediate(r));
          }
        });
      }
      if (ev.type === 'token' && ev.t === 'b') gates[1]?.resolve();
    }
    expect(texts).toEqual(['a', 'b']);
    // Not the step's own timeout waking a follower that slept through `b`.
    expect(lastType).toBe('end');
  });

  it('followStepPages: a reader behind gets the log in pages of at most 256 events, never empty, the last ending with end', async () => {
    const { rt } = setup();
    const step = await submitted(rt, { tokens: 1_000 });
    await step.done;
    const pages: (readonly StepEvent[])[] = [];
    for await (const page of rt.followStepPages(step.step_id)) pages.push(page);
    expect(pages.length).toBeGreaterThanOrEqual(4);
    for (const page of pages) {
      expect(page.length).toBeGreaterThan(0);
      expect(page.length).toBeLessThanOrEqual(256);
    }
    expect(pages.at(-1)?.at(-1)?.type).toBe('end');
    expect(pages.flat()).toEqual(await rt.readStepEvents(step.step_id));
  });

  it('stops when the reader breaks off, and refuses an unknown step and bad options', async () => {
    const { rt, release } = setup();
    const stepId = await submitTalker(rt, { tokens: 10, hold: 2 });
    const seen: number[] = [];
    for await (const ev of rt.followStep(stepId)) {
      seen.push(ev.seq);
      if (seen.length === 2) break;
    }
    expect(seen).toEqual([1, 2]);
    release();
    await expect(collect(rt.followStep('step_nowhere'))).rejects.toBeInstanceOf(NotFoundError);
    await expect(collect(rt.followStep(stepId, { afterSeq: -1 }))).rejects.toThrow(RangeError);
    await expect(collect(rt.followStep(stepId, { pollMs: 0 }))).rejects.toThrow(/pollMs/);
  });
});

describe('cancel_on_disconnect (API.md): a follower disconnecting is its signal aborting', () => {
  async function talkerIn(rt: Runtime, cancelOnDisconnect: boolean): Promise<string> {
    const { flow } = await rt.createFlow({ name: 'follow', ast: { id: randomUUID() } });
    const run = await rt.createRun(flow.flow_id, { cancel_on_disconnect: cancelOnDisconnect });
    const step = await rt.submitStep(run.run_id, {
      type: 'agent',
      input: { agent: 'talker', message: 'go', args: { tokens: 6, hold: 2 } },
    });
    return step.step_id;
  }

  /** Follows until the first token, then aborts the follower's signal. */
  async function followThenDisconnect(rt: Runtime, stepId: string): Promise<StepEvent[]> {
    const disconnect = new AbortController();
    const seen: StepEvent[] = [];
    for await (const ev of rt.followStep(stepId, { signal: disconnect.signal })) {
      seen.push(ev);
      if (ev.type === 'token') disconnect.abort();
    }
    return seen;
  }

  it('the last follower of a live step disconnecting cancels the step when its run asks', async () => {
    const { rt } = setup();
    const stepId = await talkerIn(rt, true);
    const seen = await followThenDisconnect(rt, stepId);
    // The follow ends with the disconnect: nothing is shown after it.
    expect(seen.map((e) => e.type)).toEqual(['started', 'token']);
    const log = await collect(rt.followStep(stepId));
    expect(log.at(-1)).toMatchObject({ type: 'error', code: 'CANCELLED' });
    expect(log.filter((e) => e.type === 'token')).toHaveLength(2);
    expect((await rt.getStep(stepId))?.status).toBe('cancelled');
  });

  it('without cancel_on_disconnect, or while another follower stays, the step goes on', async () => {
    const { rt, release } = setup();
    const alone = await talkerIn(rt, false);
    await followThenDisconnect(rt, alone);
    const shared = await talkerIn(rt, true);
    const stays = collect(rt.followStep(shared));
    await followThenDisconnect(rt, shared);
    release();
    expect((await stays).at(-1)?.type).toBe('end');
    expect((await collect(rt.followStep(alone))).at(-1)?.type).toBe('end');
    expect((await rt.getStep(alone))?.status).toBe('succeeded');
    expect((await rt.getStep(shared))?.status).toBe('succeeded');
  });

  it('a signal aborted before the follow starts cancels at once; a non-signal is refused', async () => {
    const { rt } = setup();
    const stepId = await talkerIn(rt, true);
    expect(await collect(rt.followStep(stepId, { signal: AbortSignal.abort() }))).toEqual([]);
    const log = await collect(rt.followStep(stepId));
    expect(log.at(-1)).toMatchObject({ type: 'error', code: 'CANCELLED' });
    await expect(
      collect(rt.followStep(stepId, { signal: {} as AbortSignal })),
    ).rejects.toBeInstanceOf(TypeError);
  });
});
