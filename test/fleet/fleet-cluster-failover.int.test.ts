/**
 * A Redis Cluster master failed over under a running fleet: a cluster of this test's own
 * (three masters, each with a replica, a node taken for failed after 1 s), its master for the
 * fleet's slot killed (SIGKILL) while a step streams and others are submitted. The replica is
 * promoted; the worker and the API follow the slots to it by themselves. Every step a
 * submission accepted ends — none is left running — and each log is whole: `seq` 1..n once
 * each, never spliced (Redis replicates asynchronously, so a master may die holding writes
 * its replica never got: a step whose log lost its tail ends `failed`, its next append
 * refused). Steps submitted after the failover run. A submission made while the slot has no
 * master is refused with an error, not left hanging.
 */
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { FleetWorker } from '../../src/fleet/fleet-worker.js';
import { createLogger } from '../../src/observability/logger.js';
import type { SubmittedStep } from '../../src/steps/step-submission.js';
import { redisStore } from '../../src/store/redis/redis-store.js';
import type { StepStatus } from '../../src/store/records.js';
import { startThrowawayCluster, type ThrowawayCluster } from '../support/redis-cluster-setup.js';
import { quietRuntime } from '../support/runtime.js';

let cluster: ThrowawayCluster | null = null;
beforeAll(async () => {
  const started = await startThrowawayCluster(1, 1_000);
  if ('why' in started) throw new Error(`no cluster for the failover test: ${started.why}`);
  cluster = started;
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

/** The port of the master serving `key`'s slot, as the cluster says now. */
async function masterOf(nodes: string, key: string): Promise<number> {
  // Every node as a startup node: the first may be the one killed.
  const admin = new Cluster(
    nodes.split(',').map((n) => ({ host: n.split(':')[0] ?? '', port: Number(n.split(':')[1]) })),
  );
  admin.on('error', () => undefined);
  try {
    const slot = await admin.cluster('KEYSLOT', key);
    const lines = String(await admin.cluster('NODES')).split('\n');
    for (const line of lines) {
      const parts = line.split(' ');
      if (!(parts[2] ?? '').includes('master') || (parts[2] ?? '').includes('fail')) continue;
      for (const range of parts.slice(8)) {
        const [from = NaN, to = from] = range.split('-').map(Number);
        if (slot >= from && slot <= to) return Number((parts[1] ?? '').split(/[:@]/)[1]);
      }
    }
  } finally {
    admin.disconnect();
  }
  throw new Error(`no master serves ${key}`);
}

/** `promise`'s value, or `'timeout'` after `ms`. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
  return Promise.race([
    promise,
    new Promise<'timeout'>((resolve) =>
      setTimeout(() => {
        resolve('timeout');
      }, ms),
    ),
  ]);
}

describe('a Redis Cluster master failed over under a running fleet', () => {
  it('the promoted replica takes over: every accepted step ends with a whole log, new steps run', async () => {
    const c = cluster as ThrowawayCluster;
    const prefix = `{axon-test:failover:${process.pid}}:`;
    const quiet = createLogger({ level: 'silent' });
    const worker = await FleetWorker.start({
      pool: 'p',
      cluster: c.nodes,
      prefix,
      heartbeatMs: 200,
      ttlMs: 1_000,
      logger: quiet,
      runtime: { engines: [createScriptedEngine({ tokenDelayMs: 10 })] },
    });
    const rt = quietRuntime({
      store: redisStore({ cluster: c.nodes, prefix }),
      fleet: { cluster: c.nodes, prefix, refreshMs: 100 },
    });
    try {
      await rt.refreshPools();
      const { flow } = await rt.createFlow({ name: 'failover' });
      const run = await rt.createRun(flow.flow_id, {
        seed: 5,
        pool_policy: { placement: { pin: 'p' } },
      });
      const gate = { type: 'gate_eval', input: { fact_type: 'none', min_count: 0 } };
      const streaming = await rt.submitStep(run.run_id, {
        type: 'llm_call',
        input: {
          messages: [{ role: 'user', content: 'across a failover' }],
          params: { max_tokens: 200 },
        },
      });
      for await (const e of rt.followStep(streaming.step_id)) if (e.type === 'token') break;

      const accepted: SubmittedStep[] = [streaming];
      let refused = 0;
      const killedAt = Date.now();
      const port = await masterOf(c.nodes, `${prefix}x`);
      c.processes.get(port)?.kill('SIGKILL');
      // Submissions go on until a batch after the failover runs whole (30 s at most).
      let recovered = false;
      while (!recovered && Date.now() - killedAt < 30_000) {
        try {
          const batch = await Promise.all(
            Array.from({ length: 4 }, () => rt.submitStep(run.run_id, gate)),
          );
          accepted.push(...batch);
          const ends = await within(Promise.all(batch.map((s) => s.done)), 15_000);
          recovered = ends !== 'timeout' && ends.every((s) => s === 'succeeded');
        } catch (err) {
          // While the slot has no master: ioredis gives up after its redirections.
          expect(err).toBeInstanceOf(Error);
          refused++;
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      }
      // `refused` says what the failover cost, in the failure's message.
      expect({ recovered, refused }).toMatchObject({ recovered: true });
      expect(await masterOf(c.nodes, `${prefix}x`)).not.toBe(port);

      // Every accepted step has ended; none is left running.
      const statuses = await within(Promise.all(accepted.map((s) => s.done)), 30_000);
      expect(statuses).not.toBe('timeout');
      for (const s of accepted) {
        const step = await rt.getStep(s.step_id);
        expect(['succeeded', 'failed'] as (StepStatus | undefined)[]).toContain(step?.status);
        const events = await rt.readStepEvents(s.step_id);
        expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
        if (step?.status === 'succeeded') expect(events.at(-1)?.type).toBe('end');
      }
      const streamed = await rt.readStepEvents(streaming.step_id);
      const tokens = streamed.flatMap((e) => (e.type === 'token' ? [e.i] : []));
      expect(tokens).toEqual([...Array(tokens.length).keys()]);
    } finally {
      await rt.close();
      await worker.stop(0);
    }
  }, 90_000);
});
