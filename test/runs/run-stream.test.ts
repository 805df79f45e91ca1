import { toArray, firstValueFrom, filter, map } from 'rxjs';
import { describe, expect, it, vi } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import { NotFoundError } from '../../src/errors/not-found-error.js';
import type { StreamItem } from '../../src/streams/events.js';
import { quietRuntime, until } from '../support/runtime.js';

const child = defineAgent({
  name: 'child',
  async *handler() {
    yield 'c1 ';
    yield 'c2';
  },
});
const parent = defineAgent({
  name: 'parent',
  async *handler(input, ctx, runtime) {
    yield { type: 'narration', text: 'delegating' };
    const r = await runtime.delegate<string>('child', input, ctx);
    yield `parent saw ${r.output ?? ''}`;
  },
});

describe('runtime.stream', () => {
  it("yields a child's events nested under its parent, with actor paths", async () => {
    const runtime = quietRuntime({ agents: [parent, child] });
    const items: StreamItem[] = [];
    const stream = runtime.stream('parent', 'go');
    for await (const item of stream) items.push(item);
    const trail = items.map((i) => `${i.path.join('/')}:${i.event.type}`);
    expect(trail).toEqual([
      'parent:started',
      'parent:narration',
      'parent/child:started',
      'parent/child:token',
      'parent/child:token',
      'parent/child:end',
      'parent:token',
      'parent:end',
    ]);
    const result = await stream.result;
    expect(result.output).toBe('parent saw c1 c2');
    // Everything streamed is in the log, step by step.
    const steps = await runtime.store.listSteps(result.runId);
    for (const step of steps) {
      const log = await runtime.store.readEvents(step.step_id);
      const streamed = items.filter((i) => i.event.step_id === step.step_id).map((i) => i.event);
      expect(streamed).toEqual(log);
    }
  });

  it('is also an RxJS Observable', async () => {
    const runtime = quietRuntime({ agents: [parent, child] });
    const tokens = await firstValueFrom(
      runtime.stream('parent', 'go').observable.pipe(
        filter((i) => i.event.type === 'token'),
        map((i) => (i.event.type === 'token' ? i.event.t : '')),
        toArray(),
      ),
    );
    expect(tokens).toEqual(['c1 ', 'c2', 'parent saw c1 c2']);
  });

  it('starts only when consumed, and result alone runs it', async () => {
    let runs = 0;
    const counted = defineAgent({
      name: 'counted',
      handler: () => {
        runs++;
        return runs;
      },
    });
    const runtime = quietRuntime({ agents: [counted] });
    const stream = runtime.stream('counted', 'x');
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(runs).toBe(0);
    await expect(stream.result).resolves.toMatchObject({ output: 1 });
    await expect(stream.result).resolves.toMatchObject({ output: 1 });
    expect(runs).toBe(1);
  });

  it('cancel() ends the run with CANCELLED and the stream completes', async () => {
    let produced = 0;
    const endless = defineAgent({
      name: 'endless',
      async *handler() {
        for (;;) {
          produced++;
          yield 't';
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
      },
    });
    const runtime = quietRuntime({ agents: [endless] });
    const stream = runtime.stream('endless', 'x');
    const seen: string[] = [];
    const consumed = (async () => {
      for await (const { event } of stream) seen.push(event.type);
    })();
    await until(() => produced > 3);
    stream.cancel();
    await consumed;
    expect(seen.at(-1)).toBe('error');
    expect(seen.lastIndexOf('token')).toBeLessThan(seen.indexOf('error'));
    await expect(stream.result).resolves.toMatchObject({
      status: 'error',
      error: { code: 'CANCELLED' },
    });
  });

  it('an unknown agent fails the iteration and the result with NotFoundError, and runs nothing', async () => {
    const runtime = quietRuntime({ agents: [parent, child] });
    const stream = runtime.stream('nobody', 'go');
    const consume = async (): Promise<number> => {
      let n = 0;
      for await (const _item of stream) n++;
      return n;
    };
    await expect(consume()).rejects.toBeInstanceOf(NotFoundError);
    await expect(stream.result).rejects.toBeInstanceOf(NotFoundError);
    expect(runtime.system.list('step')).toHaveLength(0);
  });

  it('breaking out of the loop early unsubscribes without disturbing the run', async () => {
    const runtime = quietRuntime({ agents: [parent, child] });
    const stream = runtime.stream('parent', 'go');
    for await (const item of stream) {
      if (item.event.type === 'narration') break;
    }
    await expect(stream.result).resolves.toMatchObject({ status: 'success' });
  });
});

describe('runtime.stream: subscribers are isolated', () => {
  /** Collects uncaught exceptions while `fn` runs, and a few turns after (RxJS rethrows on a timer). */
  async function uncaughtDuring(fn: () => Promise<void>): Promise<unknown[]> {
    const seen: unknown[] = [];
    const listener = (err: unknown): void => {
      seen.push(err);
    };
    process.prependListener('uncaughtException', listener);
    try {
      await fn();
      await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      process.removeListener('uncaughtException', listener);
    }
    return seen;
  }

  it('a subscriber that throws is logged and counted; the stream and a well-behaved subscriber go on', async () => {
    const runtime = quietRuntime({ agents: [parent, child] });
    const warn = vi.spyOn(runtime.logger, 'warn');
    const stream = runtime.stream('parent', 'go');
    const good: string[] = [];
    let piped = 0;
    const uncaught = await uncaughtDuring(async () => {
      stream.observable.subscribe(() => {
        throw new Error('bad subscriber');
      });
      stream.observable.pipe(filter((i) => i.event.type === 'token')).subscribe({
        next: () => {
          piped++;
          throw new Error('bad piped subscriber');
        },
      });
      stream.observable.subscribe({ next: (i) => good.push(i.event.type) });
      await stream.result;
    });
    expect(uncaught).toEqual([]);
    expect(good).toEqual([
      'started',
      'narration',
      'started',
      'token',
      'token',
      'end',
      'token',
      'end',
    ]);
    expect(piped).toBe(3);
    expect(stream.subscriberFailures).toBe(8 + 3);
    expect(warn).toHaveBeenCalledTimes(11);
    expect((await stream.result).status).toBe('success');
  });

  it('an error no subscriber handles is counted, not thrown at the process', async () => {
    const runtime = quietRuntime({ agents: [parent, child] });
    const stream = runtime.stream('nobody', 'go');
    const uncaught = await uncaughtDuring(async () => {
      stream.observable.subscribe(() => undefined);
      await stream.result.catch(() => undefined);
    });
    expect(uncaught).toEqual([]);
    expect(stream.subscriberFailures).toBe(1);
    await expect(stream.result).rejects.toBeInstanceOf(NotFoundError);
  });
});
