import { describe, expect, it } from 'vitest';
import { memoryStore } from '../../src/store/memory-store.js';
import type { RunRecord, RunStatus, StepRecord } from '../../src/store/records.js';
import { describeRunStore } from './run-store.conformance.js';

describeRunStore('memory', () => memoryStore());

const usage = { tokens_in: 0, tokens_out: 0, cost_usd: 0, wall_ms: 0 };
const run = (id: string, status: RunStatus): RunRecord => ({
  run_id: id,
  flow_id: null,
  mode: 'record',
  seed: null,
  budgets: {},
  status,
  budget_usage: usage,
  provenance: null,
  entry: 'a',
  trace_id: 'a'.repeat(32),
  user_id: null,
  created_at: new Date(0).toISOString(),
  ended_at: null,
});
const step = (runId: string): StepRecord => ({
  step_id: `${runId}-s`,
  run_id: runId,
  type: 'agent',
  name: 'a',
  parent_step_id: null,
  actor_path: ['a'],
  client_token: null,
  input: null,
  placement: 'inline',
  status: 'succeeded',
  budget_usage: usage,
  provenance: null,
  output: null,
  error: null,
  created_at: new Date(0).toISOString(),
  started_at: null,
  ended_at: null,
});

describe('memory store retention', () => {
  it('drops the oldest finished runs, with their steps and logs, past maxRuns', async () => {
    const store = memoryStore({ maxRuns: 3 });
    for (const id of ['r1', 'r2', 'r3']) {
      await store.createRun(run(id, 'completed'));
      await store.createStep(step(id));
      await store.appendEvents([
        { type: 'narration', step_id: `${id}-s`, seq: 1, ts: 0, text: id },
      ]);
    }
    await store.createRun(run('r4', 'completed'));
    expect(await store.getRun('r1')).toBeNull();
    expect(await store.getStep('r1-s')).toBeNull();
    expect(await store.readEvents('r1-s')).toEqual([]);
    expect(await store.getRun('r2')).not.toBeNull();
    expect(await store.readEvents('r2-s')).toHaveLength(1);
  });

  it('never drops a run that is still going', async () => {
    const store = memoryStore({ maxRuns: 2 });
    await store.createRun(run('live', 'running'));
    await store.createRun(run('done-1', 'failed'));
    await store.createRun(run('done-2', 'cancelled'));
    await store.createRun(run('done-3', 'completed'));
    expect(await store.getRun('live')).not.toBeNull();
    expect(await store.getRun('done-1')).toBeNull();
    expect(await store.getRun('done-2')).toBeNull();
    expect(await store.getRun('done-3')).not.toBeNull();
  });

  it('refuses a maxRuns below 1', () => {
    expect(() => memoryStore({ maxRuns: 0 })).toThrow(RangeError);
  });
});
