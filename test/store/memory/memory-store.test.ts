import { describe, expect, it } from 'vitest';
import { memoryStore } from '../../../src/store/memory/memory-store.js';
import { makeRun, makeStep } from '../../support/records.js';
import { describeActorStore } from '../actor-store.conformance.js';
import { describeRunStore } from '../run-store.conformance.js';

describeRunStore('memory', () => memoryStore());
describeActorStore('memory', () => memoryStore());

describe('memory store retention', () => {
  it('drops the oldest finished runs, with their steps and logs, past maxRuns', async () => {
    const store = memoryStore({ maxRuns: 3 });
    for (const id of ['r1', 'r2', 'r3']) {
      await store.createRun(makeRun({ run_id: id, status: 'completed' }));
      await store.createStep(makeStep(id, { step_id: `${id}-s` }));
      await store.appendEvents([
        { type: 'narration', step_id: `${id}-s`, seq: 1, ts: 0, text: id },
      ]);
    }
    await store.createRun(makeRun({ run_id: 'r4', status: 'completed' }));
    expect(await store.getRun('r1')).toBeNull();
    expect(await store.getStep('r1-s')).toBeNull();
    expect(await store.readEvents('r1-s')).toEqual([]);
    expect(await store.getRun('r2')).not.toBeNull();
    expect(await store.readEvents('r2-s')).toHaveLength(1);
  });

  it('never drops a run that is still going', async () => {
    const store = memoryStore({ maxRuns: 2 });
    await store.createRun(makeRun({ run_id: 'live', status: 'running' }));
    await store.createRun(makeRun({ run_id: 'done-1', status: 'failed' }));
    await store.createRun(makeRun({ run_id: 'done-2', status: 'cancelled' }));
    await store.createRun(makeRun({ run_id: 'done-3', status: 'completed' }));
    expect(await store.getRun('live')).not.toBeNull();
    expect(await store.getRun('done-1')).toBeNull();
    expect(await store.getRun('done-2')).toBeNull();
    expect(await store.getRun('done-3')).not.toBeNull();
  });

  it('drops runs in the order they finish, as soon as they finish past maxRuns', async () => {
    const store = memoryStore({ maxRuns: 2 });
    for (const id of ['a', 'b', 'c']) {
      await store.createRun(makeRun({ run_id: id, status: 'running' }));
    }
    // Three live runs over a limit of two: none may go yet.
    for (const id of ['a', 'b', 'c']) expect(await store.getRun(id)).not.toBeNull();
    await store.updateRun('b', { status: 'completed' });
    expect(await store.getRun('b')).toBeNull();
    // Back within the limit: the next run to finish is kept.
    await store.updateRun('a', { status: 'failed' });
    expect(await store.getRun('a')).toMatchObject({ status: 'failed' });
    await store.createRun(makeRun({ run_id: 'd', status: 'running' }));
    expect(await store.getRun('a')).toBeNull();
    expect(await store.getRun('c')).not.toBeNull();
  });

  it('keeps every event of a finished step, and events appended after it finished', async () => {
    const store = memoryStore();
    await store.createRun(makeRun({ run_id: 'r', status: 'running' }));
    await store.createStep(makeStep('r', { step_id: 's' }));
    const narration = (seq: number) =>
      ({ type: 'narration', step_id: 's', seq, ts: 0, text: `n${seq}` }) as const;
    await store.appendEvents([narration(1), narration(2)]);
    await store.updateStep('s', { status: 'succeeded' });
    await store.appendEvents([narration(3)]);
    await store.updateRun('r', { status: 'completed' });
    expect((await store.readEvents('s')).map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(await store.listSteps('r')).toHaveLength(1);
  });

  it('refuses a maxRuns below 1', () => {
    expect(() => memoryStore({ maxRuns: 0 })).toThrow(RangeError);
  });
});
