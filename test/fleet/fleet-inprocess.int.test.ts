/**
 * The fleet in one process: an API runtime with `fleet: { redis }` and replicas
 * (`FleetWorker`) on the same Redis, each test under a prefix of its own. Placement
 * (PLACE-5001) with engines and capabilities, cancels of queued and running steps, a full
 * queue (429 `QUEUE_FULL` over HTTP), trace context travelling with the job, per-pool
 * metrics, and refused options.
 */
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { redisStore } from '../../src/store/redis/redis-store.js';
import { describe, expect, it } from 'vitest';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { FleetWorker, type FleetWorkerOptions } from '../../src/fleet/fleet-worker.js';
import { createLogger } from '../../src/observability/logger.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { createServer } from '../../src/server/create-server.js';
import type { StepEvent } from '../../src/streams/events.js';
import { Queue } from 'bullmq';
import { useInProcessFleets } from '../support/fleet-inprocess.js';
import { redisUrl } from '../support/redis.js';
import { makeStep } from '../support/records.js';
import { quietRuntime, until } from '../support/runtime.js';

const { prefix: fleetPrefix, replica, api } = useInProcessFleets('fleet-inproc');

const llm = (tokens: number, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  type: 'llm_call',
  input: { messages: [{ role: 'user', content: 'hi' }], params: { max_tokens: tokens }, ...extra },
});

async function newRun(rt: Runtime, poolPolicy: unknown = {}, seed = 3): Promise<string> {
  const { flow } = await rt.createFlow({ name: 'f' });
  return (await rt.createRun(flow.flow_id, { seed, pool_policy: poolPolicy })).run_id;
}

async function log(rt: Runtime, stepId: string): Promise<StepEvent[]> {
  const events: StepEvent[] = [];
  for await (const e of rt.followStep(stepId)) events.push(e);
  return events;
}

/** A replica whose scripted engine is slow: its steps run long enough to be caught. */
const slowEngine = (): Partial<FleetWorkerOptions> => ({
  runtime: { engines: [createScriptedEngine({ tokenDelayMs: 20 })] },
});

