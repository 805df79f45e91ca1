import { afterEach, describe, expect, it } from 'vitest';
import { defineAgent } from '../../../src/actors/define-agent.js';
import { STATS_BATCH_MS } from '../../../src/actors/agent-stats-batch.js';
import { SimulatedClock } from '../../../src/context/clock.js';
import type { Runtime, RuntimeOptions } from '../../../src/runtime/runtime.js';
import { WorkerResetError } from '../../../src/errors/worker-reset-error.js';
import { configuredPolicy } from '../../../src/policy/configured-policy.js';
import { MemoryRunStore } from '../../../src/store/memory/memory-store.js';
import type { StepEvent } from '../../../src/streams/events.js';
import { addTool } from '../../../examples/tools/add.js';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { PROBE } from '../../fixtures/worker-agents.js';
import { quietRuntime } from '../../support/runtime.js';

const fixtures = new URL('../../fixtures/worker-agents.ts', import.meta.url).href;

function workerAgent(name: string, exported: string, timeoutMs?: number) {
  return defineAgent({
    name,
    placement: 'worker',
    module: fixtures,
    export: exported,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  });
}

const runtimes: Runtime[] = [];
function runtime(options: RuntimeOptions = {}): Runtime {
  const rt = quietRuntime({ workers: { maxThreads: 2, cancelGraceMs: 200 }, ...options });
  runtimes.push(rt);
  return rt;
}

afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((rt) => rt.close()));
});

function probe(): { readonly buffer: SharedArrayBuffer; readonly view: Int32Array } {
  const buffer = new SharedArrayBuffer(16);
  return { buffer, view: new Int32Array(buffer) };
}

async function tokensOf(rt: Runtime, stepId: string): Promise<string[]> {
  return (await rt.store.readEvents(stepId)).flatMap((e) => (e.type === 'token' ? [e.t] : []));
}

