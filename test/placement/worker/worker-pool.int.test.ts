import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import {
  neverStarted,
  WorkerPool,
  type StepEndpoint,
} from '../../../src/placement/worker/worker-pool.js';
import { createContext } from '../../../src/context/create-context.js';
import { PROBE } from '../../fixtures/worker-agents.js';

const fixtures = new URL('../../fixtures/worker-agents.ts', import.meta.url).href;

const endpoint: StepEndpoint = {
  onItems: () => Promise.resolve(),
  delegate: () => Promise.reject(new Error('not in this test')),
  callTool: () => Promise.reject(new Error('not in this test')),
  chat: () => Promise.reject(new Error('not in this test')),
  fact: () => Promise.reject(new Error('not in this test')),
  fs: () => Promise.reject(new Error('not in this test')),
  memory: () => Promise.reject(new Error('not in this test')),
};

function task(stepId: string, name = 'echo', args?: Record<string, unknown>) {
  return {
    agent: name,
    module: fixtures,
    export: name,
    input: { message: stepId, ...(args ? { args } : {}) },
    ctx: createContext().child('echo').toWire(),
    stepId,
    credit: 256,
  };
}

describe('the worker pool’s sessions', () => {
  it('runs steps on up to maxThreads sessions, and an idle session ends so its thread can go', async () => {
    const pool = new WorkerPool({ minThreads: 1, maxThreads: 2, idleTimeoutMs: 100 });
    // The most threads seen at once while the steps ran. (Read only at the end, a loaded
    // machine could already have let the first session idle out: a flaky check.)
    let most = 0;
    const sampler = setInterval(() => {
      most = Math.max(most, pool.threads);
    }, 1);
    try {
      const results = await Promise.all(
        ['s1', 's2', 's3', 's4'].map((id) => pool.runStep(task(id), endpoint, new EventEmitter())),
      );
      clearInterval(sampler);
      expect(
        results.map((r) => (r.ok && 'output' in r ? (r.output as { echo: string }).echo : null)),
      ).toEqual(['s1', 's2', 's3', 's4']);
      expect(most).toBe(2);
      // Idle sessions end after 100 ms, then piscina lets the thread above minThreads go.
      await expect.poll(() => pool.threads, { timeout: 5_000, interval: 50 }).toBe(1);
      // And the pool still serves, starting a session again.
      const again = await pool.runStep(task('s5'), endpoint, new EventEmitter());
      expect(again.ok).toBe(true);
    } finally {
      clearInterval(sampler);
      await pool.destroy();
    }
  });

  it('a step sent ahead to a thread that is stuck on a long step moves to a thread that is free', async () => {
    // Two threads, four steps each at most. `held` steps run until released: L holds thread
    // A for the whole test; S1 is sent ahead to A behind it (the less loaded thread then).
    const pool = new WorkerPool({ minThreads: 2, maxThreads: 2, pipeline: 4 });
    const probe = (): Int32Array => new Int32Array(new SharedArrayBuffer(16));
    const release = (p: Int32Array): void => {
      Atomics.store(p, PROBE.release, 1);
    };
    const long = probe();
    const medium = probe();
    const run = (t: ReturnType<typeof task>) => pool.runStep(t, endpoint, new EventEmitter());
    const outputOf = (r: Awaited<ReturnType<typeof run>>): unknown =>
      r.ok && 'output' in r ? r.output : r;
    try {
      const l = run(task('L', 'held', { probe: long.buffer }));
      const m = run(task('M', 'held', { probe: medium.buffer }));
      const s1 = run(task('S1'));
      const s2 = run(task('S2'));
      // Both threads are in their held steps (a loaded machine may start a thread late).
      await expect.poll(() => Atomics.load(medium, PROBE.started), { timeout: 10_000 }).toBe(1);
      await expect.poll(() => Atomics.load(long, PROBE.started), { timeout: 10_000 }).toBe(1);
      // B finishes M and S2, goes idle, and takes S1 back from A, where it waits behind L.
      release(medium);
      expect(outputOf(await m)).toBe('M released');
      expect(outputOf(await s2)).toMatchObject({ echo: 'S2' });
      expect(outputOf(await s1)).toMatchObject({ echo: 'S1' });
      expect(Atomics.load(long, PROBE.started)).toBe(1);
      release(long);
      expect(outputOf(await l)).toBe('L released');
      // Every thread still serves, in order.
      const more = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((id) => run(task(id))));
      expect(more.map((r) => (outputOf(r) as { echo: string }).echo)).toEqual([
        'a',
        'b',
        'c',
        'd',
        'e',
      ]);
    } finally {
      release(long);
      release(medium);
      await pool.destroy();
    }
  });

  it('a cancelled step waiting behind another in its thread is taken back at once, never started', async () => {
    const pool = new WorkerPool({ minThreads: 1, maxThreads: 1, pipeline: 4 });
    const long = new Int32Array(new SharedArrayBuffer(16));
    try {
      const l = pool.runStep(
        task('L', 'held', { probe: long.buffer }),
        endpoint,
        new EventEmitter(),
      );
      const s = pool.runStep(task('S'), endpoint, new EventEmitter());
      await expect.poll(() => Atomics.load(long, PROBE.started), { timeout: 10_000 }).toBe(1);
      pool.cancel('S', { code: 'CANCELLED', message: 'cancelled', retriable: false, details: {} });
      // L still runs, and holds the only thread: S ends without it.
      const err: unknown = await s.catch((e: unknown) => e);
      expect(neverStarted(err)).toBe(true);
      expect(Atomics.load(long, PROBE.release)).toBe(0);
      Atomics.store(long, PROBE.release, 1);
      expect((await l).ok).toBe(true);
    } finally {
      Atomics.store(long, PROBE.release, 1);
      await pool.destroy();
    }
  });

  it('refuses bad options before it starts any thread', () => {
    expect(() => new WorkerPool({ pipeline: 0 })).toThrow(RangeError);
    expect(() => new WorkerPool({ maxThreads: 0 })).toThrow(RangeError);
    expect(() => new WorkerPool({ maxQueue: -1 })).toThrow(RangeError);
  });
});
