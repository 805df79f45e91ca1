/**
 * The fleet under faults (issue 29), in one process over real Redis and BullMQ: cancels that
 * land whatever the timing — recorded before they are sent, read by the replica when it
 * takes a step and while it runs — and steps whose job is gone, which end `WORKER_LOST`
 * instead of staying open for ever.
 */
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { stepJobId } from '../../src/placement/fleet-jobs.js';
import { FleetKeys } from '../../src/placement/fleet-keys.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { StepEvent } from '../../src/streams/events.js';
import { useInProcessFleets } from '../support/fleet-inprocess.js';
import { redisUrl } from '../support/redis.js';

const { prefix: fleetPrefix, replica, api } = useInProcessFleets('fleet-faults');
const redis = new Redis(redisUrl());
afterAll(async () => {
  await redis.quit();
});

const llm = (tokens: number): Record<string, unknown> => ({
  type: 'llm_call',
  input: { messages: [{ role: 'user', content: 'hi' }], params: { max_tokens: tokens } },
});

async function newRun(rt: Runtime): Promise<string> {
  const { flow } = await rt.createFlow({ name: 'f' });
  return (await rt.createRun(flow.flow_id, { seed: 1 })).run_id;
}

async function log(rt: Runtime, stepId: string): Promise<StepEvent[]> {
  const events: StepEvent[] = [];
  for await (const e of rt.followStep(stepId)) events.push(e);
  return events;
}

/** A replica of `pool` taking one step at a time, its engine a token every `tokenMs`. */
const slowReplica = (prefix: string, pool: string, tokenMs = 20) =>
  replica(prefix, pool, {
    concurrency: 1,
    runtime: { engines: [createScriptedEngine({ tokenDelayMs: tokenMs })] },
  });

describe('cancels that always land', () => {
  it('a step whose cancel was recorded before its replica took it never starts: a lone CANCELLED, no token', async () => {
    const prefix = fleetPrefix();
    await slowReplica(prefix, 'p');
    const rt = await api(prefix);
    const runId = await newRun(rt);
    // The replica's one slot is busy, so the second step waits in the queue.
    const busy = await rt.submitStep(runId, llm(40));
    const waiting = await rt.submitStep(runId, llm(40));
    expect(waiting.status).toBe('queued');
    // The cancel is recorded, but its job is not taken off the queue (as when the API saw it
    // held and only sent the message, which nobody held then).
    await redis.set(new FleetKeys(prefix).cancelled(waiting.step_id), '1');
    expect(await busy.done).toBe('succeeded');
    expect(await waiting.done).toBe('cancelled');
    const events = await log(rt, waiting.step_id);
    expect(events.map((e) => e.type)).toEqual(['error']);
    expect(events[0]).toMatchObject({ code: 'CANCELLED' });
    expect((await rt.getStep(waiting.step_id))?.status).toBe('cancelled');
  });

  it('a running step whose cancel message was lost is cancelled from the record at the next heartbeat; no token after the error', async () => {
    const prefix = fleetPrefix();
    await slowReplica(prefix, 'p');
    const rt = await api(prefix);
    const runId = await newRun(rt);
    const step = await rt.submitStep(runId, llm(2_000));
    // Running: its first tokens are in the log.
    for await (const e of rt.followStep(step.step_id)) if (e.type === 'token') break;
    // Recorded, never sent.
    await redis.set(new FleetKeys(prefix).cancelled(step.step_id), '1');
    expect(await step.done).toBe('cancelled');
    const events = await log(rt, step.step_id);
    const types = events.map((e) => e.type);
    expect(types.at(-1)).toBe('error');
    expect(events.at(-1)).toMatchObject({ code: 'CANCELLED' });
    expect(types.filter((t) => t === 'token').length).toBeLessThan(2_000);
    expect(types.slice(types.indexOf('error'))).toEqual(['error']);
  });

  it('a cancel through the API records the cancel, then the step ends cancelled', async () => {
    const prefix = fleetPrefix();
    await slowReplica(prefix, 'p');
    const rt = await api(prefix);
    const runId = await newRun(rt);
    const step = await rt.submitStep(runId, llm(2_000));
    for await (const e of rt.followStep(step.step_id)) if (e.type === 'token') break;
    await rt.cancelStep(step.step_id);
    expect(await redis.exists(new FleetKeys(prefix).cancelled(step.step_id))).toBe(1);
    expect(await step.done).toBe('cancelled');
  });
});

/** The BullMQ queue of `pool` on the fleet of `prefix`. */
function poolQueue(prefix: string, pool: string): Queue {
  const keys = new FleetKeys(prefix);
  return new Queue(keys.queue(pool), { connection: { url: redisUrl() }, prefix: keys.bullPrefix });
}

