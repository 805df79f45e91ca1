/**
 * The fleet under faults (issue 29), in one process over real Redis and BullMQ: budgets that
 * hold across replicas; cancels that land whatever the timing — recorded before they are
 * sent, read by the replica when it takes a step and while it runs — and steps whose job is
 * gone, which end `WORKER_LOST` instead of staying open for ever. A suite: run on one Redis
 * (fleet-faults.int.test.ts), on a Redis Cluster (fleet-faults-cluster.int.test.ts), and on
 * one Redis with the records in PostgreSQL (fleet-faults-postgres.int.test.ts).
 */
import { Job, Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { createLogger } from '../../src/observability/logger.js';
import { stepJobId, type StepJob } from '../../src/placement/fleet/fleet-jobs.js';
import { FleetKeys } from '../../src/placement/fleet/fleet-keys.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { PostgresRunStore, postgresStore } from '../../src/store/postgres/postgres-store.js';
import { redisStore } from '../../src/store/redis/redis-store.js';
import type { StepEvent } from '../../src/streams/events.js';
import { useInProcessFleets, type FleetBackend } from '../support/fleet-inprocess.js';
import { POSTGRES_URL } from '../support/postgres.js';

/** The suite on `backend`; see the module. */
export function describeFleetFaults(backend: FleetBackend): void {
  const fleets = useInProcessFleets(
    backend.cluster
      ? 'fleet-faults-cluster'
      : backend.postgres
        ? 'fleet-faults-pg'
        : 'fleet-faults',
    backend,
  );
  const { prefix: fleetPrefix, replica, api, redis, holds, plantHold, schema } = fleets;
  /** The fleet's records, read directly. */
  const records = (prefix: string) =>
    schema
      ? postgresStore({ connection: POSTGRES_URL, schema })
      : redisStore({ client: redis, prefix });

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

  /** A step of 2 000 tokens on a slow replica, running: its first tokens are in the log. */
  async function runningStep() {
    const prefix = fleetPrefix();
    await slowReplica(prefix, 'p');
    const rt = await api(prefix);
    const step = await rt.submitStep(await newRun(rt), llm(2_000));
    for await (const e of rt.followStep(step.step_id)) if (e.type === 'token') break;
    return { prefix, rt, step };
  }

  describe('budgets that hold across replicas', () => {
    it("eight parallel steps of 40 tokens out on two replicas never stream more than the run's 100 (POLICY-3000); the rest are refused BUDGET_EXCEEDED", async () => {
      const prefix = fleetPrefix();
      // Two replicas, each its own pool so that each surely runs four of the steps.
      for (const pool of ['p', 'q']) {
        await replica(prefix, pool, {
          concurrency: 4,
          runtime: { engines: [createScriptedEngine({ tokenDelayMs: 5 })] },
        });
      }
      const rt = await api(prefix);
      const { flow } = await rt.createFlow({ name: 'f' });
      const run = await rt.createRun(flow.flow_id, { seed: 1, budgets: { max_tokens_out: 100 } });
      const steps = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          rt.submitStep(run.run_id, { ...llm(40), placement: { pin: i % 2 ? 'p' : 'q' } }),
        ),
      );
      const ended = await Promise.all(steps.map((s) => s.done));
      const logs = await Promise.all(steps.map((s) => log(rt, s.step_id)));
      const tokens = logs.flat().filter((e) => e.type === 'token').length;
      expect(tokens).toBeGreaterThanOrEqual(80);
      expect(tokens).toBeLessThanOrEqual(100);
      expect(ended.filter((s) => s === 'succeeded').length).toBeGreaterThanOrEqual(2);
      for (const [i, status] of ended.entries()) {
        if (status === 'succeeded') continue;
        expect(logs[i]?.at(-1)).toMatchObject({ type: 'error', code: 'BUDGET_EXCEEDED' });
      }
      // The run's use is what streamed.
      expect((await rt.getRun(run.run_id))?.budget_usage.tokens_out).toBe(tokens);
      // No reservation is left behind once every step has ended.
      expect(await holds(prefix, run.run_id)).toEqual({});
    });
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
      const { prefix, rt, step } = await runningStep();
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
      const { prefix, rt, step } = await runningStep();
      await rt.cancelStep(step.step_id);
      expect(await redis.exists(new FleetKeys(prefix).cancelled(step.step_id))).toBe(1);
      expect(await step.done).toBe('cancelled');
    });
  });

  /**
   * A fleet with one slow replica of pool `p` taking one step at a time, an API looking for
   * lost steps every 100 ms, a run with a step of `busyTokens` holding the replica and one
   * waiting in the queue; `meddle` then does what it does to the waiting one's job.
   */
  async function waitingStep(
    busyTokens: number,
    meddle: (job: Job | undefined, prefix: string) => Promise<void>,
  ) {
    const prefix = fleetPrefix();
    await slowReplica(prefix, 'p');
    const rt = await api(prefix, { fleet: { lostCheckMs: 100 } });
    const runId = await newRun(rt);
    const busy = await rt.submitStep(runId, llm(busyTokens));
    const waiting = await rt.submitStep(runId, llm(40));
    const keys = new FleetKeys(prefix);
    const queue = new Queue(keys.queue('p'), {
      connection: redis,
      prefix: keys.bullPrefix,
    });
    try {
      await meddle(await Job.fromId(queue, stepJobId(runId, null, waiting.step_id)), prefix);
    } finally {
      await queue.close();
    }
    return { rt, runId, busy, waiting };
  }

  describe('no step left behind', () => {
    it("a step whose job is removed from its queue ends WORKER_LOST (retriable), its followers see it, its reservation leaves its run's ledger; its run then cancels at once", async () => {
      let prefixOf = '';
      const { rt, runId, busy, waiting } = await waitingStep(2_000, async (job, prefix) => {
        // As a replica that died holding a reservation for the step would have left it.
        const data = job?.data as StepJob;
        prefixOf = prefix;
        await plantHold(prefix, data.run_id, data.step_id, 'dead-attempt', 40);
        expect(await holds(prefix, data.run_id)).toEqual({ [data.step_id]: 'dead-attempt 40' });
        await job?.remove();
      });
      // A follower, and the submission's own wait (what frees an HTTP slot), both end.
      const followed = await log(rt, waiting.step_id);
      expect(followed.map((e) => e.type)).toEqual(['error']);
      expect(followed[0]).toMatchObject({ code: 'WORKER_LOST', retriable: true });
      expect(await waiting.done).toBe('failed');
      expect(await holds(prefixOf, runId)).toEqual({});
      expect(await rt.getStep(waiting.step_id)).toMatchObject({
        status: 'failed',
        error: { code: 'WORKER_LOST', retriable: true, details: { reason: 'job_missing' } },
      });
      const cancelling = await rt.cancelRun(runId);
      await cancelling.done;
      expect(await busy.done).toBe('cancelled');
      expect((await rt.getRun(runId))?.status).toBe('cancelled');
    });

    it("a step nobody waits on or follows, whose job is gone, is found by another API process's sweep of the open steps and ends WORKER_LOST", async () => {
      const prefix = fleetPrefix();
      await slowReplica(prefix, 'p');
      const submitter = await api(prefix);
      const runId = await newRun(submitter);
      await submitter.submitStep(runId, llm(2_000));
      const waiting = await submitter.submitStep(runId, llm(40));
      // The process that submitted it is gone: nobody watches the step now.
      await submitter.close();
      const keys = new FleetKeys(prefix);
      expect(await redis.zscore(keys.open, waiting.step_id)).not.toBeNull();
      const queue = new Queue(keys.queue('p'), {
        connection: redis,
        prefix: keys.bullPrefix,
      });
      await (await Job.fromId(queue, stepJobId(runId, null, waiting.step_id)))?.remove();
      await queue.close();
      const sweeper = await api(prefix, { fleet: { lostCheckMs: 100 } });
      let step = await sweeper.getStep(waiting.step_id);
      for (let i = 0; i < 100 && step?.status === 'queued'; i++) {
        await new Promise((r) => setTimeout(r, 50));
        step = await sweeper.getStep(waiting.step_id);
      }
      expect(step).toMatchObject({
        status: 'failed',
        error: { code: 'WORKER_LOST', details: { reason: 'job_missing' } },
      });
      // Its entry in the open steps goes once its end is written, not before it is read.
      await expect
        .poll(() => redis.zscore(keys.open, waiting.step_id), { timeout: 5_000 })
        .toBeNull();
    });

    it('a step whose job failed (its data unreadable on the replica) ends WORKER_LOST instead of staying queued', async () => {
      const { rt, busy, waiting } = await waitingStep(20, async (job) => {
        await job?.updateData({ not: 'a step' });
      });
      expect(await busy.done).toBe('succeeded');
      expect(await waiting.done).toBe('failed');
      expect((await rt.getStep(waiting.step_id))?.error).toMatchObject({
        code: 'WORKER_LOST',
        details: { reason: 'job_failed' },
      });
    });
  });

  if (backend.postgres) {
    describe('processes that do not share their records', () => {
      it('a replica keeping its records in Redis refuses the steps of an API process whose records are in PostgreSQL: it logs why, and the step ends WORKER_LOST without running', async () => {
        const prefix = fleetPrefix();
        const lines: string[] = [];
        const logger = createLogger({
          level: 'error',
          destination: {
            write: (line: string) => {
              lines.push(line);
            },
          },
        });
        await replica(prefix, 'p', { redisRecords: true, logger });
        const rt = await api(prefix, { fleet: { lostCheckMs: 100 } });
        const step = await rt.submitStep(await newRun(rt), llm(5));
        expect(await step.done).toBe('failed');
        expect(await rt.getStep(step.step_id)).toMatchObject({
          status: 'failed',
          error: { code: 'WORKER_LOST', details: { reason: 'job_failed' } },
        });
        expect(await log(rt, step.step_id)).toEqual([
          expect.objectContaining({ type: 'error', code: 'WORKER_LOST' }),
        ]);
        expect(lines.join('')).toMatch(
          /records are postgres:[0-9a-f-]{36}, this replica's are redis:axon-test/,
        );
      });

      it('a replica whose PostgreSQL does not answer does not start, and says why', async () => {
        await expect(
          replica(fleetPrefix(), 'p', {
            postgres: { url: 'postgres://postgres@127.0.0.1:1/postgres' },
          }),
        ).rejects.toThrow(/ECONNREFUSED 127\.0\.0\.1:1/);
      });
    });
  }

  describe("the job's lock is the step's fence", () => {
    it('a replica whose job another took from it mid-step writes nothing more of the step at once; the stall check gives the job back and the step goes on where its log ends, each seq once', async () => {
      const prefix = fleetPrefix();
      await replica(prefix, 'p', {
        concurrency: 1,
        lockMs: 2_000,
        stalledCheckMs: 200,
        runtime: {
          engines: [createScriptedEngine({ tokenDelayMs: 10, script: () => 'same '.repeat(200) })],
        },
      });
      const rt = await api(prefix);
      const runId = await newRun(rt);
      const step = await rt.submitStep(runId, llm(200));
      let seen = 0;
      for await (const e of rt.followStep(step.step_id))
        if (e.type === 'token' && ++seen === 3) break;
      // Another holds the lock now (as a replica that took the job over would), for 500 ms.
      const lock = new FleetKeys(prefix).jobLock('p', stepJobId(runId, null, step.step_id));
      await redis.set(lock, 'another-replica:1', 'PX', 500);
      const store = records(prefix);
      if (store instanceof PostgresRunStore) {
        // With the records in PostgreSQL the taking replica also takes its turn there, with
        // the job's start count BullMQ raised when it handed it the job.
        const starts = await redis.hincrby(lock.slice(0, -':lock'.length), 'ats', 1);
        await store.takeTurn(step.step_id, starts, 'another-replica:1');
      }
      const logged = (await store.readEvents(step.step_id)).length;
      expect(logged).toBeGreaterThanOrEqual(4);
      // 150 ms: fifteen tokens of its engine, none of which reaches the log.
      await new Promise((r) => setTimeout(r, 150));
      expect((await store.readEvents(step.step_id)).length).toBe(logged);
      expect(logged).toBeLessThan(100);
      // The lock lapses; the stall check hands the job back, and the step goes on.
      expect(await step.done).toBe('succeeded');
      const events = await log(rt, step.step_id);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      expect(events.filter((e) => e.type === 'token')).toHaveLength(200);
      await store.close();
    });
  });

  describe('no spliced output', () => {
    /** A replica whose engine's every answer is `word` many times over. */
    const saying = (prefix: string, word: string) =>
      replica(prefix, 'p', {
        concurrency: 1,
        runtime: {
          engines: [
            createScriptedEngine({ tokenDelayMs: 10, script: () => `${word} `.repeat(300) }),
          ],
        },
      });

    /**
     * A step of 300 tokens started on a replica answering `first`, handed over (that replica
     * stops at once) after 3 tokens to one answering `second`: how it ended, and its log.
     */
    async function handedOver(first: string, second: string) {
      const prefix = fleetPrefix();
      const one = await saying(prefix, first);
      const rt = await api(prefix);
      const step = await rt.submitStep(await newRun(rt), llm(300));
      let seen = 0;
      for await (const e of rt.followStep(step.step_id))
        if (e.type === 'token' && ++seen === 3) break;
      await saying(prefix, second);
      await one.stop(0);
      const status = await step.done;
      const events = await log(rt, step.step_id);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      return { prefix, rt, step, status, events };
    }

    it('a step handed to a replica whose engine answers otherwise ends WORKER_LOST: the client never gets two attempts as one answer', async () => {
      const { rt, step, status, events } = await handedOver('alpha', 'beta');
      expect(status).toBe('failed');
      const tokens = events.flatMap((e) => (e.type === 'token' ? [e.t.trim()] : []));
      expect(new Set(tokens)).toEqual(new Set(['alpha']));
      expect(events.at(-1)).toMatchObject({
        type: 'error',
        code: 'WORKER_LOST',
        retriable: true,
        details: { reason: 'diverged' },
      });
      expect((await rt.getStep(step.step_id))?.error).toMatchObject({ code: 'WORKER_LOST' });
    });

    it('a step handed to a replica that answers the same goes on where its log ends, each token once', async () => {
      const { prefix, rt, step, status, events } = await handedOver('same', 'same');
      expect(status).toBe('succeeded');
      expect(events.filter((e) => e.type === 'token')).toHaveLength(300);
      // The job's lock was each turn's claim and fence, and the job's finish took it: no key
      // of a turn is left behind.
      const record = await rt.getStep(step.step_id);
      if (!record) throw new Error('the step has no record');
      const jobId = stepJobId(record.run_id, record.client_token, step.step_id);
      const lock = new FleetKeys(prefix).jobLock('p', jobId);
      for (let i = 0; i < 100 && (await redis.exists(lock)) === 1; i++) {
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(await redis.exists(lock)).toBe(0);
    });
  });
}
