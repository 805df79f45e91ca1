import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { WorkerPool, type StepEndpoint } from '../../src/actors/worker-pool.js';
import { createContext } from '../../src/context/create-context.js';

const fixtures = new URL('../fixtures/worker-agents.ts', import.meta.url).href;

const endpoint: StepEndpoint = {
  onItems: () => Promise.resolve(),
  delegate: () => Promise.reject(new Error('not in this test')),
  callTool: () => Promise.reject(new Error('not in this test')),
  chat: () => Promise.reject(new Error('not in this test')),
  fact: () => Promise.reject(new Error('not in this test')),
  fs: () => Promise.reject(new Error('not in this test')),
  memory: () => Promise.reject(new Error('not in this test')),
};

function task(stepId: string) {
  return {
    agent: 'echo',
    module: fixtures,
    export: 'echo',
    input: { message: stepId },
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

  it('refuses bad options before it starts any thread', () => {
    expect(() => new WorkerPool({ pipeline: 0 })).toThrow(RangeError);
    expect(() => new WorkerPool({ maxThreads: 0 })).toThrow(RangeError);
    expect(() => new WorkerPool({ maxQueue: -1 })).toThrow(RangeError);
  });
});
