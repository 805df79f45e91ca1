/**
 * A step whose replicas die holding it until BullMQ gives up on its job (issue 29), as an
 * operator's fleet meets it: `axon serve --redis` and five `axon worker` processes of one
 * pool; the replica holding the step is killed (SIGKILL) four times. BullMQ then fails the
 * job for stalling, and the step ends `failed` with a typed, retriable error in its log and
 * its record instead of staying `running` for ever: its stream ends, and its run's cancel
 * ends at once.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { FleetKeys } from '../../src/placement/fleet/fleet-keys.js';
import { FAST_REPLICA_FLAGS, useTestFleet } from '../support/fleet.js';
import { redisUrl } from '../support/redis.js';
import { parseSse, request } from '../support/server.js';

const fleet = useTestFleet('fleet-stalls');
const redis = new Redis(redisUrl());
afterAll(async () => {
  await redis.quit();
});

describe('a step whose job stalls out', () => {
  it('ends failed with a retriable WORKER_LOST after its fourth replica dies holding it; its stream ends with the error and its run cancels at once', async () => {
    const env = { AXON_SCRIPTED_TOKEN_MS: '20' };
    const [api, ...workers] = await Promise.all([
      fleet.api(),
      ...Array.from({ length: 5 }, () => fleet.worker('p', [], FAST_REPLICA_FLAGS, env)),
    ]);
    const call = async (method: string, path: string, body?: unknown) =>
      (await request(api.url, method, path, body)).body as Record<string, unknown>;
    for (let i = 0; ; i++) {
      const pools = (await call('GET', '/v1/pools')) as unknown as { replicas: unknown[] }[];
      if (pools[0]?.replicas.length === 5) break;
      if (i > 200) throw new Error('the five replicas never showed up');
      await new Promise((r) => setTimeout(r, 50));
    }
    const { flow_id } = await call('POST', '/v1/flows', { name: 'stalls' });
    const { run_id } = await call('POST', `/v1/flows/${String(flow_id)}/runs`, { seed: 2 });
    const { step_id } = await call('POST', `/v1/runs/${String(run_id)}/steps`, {
      type: 'llm_call',
      input: { messages: [{ role: 'user', content: 'go' }], params: { max_tokens: 5_000 } },
    });
    // Its job (no client token: the job's id is the step's): it names the replica that took
    // it last, and its lock is there while that replica's turn is the current one.
    const keys = new FleetKeys(fleet.prefix);
    const jobKey = `${keys.bullPrefix}:${keys.queue('p')}:${String(step_id)}`;
    const lock = keys.jobLock('p', String(step_id));
    // Four times: wait for a replica to take the step (its job names it, locked), kill it.
    const killed = new Set<string>();
    for (let k = 0; k < 4; k++) {
      let holder: (typeof workers)[number] | undefined;
      for (let i = 0; i < 400 && !holder; i++) {
        const [taker, locked] = await Promise.all([redis.hget(jobKey, 'pb'), redis.exists(lock)]);
        holder = workers.find((w) => !killed.has(w.replicaId) && locked && taker === w.replicaId);
        if (!holder) await new Promise((r) => setTimeout(r, 25));
      }
      expect(holder).toBeDefined();
      holder?.child.kill('SIGKILL');
      if (holder) killed.add(holder.replicaId);
    }
    // The last replica's stall check fails the job; the step ends instead of staying open.
    const res = await fetch(`${api.url}/v1/steps/${String(step_id)}/stream`);
    const frames = parseSse(await res.text()).frames;
    expect(frames.at(-1)).toMatchObject({
      event: 'error',
      data: { code: 'WORKER_LOST', retriable: true },
    });
    expect(await call('GET', `/v1/steps/${String(step_id)}`)).toMatchObject({
      status: 'failed',
      error: { code: 'WORKER_LOST', retriable: true, details: { reason: 'job_failed' } },
    });
    const cancel = await request(api.url, 'POST', `/v1/runs/${String(run_id)}/cancel`, {});
    expect(cancel.status).toBeLessThan(300);
    for (let i = 0; i < 100; i++) {
      if ((await call('GET', `/v1/runs/${String(run_id)}`)).status === 'cancelled') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect((await call('GET', `/v1/runs/${String(run_id)}`)).status).toBe('cancelled');
  });
});