describe('worker placement', () => {
  it('runs a handler named by module and export on a worker thread, with the step context rebuilt', async () => {
    const rt = runtime({ agents: [workerAgent('echo', 'echo')] });
    const r = await rt.invoke<Record<string, unknown>>('echo', 'hello');
    expect(r.status).toBe('success');
    expect(r.output).toMatchObject({ echo: 'hello', runId: r.runId, stepId: r.stepId, depth: 1 });
    expect((await rt.store.getStep(r.stepId))?.placement).toBe('worker');
    const run = await rt.getRun(r.runId);
    expect(r.output?.['traceId']).toBe(run?.trace_id);
  });

  it('accepts an export that is an agent definition', async () => {
    const rt = runtime({ agents: [workerAgent('def', 'echoAgent')] });
    expect((await rt.invoke('def', 'x')).output).toBe('def:x');
  });

  it('streams a generator’s tokens and events to the host, in order, all logged', async () => {
    const rt = runtime({ agents: [workerAgent('streamer', 'streamer')] });
    const stream = rt.stream('streamer', { message: 'go', args: { n: 2_000 } });
    const seen: StepEvent['type'][] = [];
    let tokens = 0;
    for await (const item of stream) {
      seen.push(item.event.type);
      if (item.event.type === 'token') {
        expect(item.event.t).toBe(`t${tokens}`);
        tokens++;
      }
    }
    const r = await stream.result;
    expect(tokens).toBe(2_000);
    expect(seen[0]).toBe('started');
    expect(seen.at(-2)).toBe('narration');
    expect(seen.at(-1)).toBe('end');
    expect(await tokensOf(rt, r.stepId)).toHaveLength(2_000);
    expect(r.output).toBe(Array.from({ length: 2_000 }, (_, i) => `t${i}`).join(''));
  });

  it('STREAM-2003: the producer waits for credit; it never runs more than the credit ahead of the log', async () => {
    const shared = probe();
    // A store that counts logged tokens in shared memory the worker can read.
    class CountingStore extends MemoryRunStore {
      override async appendEvents(events: readonly StepEvent[]): Promise<void> {
        await new Promise((resolve) => setTimeout(resolve, 1));
        await super.appendEvents(events);
        Atomics.add(shared.view, PROBE.hostLogged, events.filter((e) => e.type === 'token').length);
      }
    }
    const rt = runtime({
      agents: [workerAgent('streamer', 'streamer')],
      store: new CountingStore(),
    });
    const r = await rt.invoke<{ ahead: number }>('streamer', {
      message: 'go',
      args: { n: 3_000, probe: shared.buffer },
    });
    expect(r.status).toBe('success');
    // Credit is 256 items; one more may be in hand between the check and the yield.
    expect(r.output?.ahead).toBeLessThanOrEqual(257);
    expect(r.output?.ahead).toBeGreaterThan(0);
    expect(await tokensOf(rt, r.stepId)).toHaveLength(3_000);
  });

  it('STREAM-2003: past its credit a thread drops narration (counted on the span), never tokens', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    const rt = runtime({
      agents: [workerAgent('chatty', 'chatty')],
      tracer: provider.getTracer('axon'),
    });
    const r = await rt.invoke('chatty', { message: 'x', args: { n: 2_000 } });
    expect(r.output).toBe('said');
    const log = await rt.store.readEvents(r.stepId);
    expect(log.filter((e) => e.type === 'token')).toHaveLength(20);
    const narrations = log.filter((e) => e.type === 'narration').length;
    expect(narrations).toBeLessThan(2_000);
    await provider.forceFlush();
    const span = exporter.getFinishedSpans().find((s) => s.name === 'invoke_agent chatty');
    expect(span?.attributes['axon.stream.dropped']).toBe(2_000 - narrations);
  });

  it('ctx.stream pushes from a plain function handler reach the host', async () => {
    const rt = runtime({ agents: [workerAgent('pusher', 'pusher')] });
    const r = await rt.invoke('pusher', 'x');
    expect(r.output).toBe('pushed');
    expect(await tokensOf(rt, r.stepId)).toEqual(['a', 'b', 'c']);
  });

  it('a worker agent delegates to worker agents three levels deep, with the depth limit unchanged', async () => {
    const agents = ['l1', 'l2', 'l3', 'l4'].map((n) => workerAgent(n, 'delegator'));
    // Each waiting level holds its thread: three levels need three threads.
    const workers = { maxThreads: 3 };
    const rt = runtime({ agents, workers });
    const r = await rt.invoke<Record<string, unknown>>('l1', {
      message: 'down',
      args: { chain: ['l2', 'l3'] },
    });
    expect(r.status).toBe('success');
    expect(r.output).toMatchObject({
      depth: 1,
      below: { depth: 2, below: { depth: 3, below: null } },
    });
    const steps = await rt.store.listSteps(r.runId);
    expect(steps.map((s) => [s.name, s.placement, s.actor_path.join('/')])).toEqual([
      ['l1', 'worker', 'l1'],
      ['l2', 'worker', 'l1/l2'],
      ['l3', 'worker', 'l1/l2/l3'],
    ]);

    const shallow = runtime({ agents, maxDepth: 2, workers });
    const refused = await shallow.invoke<Record<string, unknown>>('l1', {
      message: 'down',
      args: { chain: ['l2', 'l3'] },
    });
    // As inline: the refused delegation throws the typed error in l2, which fails with it.
    expect(refused.output).toMatchObject({
      depth: 1,
      below: { status: 'error', code: 'POLICY_DENIED' },
    });
    const l2 = (await shallow.store.listSteps(refused.runId)).find((s) => s.name === 'l2');
    expect(l2?.error).toMatchObject({ code: 'POLICY_DENIED', details: { max_depth: 2 } });
  });

  it('narrowing from a worker works as inline: it narrows the child; a widening throws FORBIDDEN', async () => {
    const rt = runtime({
      agents: [workerAgent('narrower', 'narrower'), workerAgent('perms', 'permissionsOf')],
    });
    const ctx = rt.createContext({ permissions: { allowedTools: ['add', 'search'] } });
    const narrowed = await rt.invoke(
      'narrower',
      {
        message: 'x',
        args: { next: 'perms', narrowing: { permissions: { allowedTools: ['search'] } } },
      },
      ctx,
    );
    expect(narrowed.output).toEqual({ child: { allowedTools: ['search'], canUseAdd: false } });
    const widened = await rt.invoke(
      'narrower',
      {
        message: 'x',
        args: { next: 'perms', narrowing: { permissions: { allowedTools: ['rm'] } } },
      },
      rt.createContext({ permissions: { allowedTools: ['add'] } }),
    );
    expect(widened.output).toEqual({ thrown: 'FORBIDDEN' });
  });

  it('trace context crosses the thread: a span made in the worker is a child of the step’s span', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    const rt = runtime({
      agents: [workerAgent('traced', 'traced')],
      tracer: provider.getTracer('axon'),
    });
    const r = await rt.invoke<{ traceId: string; parentSpanId: string }>('traced', 'x');
    expect(r.status).toBe('success');
    await provider.forceFlush();
    const host = exporter.getFinishedSpans().find((s) => s.name === 'invoke_agent traced');
    expect(host).toBeDefined();
    expect(r.output?.traceId).toBe(host?.spanContext().traceId);
    expect(r.output?.parentSpanId).toBe(host?.spanContext().spanId);
  });

  it('past its queue bound the pool refuses a step with QUEUE_FULL, without running it', async () => {
    const shared = probe();
    const rt = runtime({
      agents: [workerAgent('waiter', 'waiter'), workerAgent('echo', 'echo')],
      workers: { maxThreads: 1, maxQueue: 1 },
    });
    const ctx = rt.createContext();
    const busy = rt.invoke('waiter', { message: 'x', args: { probe: shared.buffer } }, ctx);
    await expect.poll(() => Atomics.load(shared.view, PROBE.started), { timeout: 15_000 }).toBe(1);
    const queued = rt.invoke('echo', 'queued');
    const refused = await rt.invoke('echo', 'refused');
    expect(refused.error?.code).toBe('QUEUE_FULL');
    expect(refused.error?.retriable).toBe(true);
    ctx.cancel();
    expect((await busy).error?.code).toBe('CANCELLED');
    expect((await queued).status).toBe('success');
  });

  it('a worker agent calls a host tool', async () => {
    const rt = runtime({ agents: [workerAgent('tool-user', 'toolUser')], tools: [addTool] });
    const r = await rt.invoke('tool-user', 'x');
    expect(r.output).toEqual({ status: 'success', output: { sum: 5 } });
  });

  it('a worker agent whose host tool call needs approval waits, suspended, and goes on when approved', async () => {
    const rt = runtime({
      agents: [workerAgent('tool-user', 'toolUser')],
      tools: [addTool],
      policy: configuredPolicy({ approvals: { tools: { add: ['ops'] } } }),
    });
    const { flow } = await rt.createFlow({ name: 'w', ast: { worker: 'approval' } });
    const run = await rt.createRun(flow.flow_id);
    const submitted = await rt.submitStep(run.run_id, {
      type: 'agent',
      client_token: 'w-1',
      input: { agent: 'tool-user', message: 'x' },
    });
    await submitted.done;
    expect((await rt.getStep(submitted.step_id))?.status).toBe('waiting');

    const [pending] = await rt.listApprovals(run.run_id);
    const { step } = await rt.approve(pending?.approval_id ?? '', { by: 'ops' });
    await step?.done;

    const done = await rt.getStep(submitted.step_id);
    expect(done?.status).toBe('succeeded');
    expect(done?.output).toEqual({ status: 'success', output: { sum: 5 } });
    expect(done?.placement).toBe('worker');
  });

  it('special outcomes cross the thread', async () => {
    const rt = runtime({ agents: [workerAgent('asker', 'asker')] });
    const r = await rt.invoke('asker', 'x');
    expect(r.status).toBe('needs_data');
    expect(r.data).toEqual({ field: 'city' });
  });

  it('a handler that throws fails its step; the pool keeps serving', async () => {
    const rt = runtime({
      agents: [workerAgent('thrower', 'thrower'), workerAgent('echo', 'echo')],
    });
    const r = await rt.invoke('thrower', 'x');
    expect(r.status).toBe('error');
    expect(r.error?.code).toBe('INTERNAL');
    expect(r.error?.message).toBe('boom in a worker');
    expect((await rt.invoke('echo', 'y')).status).toBe('success');
  });
});

