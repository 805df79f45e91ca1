import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import { redisStore } from '../../src/store/redis/redis-store.js';
import type { StepJob } from '../../src/placement/fleet/fleet-jobs.js';
import type { StepRecord } from '../../src/store/records.js';
import { clearRedisPrefix, redisUrl } from '../support/redis.js';
import { makeStep } from '../support/records.js';
import { quietRuntime } from '../support/runtime.js';

const base = `axon-test:${randomUUID()}:`;
const redis = new Redis(redisUrl());
afterAll(async () => {
  await clearRedisPrefix(base);
  redis.disconnect();
});

/** A run and a `queued` agent step of it. */
async function queuedStep(prefix: string): Promise<{ runId: string; step: StepRecord }> {
  const api = quietRuntime({ store: redisStore({ url: redisUrl(), prefix }) });
  const { flow } = await api.createFlow({ name: 'f', ast: { id: randomUUID() } });
  const run = await api.createRun(flow.flow_id);
  // As an API process queues it for a fleet's job.
  const step = makeStep(run.run_id, {
    name: 'count',
    actor_path: ['count'],
    client_token: 'c-1',
    input: { agent: 'count', message: 'x' },
    placement: 'pool',
    status: 'queued',
    started_at: null,
  });
  await api.store.claimStep(step);
  await api.close();
  return { runId: run.run_id, step };
}

/** The job of `step` on pool `p`. */
function jobOf(runId: string, step: StepRecord): StepJob {
  return {
    step_id: step.step_id,
    run_id: runId,
    pool_id: 'p',
    body: { type: 'agent', client_token: 'c-1', input: { agent: 'count', message: 'x' } },
    traceparent: null,
    queued_at: Date.now(),
  };
}

describe('a fleet job taken by runtime.takeStep', () => {
  it('a queued step starts with its `running` and its `started` written together; its work runs once', async () => {
    const prefix = `${base}${randomUUID()}:`;
    const { runId, step } = await queuedStep(prefix);
    let runs = 0;
    const count = defineAgent({ name: 'count', handler: () => `run ${++runs}` });
    const rt = quietRuntime({ store: redisStore({ url: redisUrl(), prefix }), agents: [count] });
    expect(await rt.takeStep(jobOf(runId, step))).toBe('succeeded');
    expect(runs).toBe(1);
    const record = await rt.getStep(step.step_id);
    expect(record).toMatchObject({ status: 'succeeded', output: 'run 1' });
    expect(record?.started_at).not.toBeNull();
    const log = await rt.store.readEvents(step.step_id);
    expect(log.map((e) => e.type)).toEqual(['started', 'end']);
    await rt.close();
  });

  it('a replica whose fence no longer holds when it starts the step writes nothing and never runs its work', async () => {
    const prefix = `${base}${randomUUID()}:`;
    const { runId, step } = await queuedStep(prefix);
    // Another replica took the step over: the fence holds its token, not this one's.
    const fenceKey = `${prefix}fence-of-test`;
    await redis.set(fenceKey, 'another-replica');
    let runs = 0;
    const count = defineAgent({ name: 'count', handler: () => `run ${++runs}` });
    const fenced = redisStore({
      url: redisUrl(),
      prefix,
      fence: (target) =>
        target.stepId === step.step_id || target.runId === runId
          ? [{ key: fenceKey, token: 'this-replica' }]
          : [],
    });
    const rt = quietRuntime({ store: fenced, agents: [count] });
    const status = await rt.takeStep(jobOf(runId, step));
    // Its end could not be stored: the replica that holds the fence says how it ends.
    expect(status).toBeNull();
    expect(runs).toBe(0);
    const reader = redisStore({ url: redisUrl(), prefix });
    expect(await reader.getStep(step.step_id)).toMatchObject({
      status: 'queued',
      started_at: null,
    });
    expect(await reader.readEvents(step.step_id)).toEqual([]);
    await reader.close();
    await rt.close();
  });
});