describe('no step left behind', () => {
  it('a step whose job is removed from its queue ends WORKER_LOST (retriable), its followers see it; its run then cancels at once', async () => {
    const prefix = fleetPrefix();
    await slowReplica(prefix, 'p');
    const rt = await api(prefix, { fleet: { lostCheckMs: 100 } });
    const runId = await newRun(rt);
    const busy = await rt.submitStep(runId, llm(2_000));
    const waiting = await rt.submitStep(runId, llm(40));
    const queue = poolQueue(prefix, 'p');
    try {
      expect(await queue.remove(stepJobId(runId, null, waiting.step_id))).toBe(1);
    } finally {
      await queue.close();
    }
    // A follower, and the submission's own wait (what frees an HTTP slot), both end.
    const followed = await log(rt, waiting.step_id);
    expect(followed.map((e) => e.type)).toEqual(['error']);
    expect(followed[0]).toMatchObject({ code: 'WORKER_LOST', retriable: true });
    expect(await waiting.done).toBe('failed');
    expect(await rt.getStep(waiting.step_id)).toMatchObject({
      status: 'failed',
      error: { code: 'WORKER_LOST', retriable: true, details: { reason: 'job_missing' } },
    });
    const cancelling = await rt.cancelRun(runId);
    await cancelling.done;
    expect(await busy.done).toBe('cancelled');
    expect((await rt.getRun(runId))?.status).toBe('cancelled');
  });

  it('a step whose job failed (its data unreadable on the replica) ends WORKER_LOST instead of staying queued', async () => {
    const prefix = fleetPrefix();
    await slowReplica(prefix, 'p');
    const rt = await api(prefix, { fleet: { lostCheckMs: 100 } });
    const runId = await newRun(rt);
    const busy = await rt.submitStep(runId, llm(20));
    const waiting = await rt.submitStep(runId, llm(40));
    const queue = poolQueue(prefix, 'p');
    try {
      const job = await Job.fromId(queue, stepJobId(runId, null, waiting.step_id));
      await job?.updateData({ not: 'a step' });
    } finally {
      await queue.close();
    }
    expect(await busy.done).toBe('succeeded');
    expect(await waiting.done).toBe('failed');
    expect((await rt.getStep(waiting.step_id))?.error).toMatchObject({
      code: 'WORKER_LOST',
      details: { reason: 'job_failed' },
    });
  });
});

describe('no spliced output', () => {
  /** A replica whose engine's every answer is `word` many times over. */
  const saying = (prefix: string, word: string) =>
    replica(prefix, 'p', {
      concurrency: 1,
      runtime: {
        engines: [createScriptedEngine({ tokenDelayMs: 10, script: () => `${word} `.repeat(300) })],
      },
    });

  it('a step handed to a replica whose engine answers otherwise ends WORKER_LOST: the client never gets two attempts as one answer', async () => {
    const prefix = fleetPrefix();
    const first = await saying(prefix, 'alpha');
    const rt = await api(prefix);
    const runId = await newRun(rt);
    const step = await rt.submitStep(runId, llm(300));
    let seen = 0;
    for await (const e of rt.followStep(step.step_id))
      if (e.type === 'token' && ++seen === 3) break;
    await saying(prefix, 'beta');
    // The first replica stops at once: it hands the step back, and the other takes it.
    await first.stop(0);
    expect(await step.done).toBe('failed');
    const events = await log(rt, step.step_id);
    const tokens = events.flatMap((e) => (e.type === 'token' ? [e.t.trim()] : []));
    expect(new Set(tokens)).toEqual(new Set(['alpha']));
    expect(events.at(-1)).toMatchObject({
      type: 'error',
      code: 'WORKER_LOST',
      retriable: true,
      details: { reason: 'diverged' },
    });
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect((await rt.getStep(step.step_id))?.error).toMatchObject({ code: 'WORKER_LOST' });
  });

  it('a step handed to a replica that answers the same goes on where its log ends, each token once', async () => {
    const prefix = fleetPrefix();
    const first = await saying(prefix, 'same');
    const rt = await api(prefix);
    const runId = await newRun(rt);
    const step = await rt.submitStep(runId, llm(300));
    let seen = 0;
    for await (const e of rt.followStep(step.step_id))
      if (e.type === 'token' && ++seen === 3) break;
    await saying(prefix, 'same');
    await first.stop(0);
    expect(await step.done).toBe('succeeded');
    const events = await log(rt, step.step_id);
    expect(events.filter((e) => e.type === 'token')).toHaveLength(300);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  });
});