describe('cancel and crashes with real threads', () => {
  it('cancel is cooperative first: the handler’s signal fires, the step ends CANCELLED, no token after', async () => {
    const shared = probe();
    const rt = runtime({ agents: [workerAgent('waiter', 'waiter')] });
    const stream = rt.stream('waiter', { message: 'x', args: { probe: shared.buffer } });
    const types: string[] = [];
    for await (const item of stream) {
      types.push(item.event.type);
      if (item.event.type === 'token') stream.cancel();
    }
    const r = await stream.result;
    expect(r.error?.code).toBe('CANCELLED');
    expect(types).toEqual(['started', 'token', 'error']);
    expect(await tokensOf(rt, r.stepId)).toEqual(['first']);
    await expect.poll(() => Atomics.load(shared.view, PROBE.aborted), { timeout: 15_000 }).toBe(1);
  });

  it('a cancel that the handler cannot hear terminates the thread after the grace period: CANCELLED, and the pool serves on', async () => {
    const shared = probe();
    const rt = runtime({
      agents: [workerAgent('busy', 'busy'), workerAgent('echo', 'echo')],
      workers: { maxThreads: 1, cancelGraceMs: 100 },
    });
    const stream = rt.stream('busy', { message: 'x', args: { probe: shared.buffer } });
    const types: string[] = [];
    const consumed = (async () => {
      for await (const item of stream) types.push(item.event.type);
    })();
    await expect.poll(() => Atomics.load(shared.view, PROBE.started), { timeout: 15_000 }).toBe(1);
    stream.cancel();
    await consumed;
    const r = await stream.result;
    expect(r.error?.code).toBe('CANCELLED');
    expect(types).toEqual(['started', 'error']);
    // The only thread was spinning: this runs only if it was terminated and replaced.
    expect((await rt.invoke('echo', 'after')).status).toBe('success');
  });

  it('a busy loop is stopped by the step timeout: the thread is terminated and replaced', async () => {
    const shared = probe();
    const rt = runtime({
      agents: [workerAgent('busy', 'busy', 300), workerAgent('echo', 'echo')],
      workers: { maxThreads: 1, cancelGraceMs: 100 },
    });
    // A warm thread, so the 300 ms go to the handler rather than to starting the thread.
    expect((await rt.invoke('echo', 'before')).status).toBe('success');
    const r = await rt.invoke('busy', { message: 'x', args: { probe: shared.buffer } });
    expect(r.status).toBe('timeout');
    expect(r.error?.code).toBe('TIMEOUT');
    expect(Atomics.load(shared.view, PROBE.started)).toBe(1);
    // One thread only: this succeeds only if the spinning one was replaced.
    expect((await rt.invoke('echo', 'after')).status).toBe('success');
  });

  it.each([
    ['an uncaught exception', 'uncaught'],
    ['process.exit()', 'exit'],
    ['running out of its resourceLimits memory', 'memory'],
  ])(
    '%s ends only that step, with WORKER_RESET, retriable; other steps finish',
    async (_label, how) => {
      const rt = runtime({
        agents: [workerAgent('crasher', 'crasher'), workerAgent('streamer', 'streamer')],
        workers: { maxThreads: 2, resourceLimits: { maxOldGenerationSizeMb: 32 } },
      });
      const other = rt.invoke('streamer', { message: 'x', args: { n: 500 } });
      const r = await rt.invoke('crasher', { message: 'x', args: { how } });
      expect(r.status).toBe('error');
      expect(r.error).toBeInstanceOf(WorkerResetError);
      expect(r.error?.code).toBe('WORKER_RESET');
      expect(r.error?.retriable).toBe(true);
      expect((await other).status).toBe('success');
      expect((await rt.invoke('streamer', { message: 'x', args: { n: 3 } })).output).toBe('t0t1t2');
    },
  );

  it('a thread that cannot start fails the step with WORKER_RESET and never crashes the host', async () => {
    const rt = runtime({
      agents: [workerAgent('echo', 'echo')],
      workers: {
        maxThreads: 1,
        execArgv: ['--import', 'data:text/javascript,throw new Error("boot failure")'],
      },
    });
    const r = await rt.invoke('echo', 'x');
    expect(r.error).toBeInstanceOf(WorkerResetError);
    expect(r.error?.message).toMatch(/boot failure/);
  });

  it('past the restart intensity the pool is degraded: escalation, then POOL_UNAVAILABLE without running', async () => {
    const rt = runtime({
      agents: [workerAgent('crasher', 'crasher'), workerAgent('echo', 'echo')],
      workers: {
        maxThreads: 2,
        restart: { maxRestarts: 1, withinMs: 60_000, minBackoffMs: 0, jitter: 0 },
      },
    });
    const first = await rt.invoke('crasher', { message: 'x', args: { how: 'exit' } });
    expect(first.error?.code).toBe('WORKER_RESET');
    expect((await rt.store.readEvents(first.stepId)).map((e) => e.type)).toEqual([
      'started',
      'error',
    ]);
    const second = await rt.invoke('crasher', { message: 'x', args: { how: 'exit' } });
    expect(second.error?.code).toBe('WORKER_RESET');
    const tipping = await rt.store.readEvents(second.stepId);
    expect(tipping.map((e) => e.type)).toEqual(['started', 'escalation', 'error']);
    expect(tipping[1]).toMatchObject({ target: 'pool:workers', reason: /restart intensity/ });

    const refused = await rt.invoke<Record<string, unknown>>('echo', 'x');
    expect(refused.error?.code).toBe('POOL_UNAVAILABLE');
    expect(refused.error?.retriable).toBe(true);
    expect(refused.output).toBeNull();
    expect((await rt.store.readEvents(refused.stepId)).map((e) => e.type)).toEqual([
      'started',
      'escalation',
      'error',
    ]);
  });

  it('closing the runtime ends a running worker step CANCELLED, not as a crash', async () => {
    const shared = probe();
    const rt = quietRuntime({
      agents: [workerAgent('waiter', 'waiter')],
      workers: { maxThreads: 1 },
    });
    const pending = rt.invoke('waiter', { message: 'x', args: { probe: shared.buffer } });
    await expect.poll(() => Atomics.load(shared.view, PROBE.started), { timeout: 15_000 }).toBe(1);
    await rt.close();
    const r = await pending;
    expect(r.error?.code).toBe('CANCELLED');
    expect(r.error?.message).toMatch(/runtime closed/);
  });

  it('a step that ends after the close sends nothing to its stopped agent actor or breaker', async () => {
    // Regression: `close()` stopped the agent actors and breakers, then the step ended
    // CANCELLED; its breaker was told RELEASE and, STATS_BATCH_MS later, its agent actor
    // INVOCATIONS: both dropped by XState with a "sent to stopped actor" warning, which the
    // setup file (test/support/setup.ts) turns into a failure of this test.
    const shared = probe();
    const clock = new SimulatedClock(Date.now());
    const rt = quietRuntime({
      agents: [workerAgent('waiter', 'waiter')],
      workers: { maxThreads: 1 },
      clock,
    });
    const pending = rt.invoke('waiter', { message: 'x', args: { probe: shared.buffer } });
    await expect.poll(() => Atomics.load(shared.view, PROBE.started), { timeout: 15_000 }).toBe(1);
    await rt.close();
    expect((await pending).error?.code).toBe('CANCELLED');
    // Whatever the step's end left to batch would be sent now.
    clock.advance(STATS_BATCH_MS);
    expect(clock.pending).toBe(0);
  });

  it('a step sent ahead to a thread that then dies goes back to the queue and runs elsewhere', async () => {
    const rt = runtime({
      agents: [workerAgent('crasher', 'crasher'), workerAgent('echo', 'echo')],
      workers: { maxThreads: 1, restart: { minBackoffMs: 0, jitter: 0 } },
    });
    // Warm the one thread, so both steps below go to its session: the second behind the first.
    expect((await rt.invoke('echo', 'warm')).status).toBe('success');
    const crash = rt.invoke('crasher', { message: 'x', args: { how: 'exit' } });
    const behind = rt.invoke<Record<string, unknown>>('echo', 'behind');
    expect((await crash).error?.code).toBe('WORKER_RESET');
    const r = await behind;
    expect(r.status).toBe('success');
    expect(r.output).toMatchObject({ echo: 'behind' });
  });

  it('a step cancelled while it waits behind a busy one never starts, even after that thread dies', async () => {
    const busyProbe = probe();
    const waitProbe = probe();
    const rt = runtime({
      agents: [
        workerAgent('busy', 'busy', 1_000),
        workerAgent('waiter', 'waiter'),
        workerAgent('echo', 'echo'),
      ],
      workers: { maxThreads: 1, cancelGraceMs: 100, restart: { minBackoffMs: 0, jitter: 0 } },
    });
    // A warm thread, so the busy step's 1 000 ms go to its handler: a cold start on a loaded
    // machine can take longer, and the step would time out before the probe is set.
    expect((await rt.invoke('echo', 'before')).status).toBe('success');
    const busy = rt.invoke('busy', { message: 'x', args: { probe: busyProbe.buffer } });
    await expect
      .poll(() => Atomics.load(busyProbe.view, PROBE.started), { timeout: 15_000 })
      .toBe(1);
    const ctx = rt.createContext();
    const waiting = rt.invoke('waiter', { message: 'x', args: { probe: waitProbe.buffer } }, ctx);
    ctx.cancel();
    expect((await waiting).error?.code).toBe('CANCELLED');
    expect((await busy).error?.code).toBe('TIMEOUT');
    // The busy thread was terminated; the cancelled step was not run on its replacement.
    expect((await rt.invoke('echo', 'after')).status).toBe('success');
    expect(Atomics.load(waitProbe.view, PROBE.started)).toBe(0);
  });

  it.each([
    [
      'a module that does not exist',
      '/nope/missing.js',
      'x',
      /cannot load module \/nope\/missing\.js/,
    ],
    [
      'an export that is not a handler',
      fixtures,
      'PROBE',
      /export "PROBE" .* is neither a handler/,
    ],
    ['an output that cannot cross a thread', fixtures, 'unclonable', /cannot cross to the host/],
    [
      'an event that cannot cross a thread',
      fixtures,
      'unclonableEvent',
      /cannot cross to the host/,
    ],
  ])(
    '%s fails the step with a clear error; the thread lives on',
    async (_label, module, exported, message) => {
      const rt = runtime({
        agents: [
          defineAgent({ name: 'bad', placement: 'worker', module, export: exported }),
          workerAgent('echo', 'echo'),
        ],
        workers: { maxThreads: 1 },
      });
      const r = await rt.invoke('bad', 'x');
      expect(r.status).toBe('error');
      expect(r.error?.code).toBe('INTERNAL');
      expect(r.error?.message).toMatch(message);
      expect((await rt.invoke('echo', 'after')).status).toBe('success');
      // Nothing died: no restart was counted.
      expect(r.error).not.toBeInstanceOf(WorkerResetError);
    },
  );
});