describe('a fleet in one process', () => {
  it('runs a submitted step on the pool its run pins, and the API follows it to its end', async () => {
    const prefix = fleetPrefix();
    const gpu = await replica(prefix, 'gpu', { tags: ['gpu', 'a100'] });
    await replica(prefix, 'cpu', { tags: ['cpu'] });
    const rt = await api(prefix);
    expect(rt.listPools().map((p) => p.pool_id)).toEqual(['cpu', 'gpu']);
    const runId = await newRun(rt, { placement: { pin: 'gpu' } });
    const step = await rt.submitStep(runId, llm(5));
    expect(step).toMatchObject({ status: 'queued', created: true });
    const events = await log(rt, step.step_id);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events[0]).toMatchObject({ type: 'started', pool_id: 'gpu', replica_id: gpu.replicaId });
    expect(events.filter((e) => e.type === 'token')).toHaveLength(5);
    expect(events.at(-1)?.type).toBe('end');
    expect(await step.done).toBe('succeeded');
    // Its end is on the fleet's record, not in this process: `ended` says read it.
    expect(await step.ended).toBeNull();
    expect(await rt.getStep(step.step_id)).toMatchObject({
      status: 'succeeded',
      placement: 'pool',
      placement_decision: { pool_id: 'gpu', policy: 'pin' },
    });
    await until(() => gpu.active === 0);
  });

  it('auto placement takes the pool with the most free slots, then the fewest active, then the id (PLACE-5001)', async () => {
    const prefix = fleetPrefix();
    await replica(prefix, 'small', { concurrency: 1 });
    await replica(prefix, 'big', { concurrency: 8 });
    const rt = await api(prefix);
    const runId = await newRun(rt);
    const step = await rt.submitStep(runId, llm(1));
    expect(await step.done).toBe('succeeded');
    expect((await rt.getStep(step.step_id))?.placement_decision).toMatchObject({
      pool_id: 'big',
      policy: 'auto',
      reason: 'auto; most free capacity of 2 feasible pools',
    });
  });

  it('makes a run that asks nothing of its pools with no pool live: its steps placed here run, one for the fleet is POOL_UNAVAILABLE; a pin nobody serves is refused at once', async () => {
    const prefix = fleetPrefix();
    const rt = await api(prefix);
    expect(rt.listPools()).toEqual([]);
    const runId = await newRun(rt);
    const here = await rt.submitStep(runId, llm(2), { placement: 'here' });
    expect(await here.done).toBe('succeeded');
    expect((await here.ended)?.status).toBe('succeeded');
    expect((await rt.getStep(here.step_id))?.placement).toBe('inline');
    await expect(rt.submitStep(runId, llm(2))).rejects.toMatchObject({
      code: 'POOL_UNAVAILABLE',
    });
    await expect(newRun(rt, { placement: { pin: 'gpu' } })).rejects.toMatchObject({
      code: 'POOL_UNAVAILABLE',
    });
    await expect(newRun(rt, { requires: { vram_mb: 1 } })).rejects.toMatchObject({
      code: 'POOL_UNAVAILABLE',
    });
  });

  it('places a step only where its engine is served and its run’s requirements are met', async () => {
    const prefix = fleetPrefix();
    await replica(prefix, 'plain', { capabilities: { vram_mb: 8000 } });
    await replica(prefix, 'fast', {
      capabilities: { vram_mb: 80_000, features: ['fp8'] },
      runtime: { engines: [createScriptedEngine({ name: 'big-model', tokenDelayMs: 0 })] },
    });
    const lines: string[] = [];
    const rt = await api(prefix, {
      logger: createLogger({ level: 'warn', destination: { write: (l: string) => lines.push(l) } }),
    });
    // The engine only `fast` serves.
    const a = await rt.submitStep(await newRun(rt), llm(2, { engine: 'big-model' }));
    expect(await a.done).toBe('succeeded');
    expect((await rt.getStep(a.step_id))?.placement_decision?.pool_id).toBe('fast');
    // Capabilities only `fast` has.
    const needy = await newRun(rt, { requires: { vram_mb: 40_000, features: ['fp8'] } });
    const b = await rt.submitStep(needy, llm(2));
    expect(await b.done).toBe('succeeded');
    expect((await rt.getStep(b.step_id))?.placement_decision?.pool_id).toBe('fast');
    // Capabilities no pool has: refused when the run is made, naming each pool's lack.
    await expect(newRun(rt, { requires: { features: ['tpu'] } })).rejects.toMatchObject({
      code: 'POOL_UNAVAILABLE',
      message: expect.stringMatching(/fast: no feature tpu; plain: no feature tpu/) as string,
    });
    // An engine no pool serves: the submission is refused, nothing is queued.
    await expect(
      rt.submitStep(await newRun(rt), llm(2, { engine: 'nowhere' })),
    ).rejects.toMatchObject({ code: 'POOL_UNAVAILABLE' });
    // The log says why, for the operator.
    const placed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(placed).toContainEqual(
      expect.objectContaining({
        msg: 'a step could not be placed on a pool',
        engine: 'nowhere',
        err: expect.objectContaining({
          message: expect.stringMatching(/nowhere/) as string,
        }) as unknown,
      }),
    );
  });

  it('cancels a queued step (off its queue, never started) and a running one (its replica ends it)', async () => {
    const prefix = fleetPrefix();
    await replica(prefix, 'one', { concurrency: 1, ...slowEngine() });
    const rt = await api(prefix);
    const runId = await newRun(rt);
    const running = await rt.submitStep(runId, llm(500));
    const queued = await rt.submitStep(runId, llm(5));
    // The first has started; the second waits behind it.
    for await (const e of rt.followStep(running.step_id)) if (e.type === 'token') break;
    expect((await rt.getStep(queued.step_id))?.status).toBe('queued');
    await rt.cancelStep(queued.step_id);
    expect(await rt.getStep(queued.step_id)).toMatchObject({
      status: 'cancelled',
      error: { code: 'CANCELLED' },
    });
    await rt.cancelStep(running.step_id);
    const events = await log(rt, running.step_id);
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'CANCELLED' });
    expect(events.filter((e) => e.type === 'token').length).toBeLessThan(500);
    expect(await running.done).toBe('cancelled');
  });

  it('cancel_on_disconnect: the last follower of a step running on a pool going away cancels it there', async () => {
    const prefix = fleetPrefix();
    await replica(prefix, 'one', slowEngine());
    const rt = await api(prefix);
    const { flow } = await rt.createFlow({ name: 'f' });
    const run = await rt.createRun(flow.flow_id, { cancel_on_disconnect: true });
    const step = await rt.submitStep(run.run_id, llm(500));
    const gone = new AbortController();
    for await (const e of rt.followStep(step.step_id, { signal: gone.signal })) {
      if (e.type === 'token') break;
    }
    // A follow that ended by `break` is no disconnect; one that aborts is.
    const follow = rt.followStep(step.step_id, { signal: gone.signal });
    const first = follow.next();
    gone.abort();
    await first.catch(() => undefined);
    expect(await step.done).toBe('cancelled');
    const events = await log(rt, step.step_id);
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'CANCELLED' });
  });

  it("a step submitted with placement 'here' runs in the API process, not on a pool; one with { pool } goes to that pool over the run's policy", async () => {
    const prefix = fleetPrefix();
    const gpu = await replica(prefix, 'gpu', { tags: ['gpu'] });
    await replica(prefix, 'cpu');
    const rt = await api(prefix, { engines: [createScriptedEngine({ tokenDelayMs: 20 })] });
    const runId = await newRun(rt, { placement: { pin: 'cpu' } });
    const here = await rt.submitStep(runId, llm(500), { placement: 'here' });
    expect(here.status).toBe('running');
    const record = await rt.getStep(here.step_id);
    expect(record?.placement).toBe('inline');
    expect(rt.poolQueues().every((q) => q.figures.waiting === 0)).toBe(true);
    // Cancelling the run ends the step here (it is not waited for on the fleet).
    const cancelling = await rt.cancelRun(runId);
    await cancelling.done;
    expect(await here.done).toBe('cancelled');
    expect((await rt.getRun(runId))?.status).toBe('cancelled');
    const pinned = await newRun(rt, { placement: { pin: 'cpu' } });
    const onGpu = await rt.submitStep(pinned, llm(3), { placement: { pool: 'gpu' } });
    const events = await log(rt, onGpu.step_id);
    expect(events[0]).toMatchObject({ type: 'started', pool_id: 'gpu', replica_id: gpu.replicaId });
    expect(await rt.getStep(onGpu.step_id)).toMatchObject({
      placement: 'pool',
      placement_decision: { pool_id: 'gpu', policy: 'pin' },
    });
    await expect(
      rt.submitStep(pinned, llm(3), { placement: { pool: 'tpu' } }),
    ).rejects.toMatchObject({ code: 'POOL_UNAVAILABLE' });
    // The body's own placement (API.md) does the same, in each of its forms.
    for (const placement of [{ pin: 'gpu' }, { affinity: { tags: ['gpu'] } }]) {
      const own = await rt.submitStep(pinned, { ...llm(3), placement });
      expect((await log(rt, own.step_id))[0]).toMatchObject({ type: 'started', pool_id: 'gpu' });
      expect((await rt.getStep(own.step_id))?.placement_decision).toMatchObject({
        pool_id: 'gpu',
        policy: 'pin' in placement ? 'pin' : 'affinity',
      });
    }
    await expect(
      rt.submitStep(pinned, { ...llm(3), placement: { pin: 'tpu' } }),
    ).rejects.toMatchObject({ code: 'POOL_UNAVAILABLE' });
    await expect(rt.submitStep(pinned, llm(3), { placement: 'there' as 'here' })).rejects.toThrow(
      /placement must be "here" or \{ pool: "<pool id>" \}/,
    );
  });

  it('counts a run’s steps per minute in the fleet’s Redis, across API processes', async () => {
    const prefix = fleetPrefix();
    await replica(prefix, 'one');
    const a = await api(prefix);
    const b = await api(prefix);
    const { flow } = await a.createFlow({ name: 'f' });
    const run = await a.createRun(flow.flow_id, { policy: { steps_per_minute: 3 } });
    await a.submitStep(run.run_id, llm(1));
    await b.submitStep(run.run_id, llm(1));
    await a.submitStep(run.run_id, llm(1));
    await expect(b.submitStep(run.run_id, llm(1))).rejects.toMatchObject({ code: 'RATE_LIMITED' });
  });

  it('cancels a run whose steps run on the fleet: each ends, then the run is cancelled', async () => {
    const prefix = fleetPrefix();
    await replica(prefix, 'one', { concurrency: 2, ...slowEngine() });
    const rt = await api(prefix);
    const runId = await newRun(rt);
    const steps = await Promise.all([1, 2, 3].map(() => rt.submitStep(runId, llm(500))));
    await expect(rt.completeRun(runId)).rejects.toMatchObject({ code: 'CONFLICT' });
    const { done } = await rt.cancelRun(runId);
    await done;
    expect((await rt.getRun(runId))?.status).toBe('cancelled');
    for (const s of steps) expect((await rt.getStep(s.step_id))?.status).toBe('cancelled');
  });

  it('refuses a submission with 429 QUEUE_FULL once its pool has its most steps waiting', async () => {
    const prefix = fleetPrefix();
    const one = await replica(prefix, 'one', { concurrency: 1, ...slowEngine() });
    const rt = await api(prefix, { fleet: { maxQueued: 2 } });
    const server = await createServer(rt, { port: 0, drainMs: 100 });
    try {
      const post = async (path: string, body: unknown) => {
        const res = await fetch(`${server.url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      };
      const flow = await post('/v1/flows', { name: 'f' });
      const run = await post(`/v1/flows/${flow.body['flow_id'] as string}/runs`, {});
      const path = `/v1/runs/${run.body['run_id'] as string}/steps`;
      // One runs, two wait: the queue is full.
      const first = await post(path, llm(500));
      await until(() => one.active === 1, 100_000);
      // The depth is judged on the pools' table (read every refreshMs): read it now.
      await rt.refreshPools();
      expect((await post(path, llm(1))).status).toBe(201);
      expect((await post(path, llm(1))).status).toBe(201);
      const refused = await post(path, { ...llm(1), client_token: 'later' });
      expect(refused.status).toBe(429);
      expect(refused.body['error']).toMatchObject({
        code: 'QUEUE_FULL',
        details: { pool_id: 'one', waiting: 2, max_queued: 2 },
      });
      // The pool's figures, as last read from Redis: one active, two waiting.
      const metrics = async (want: RegExp): Promise<string> => {
        let text = '';
        for (let i = 0; i < 100 && !want.test(text); i++) {
          if (i > 0) await new Promise((r) => setTimeout(r, 50));
          text = await (await fetch(`${server.url}/metrics`)).text();
        }
        return text;
      };
      const busy = await metrics(/axon_pool_jobs\{pool="one",state="waiting"\} 2/);
      expect(busy).toMatch(/axon_pool_jobs\{pool="one",state="waiting"\} 2/);
      expect(busy).toMatch(/axon_pool_jobs\{pool="one",state="active"\} 1/);
      // Nothing of the refused one was kept: its token goes through once there is room.
      await rt.cancelStep(first.body['step_id'] as string);
      const idle = await metrics(/axon_pool_jobs\{pool="one",state="completed"\} 3/);
      expect(idle).toMatch(/axon_pool_jobs\{pool="one",state="completed"\} 3/);
      expect(idle).toMatch(/axon_pool_jobs\{pool="one",state="stalled"\} 0/);
      expect((await post(path, { ...llm(1), client_token: 'later' })).status).toBe(201);
    } finally {
      await server.close();
    }
  });

  it('carries the submitter’s trace context in the job: the replica’s spans join its trace', async () => {
    const prefix = fleetPrefix();
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    await replica(prefix, 'traced', { runtime: { tracer: provider.getTracer('axon') } });
    const rt = await api(prefix);
    const traceId = 'ab'.repeat(16);
    const parentSpan = 'cd'.repeat(8);
    const step = await rt.submitStep(await newRun(rt), llm(2), {
      traceparent: `00-${traceId}-${parentSpan}-01`,
    });
    expect(await step.done).toBe('succeeded');
    // The step's end is said in the call that writes it; the replica ends its span just
    // after, when that call has answered.
    await until(() =>
      exporter.getFinishedSpans().some((s) => s.parentSpanContext?.spanId === parentSpan),
    ).catch(() => undefined);
    await provider.forceFlush();
    const spans = exporter.getFinishedSpans();
    expect(spans.length).toBeGreaterThan(0);
    expect(spans.every((s) => s.spanContext().traceId === traceId)).toBe(true);
    const root = spans.find((s) => s.parentSpanContext?.spanId === parentSpan);
    expect(root).toBeDefined();
  });

  it('a job that fails on every try ends its step failed WORKER_RESET, never left open', async () => {
    const prefix = fleetPrefix();
    await replica(prefix, 'p');
    const rt = await api(prefix);
    const runId = await newRun(rt);
    // A queued step whose job names an agent no replica has: each try fails.
    const step = makeStep(runId, { status: 'queued', started_at: null, client_token: null });
    await rt.store.createStep(step);
    const queue = new Queue('pool.p', { connection: { url: redisUrl() }, prefix: `${prefix}bull` });
    try {
      await queue.add(
        'step',
        {
          step_id: step.step_id,
          run_id: runId,
          pool_id: 'p',
          body: { type: 'agent', input: { agent: 'nobody', message: 'x' } },
          traceparent: null,
          queued_at: Date.now(),
        },
        { attempts: 2, backoff: { type: 'fixed', delay: 50 } },
      );
      let record = await rt.getStep(step.step_id);
      for (let i = 0; i < 100 && record?.status !== 'failed'; i++) {
        await new Promise((r) => setTimeout(r, 50));
        record = await rt.getStep(step.step_id);
      }
      expect(record).toMatchObject({
        status: 'failed',
        error: { code: 'WORKER_RESET', message: expect.stringMatching(/agent/) as string },
      });
    } finally {
      await queue.close();
    }
  });

  it('refuses fleet and replica options it does not have', async () => {
    expect(() => quietRuntime({ fleet: { redis: redisUrl(), probe: 1 } as never })).toThrow(
      /fleet has no option probe/,
    );
    expect(() => quietRuntime({ fleet: { refreshMs: 0 } })).toThrow(
      /refreshMs must be an integer >= 1/,
    );
    expect(() => quietRuntime({ fleet: { lostCheckMs: 1.5 } })).toThrow(
      /fleet\.lostCheckMs must be an integer >= 1, got 1\.5/,
    );
    // The store's prefix and the fleet's differ: the workers would not see its runs.
    const store = redisStore({ url: redisUrl(), prefix: 'axon-other:' });
    expect(() => quietRuntime({ store, fleet: { redis: redisUrl() } })).toThrow(
      /the Redis store's prefix \("axon-other:"\) and the fleet's \("axon:"\) must be the same/,
    );
    await store.close();
    await expect(FleetWorker.start({ pool: 'bad id!' })).rejects.toThrow(
      /fleet worker: pool must be/,
    );
    await expect(FleetWorker.start({ pool: 'p', heartbeatMs: 500, ttlMs: 400 })).rejects.toThrow(
      /ttlMs \(400\) must be longer than heartbeatMs \(500\)/,
    );
  });
});
