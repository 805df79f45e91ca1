/**
 * The owner's submission (`runtime.submitOwnedStep`, a workflow's turn): typed and awaited
 * to its end, and idempotent by client token as a stranger's is — the same token twice is
 * one step, run once, in one process and after a restart on the same file.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import { ConflictError } from '../../src/errors/conflict-error.js';
import { NotFoundError } from '../../src/errors/not-found-error.js';
import { PoolUnavailableError } from '../../src/errors/pool-unavailable-error.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import type { RunStore } from '../../src/store/run-store.js';
import { sqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { quietRuntime } from '../support/runtime.js';

const dir = mkdtempSync(join(tmpdir(), 'axon-owned-step-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** A runtime whose agent `slow` counts its runs and answers when `release` is called. */
function setup(store: RunStore): { rt: Runtime; runs: () => number; release: () => void } {
  let runs = 0;
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const slow = defineAgent({
    name: 'slow',
    handler: async (input) => {
      runs++;
      await gate;
      return `done ${input.message} ${JSON.stringify(input.args ?? {})}`;
    },
  });
  return { rt: quietRuntime({ store, agents: [slow] }), runs: () => runs, release };
}

async function runOf(rt: Runtime): Promise<string> {
  const { flow } = await rt.createFlow({ name: 'owned', ast: { id: randomUUID() } });
  return (await rt.createRun(flow.flow_id)).run_id;
}

describe.each([
  ['memory', (): RunStore => memoryStore()],
  ['sqlite', (): RunStore => sqliteStore(join(dir, `${randomUUID()}.db`))],
])('an owned step on the %s store', (_name, make) => {
  it('submitted twice under one token is one step, run once; the second is told the first', async () => {
    const { rt, runs, release } = setup(make());
    try {
      const runId = await runOf(rt);
      const claims: [string, boolean][] = [];
      const submit = () =>
        rt.submitOwnedStep(runId, {
          clientToken: 'turn-1',
          agent: 'slow',
          message: 'hi',
          args: { n: 1 },
          placement: 'here',
          onClaimed: (stepId, created) => claims.push([stepId, created]),
        });
      const first = submit();
      const second = await submit();
      expect(second.created).toBe(false);
      release();
      const done = await first;
      expect(done).toEqual({
        stepId: second.stepId,
        created: true,
        ending: { status: 'succeeded', output: 'done hi {"n":1}', error: null },
      });
      // Each was told its claim: the same step, new for the first only.
      expect(claims.sort((a, b) => Number(b[1]) - Number(a[1]))).toEqual([
        [done.stepId, true],
        [done.stepId, false],
      ]);
      // Once more after its end: found, not run.
      expect(await submit()).toEqual({ stepId: done.stepId, created: false, ending: null });
      expect(runs()).toBe(1);
      const steps = await rt.listSteps(runId);
      expect(steps.map((s) => [s.client_token, s.status, s.name])).toEqual([
        ['turn-1', 'succeeded', 'slow'],
      ]);
      // Its record holds the input as a submission's: what a resume submits again.
      expect(steps[0]?.input).toEqual({ message: 'hi', args: { n: 1 } });
    } finally {
      await rt.close();
    }
  });

  it('is refused before any step as a submission is: no run, an ended run, an unknown agent, a pool without a fleet', async () => {
    const { rt, release } = setup(make());
    release();
    try {
      const runId = await runOf(rt);
      const step = { clientToken: 't', agent: 'slow', message: 'x', placement: 'here' } as const;
      await expect(rt.submitOwnedStep('run_none', step)).rejects.toBeInstanceOf(NotFoundError);
      await expect(rt.submitOwnedStep(runId, { ...step, agent: 'nobody' })).rejects.toBeInstanceOf(
        NotFoundError,
      );
      await expect(
        rt.submitOwnedStep(runId, { ...step, placement: { pool: 'gpu' } }),
      ).rejects.toBeInstanceOf(PoolUnavailableError);
      expect(await rt.listSteps(runId)).toEqual([]);
      await rt.completeRun(runId);
      await expect(rt.submitOwnedStep(runId, step)).rejects.toBeInstanceOf(ConflictError);
    } finally {
      await rt.close();
    }
  });
});

describe('an owned step after a restart', () => {
  it('a runtime on the same SQLite file finds the step under its token and runs nothing', async () => {
    const file = join(dir, `${randomUUID()}.db`);
    const before = setup(sqliteStore(file));
    before.release();
    const runId = await runOf(before.rt);
    const step = {
      clientToken: 'turn-1',
      agent: 'slow',
      message: 'once',
      placement: 'here',
    } as const;
    const first = await before.rt.submitOwnedStep(runId, step);
    expect(first.created).toBe(true);
    await before.rt.close();

    const after = setup(sqliteStore(file));
    after.release();
    try {
      expect(await after.rt.submitOwnedStep(runId, step)).toEqual({
        stepId: first.stepId,
        created: false,
        ending: null,
      });
      expect(after.runs()).toBe(0);
      expect((await after.rt.listSteps(runId)).map((s) => s.status)).toEqual(['succeeded']);
    } finally {
      await after.rt.close();
    }
  });
});
