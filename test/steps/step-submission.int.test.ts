import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../src/actors/define-agent.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { SimulatedClock } from '../../src/context/clock.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { ConflictError } from '../../src/errors/conflict-error.js';
import { NotFoundError } from '../../src/errors/not-found-error.js';
import { SchemaViolationError } from '../../src/errors/schema-violation-error.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import { redisStore } from '../../src/store/redis/redis-store.js';
import type { RunStore } from '../../src/store/run-store.js';
import { sqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { GATE_POLL_MS } from '../../src/steps/gate-eval.js';
import { clearRedisPrefix, redisUrl } from '../support/redis.js';
import { quietRuntime, settle } from '../support/runtime.js';

const dir = mkdtempSync(join(tmpdir(), 'axon-submit-'));
const redisBase = `axon-test:${randomUUID()}:`;
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await clearRedisPrefix(redisBase);
});

const flowBody = { name: 'f', ast: { id: randomUUID() } };

/** A runtime whose agent `count` counts its runs. */
function setup(store: RunStore): { rt: Runtime; runs: () => number } {
  let runs = 0;
  const count = defineAgent({
    name: 'count',
    handler: (input) => {
      runs++;
      return `counted ${input.message}`;
    },
  });
  const add = defineTool({
    name: 'add',
    description: 'Adds',
    input: z.object({ a: z.number(), b: z.number() }).strict(),
    handler: ({ a, b }) => ({ sum: a + b }),
  });
  return { rt: quietRuntime({ store, agents: [count], tools: [add] }), runs: () => runs };
}

describe.each([
  ['memory', (): RunStore => memoryStore()],
  ['sqlite', (): RunStore => sqliteStore(join(dir, `${randomUUID()}.db`))],
  [
    'redis',
    (): RunStore => redisStore({ url: redisUrl(), prefix: `${redisBase}${randomUUID()}:` }),
  ],
])('step submission on the %s store (NERVE-4003)', (_name, make) => {
  it('runs a step once per client token; the same token again finds it and runs nothing', async () => {
    const { rt, runs } = setup(make());
    const { flow } = await rt.createFlow(flowBody);
    const run = await rt.createRun(flow.flow_id);
    const body = {
      type: 'agent',
      client_token: 'c-1',
      input: { agent: 'count', message: 'one' },
    };

    const first = await rt.submitStep(run.run_id, body);
    expect(first).toMatchObject({ created: true, status: 'running' });
    // `done` tells the status the step ended in; a step found by its token, nothing.
    expect(await first.done).toBe('succeeded');
    // `ended`: its end as the record stores it, without reading the record back.
    expect(await first.ended).toEqual({ status: 'succeeded', output: 'counted one', error: null });
    const again = await rt.submitStep(run.run_id, body);
    expect(again).toMatchObject({ created: false, step_id: first.step_id, status: 'succeeded' });
    expect(await again.done).toBeNull();
    expect(await again.ended).toBeNull();
    expect(runs()).toBe(1);
    expect(await rt.store.getStep(first.step_id)).toMatchObject({
      client_token: 'c-1',
      status: 'succeeded',
      output: 'counted one',
      type: 'agent',
    });
    await rt.close();
  });

  it('a failed step: `ended` holds the error its record stores', async () => {
    const { rt } = setup(make());
    const { flow } = await rt.createFlow(flowBody);
    const run = await rt.createRun(flow.flow_id);
    const submitted = await rt.submitStep(run.run_id, {
      type: 'tool_call',
      input: { tool: 'add', args: { a: 1, b: 'two' } },
    });
    const ended = await submitted.ended;
    const record = await rt.store.getStep(submitted.step_id);
    expect(ended?.status).toBe('failed');
    expect(ended).toEqual({ status: record?.status, output: null, error: record?.error });
    expect(record?.error?.code).toBe('SCHEMA_VIOLATION');
    await rt.close();
  });

  it('parallel submissions of one token make one step and run it once', async () => {
    const { rt, runs } = setup(make());
    const { flow } = await rt.createFlow(flowBody);
    const run = await rt.createRun(flow.flow_id);
    const body = { type: 'agent', client_token: 'same', input: { agent: 'count', message: 'x' } };

    const submitted = await Promise.all(
      Array.from({ length: 10 }, () => rt.submitStep(run.run_id, body)),
    );
    await Promise.all(submitted.map((s) => s.done));
    expect(submitted.filter((s) => s.created)).toHaveLength(1);
    expect(new Set(submitted.map((s) => s.step_id)).size).toBe(1);
    expect(runs()).toBe(1);
    expect(await rt.store.listSteps(run.run_id)).toHaveLength(1);
    await rt.close();
  });

  it('reads its run once, at the submission: the tool or agent the step runs does not look it up again', async () => {
    const store = make();
    let reads = 0;
    const getRun = store.getRun.bind(store);
    store.getRun = (runId) => {
      reads++;
      return getRun(runId);
    };
    const { rt, runs } = setup(store);
    const { flow } = await rt.createFlow(flowBody);
    const run = await rt.createRun(flow.flow_id);
    reads = 0;
    const bodies = [
      { type: 'tool_call', client_token: 't-1', input: { tool: 'add', args: { a: 1, b: 2 } } },
      { type: 'agent', client_token: 't-2', input: { agent: 'count', message: 'x' } },
    ];
    for (const body of bodies) {
      const submitted = await rt.submitStep(run.run_id, body);
      expect(await submitted.ended).toMatchObject({ status: 'succeeded' });
    }
    expect(runs()).toBe(1);
    expect(reads).toBe(bodies.length);
    // Its steps wrote into the run it read: both are its, and it is still running.
    expect(await rt.store.listSteps(run.run_id)).toHaveLength(2);
    expect(await rt.getRun(run.run_id)).toMatchObject({ status: 'running' });
    await rt.close();
  });
});

describe('step submission: kinds and refusals', () => {
  it('runs tool_call and llm_call steps; a tool given bad arguments fails its step and never runs', async () => {
    const { rt } = setup(memoryStore());
    const { flow } = await rt.createFlow(flowBody);
    const run = await rt.createRun(flow.flow_id, { seed: 7 });

    const tool = await rt.submitStep(run.run_id, {
      type: 'tool_call',
      client_token: 't-1',
      input: { tool: 'add', args: { a: 2, b: 40 } },
    });
    await tool.done;
    expect(await rt.store.getStep(tool.step_id)).toMatchObject({
      type: 'tool_call',
      status: 'succeeded',
      output: { sum: 42 },
    });

    const bad = await rt.submitStep(run.run_id, {
      type: 'tool_call',
      input: { tool: 'add', args: { a: 'two' } },
    });
    expect(await bad.done).toBe('failed');
    expect(await rt.store.getStep(bad.step_id)).toMatchObject({
      status: 'failed',
      error: { code: 'SCHEMA_VIOLATION' },
    });

    const llm = await rt.submitStep(run.run_id, {
      type: 'llm_call',
      input: { messages: [{ role: 'user', content: 'hi' }], params: { max_tokens: 5 } },
    });
    await llm.done;
    const events = await rt.store.readEvents(llm.step_id);
    expect(events.filter((e) => e.type === 'token')).toHaveLength(5);
    await rt.close();
  });

  it("the run's budgets hold for its steps: a call that does not fit fails BUDGET_EXCEEDED", async () => {
    const { rt } = setup(memoryStore());
    const { flow } = await rt.createFlow(flowBody);
    const run = await rt.createRun(flow.flow_id, { budgets: { max_tokens_out: 10 } });
    const llm = await rt.submitStep(run.run_id, {
      type: 'llm_call',
      input: { messages: [{ role: 'user', content: 'hi' }], params: { max_tokens: 64 } },
    });
    await llm.done;
    expect(await rt.store.getStep(llm.step_id)).toMatchObject({
      status: 'failed',
      error: { code: 'BUDGET_EXCEEDED' },
    });
    await rt.close();
  });

  it('refuses an unknown run, a run that ended, a bad body, an unknown agent or tool', async () => {
    const { rt } = setup(memoryStore());
    const { flow } = await rt.createFlow(flowBody);
    const run = await rt.createRun(flow.flow_id);
    const agentStep = { type: 'agent', input: { agent: 'count', message: 'x' } };

    await expect(rt.submitStep('run_unknown', agentStep)).rejects.toBeInstanceOf(NotFoundError);
    await expect(
      rt.submitStep(run.run_id, { ...agentStep, type: 'gate_check' }),
    ).rejects.toBeInstanceOf(SchemaViolationError);
    await expect(
      rt.submitStep(run.run_id, { type: 'agent', input: { agent: 'nobody', message: 'x' } }),
    ).rejects.toBeInstanceOf(NotFoundError);
    await expect(
      rt.submitStep(run.run_id, { type: 'tool_call', input: { tool: 'nope', args: {} } }),
    ).rejects.toBeInstanceOf(NotFoundError);

    await rt.store.updateRun(run.run_id, { status: 'completed' });
    await expect(rt.submitStep(run.run_id, agentStep)).rejects.toBeInstanceOf(ConflictError);
    await rt.close();
  });
});

describe("POLICY-3000: a run's steps share its budget", () => {
  it('steps running at once cannot together spend more than the run has', async () => {
    const rt = quietRuntime({ engines: [createScriptedEngine({ tokenDelayMs: 1 })] });
    const { flow } = await rt.createFlow(flowBody);
    const run = await rt.createRun(flow.flow_id, { budgets: { max_tokens_out: 20 } });
    const llm = {
      type: 'llm_call',
      input: { messages: [{ role: 'user', content: 'go' }], params: { max_tokens: 12 } },
    };
    const [one, two] = await Promise.all([
      rt.submitStep(run.run_id, llm),
      rt.submitStep(run.run_id, llm),
    ]);
    await Promise.all([one.done, two.done]);
    const steps = await Promise.all([one, two].map((s) => rt.store.getStep(s.step_id)));
    expect(steps.map((s) => s?.status).sort()).toEqual(['failed', 'succeeded']);
    expect(steps.find((s) => s?.status === 'failed')?.error).toMatchObject({
      code: 'BUDGET_EXCEEDED',
      details: { limit: 'max_tokens_out', remaining: 8 },
    });
    expect((await rt.getRun(run.run_id))?.budget_usage.tokens_out).toBe(12);
    // Once both have ended, the next step starts from what the store says is left.
    const next = await rt.submitStep(run.run_id, {
      ...llm,
      input: { ...llm.input, params: { max_tokens: 8 } },
    });
    await next.done;
    expect((await rt.store.getStep(next.step_id))?.status).toBe('succeeded');
    await rt.close();
  });
});

describe("POLICY-3000: a run's usage is kept in the store and holds across a restart", () => {
  it('a runtime restarted on the same SQLite file refuses a call past what the run has left', async () => {
    const file = join(dir, `${randomUUID()}.db`);
    const llm = (maxTokens: number) => ({
      type: 'llm_call',
      input: { messages: [{ role: 'user', content: 'go' }], params: { max_tokens: maxTokens } },
    });

    const first = quietRuntime({ store: sqliteStore(file) });
    const { flow } = await first.createFlow(flowBody);
    const run = await first.createRun(flow.flow_id, { budgets: { max_tokens_out: 20 } });
    const used = await first.submitStep(run.run_id, llm(12));
    await used.done;
    expect((await first.getRun(run.run_id))?.budget_usage.tokens_out).toBe(12);
    await first.close();

    const second = quietRuntime({ store: sqliteStore(file) });
    const tooBig = await second.submitStep(run.run_id, llm(12));
    await tooBig.done;
    expect(await second.store.getStep(tooBig.step_id)).toMatchObject({
      status: 'failed',
      error: { code: 'BUDGET_EXCEEDED', details: { limit: 'max_tokens_out', remaining: 8 } },
    });
    const fits = await second.submitStep(run.run_id, llm(8));
    await fits.done;
    expect((await second.store.getStep(fits.step_id))?.status).toBe('succeeded');
    expect((await second.getRun(run.run_id))?.budget_usage.tokens_out).toBe(20);
    await second.close();
  });
});

describe("POLICY-3000: a run's max_wall_ms is its wall time since it was created", () => {
  it("a step still running when the run's wall time is spent fails BUDGET_EXCEEDED; later steps fail before any call", async () => {
    const clock = new SimulatedClock(Date.parse('2026-01-01T00:00:00.000Z'));
    let calls = 0;
    const waiter = defineAgent({
      name: 'waiter',
      handler: (_input, ctx) =>
        new Promise<string>((_resolve, reject) => {
          calls++;
          ctx.signal.addEventListener('abort', () => {
            reject(ctx.signal.reason as Error);
          });
        }),
    });
    const rt = quietRuntime({ clock, agents: [waiter] });
    const { flow } = await rt.createFlow(flowBody);
    const run = await rt.createRun(flow.flow_id, { budgets: { max_wall_ms: 1_000 } });
    const body = { type: 'agent', input: { agent: 'waiter', message: 'x' } };

    clock.advance(400);
    const first = await rt.submitStep(run.run_id, body);
    clock.advance(599);
    expect((await rt.store.getStep(first.step_id))?.status).toBe('running');
    clock.advance(1);
    await first.done;
    expect(await rt.store.getStep(first.step_id)).toMatchObject({
      status: 'failed',
      error: { code: 'BUDGET_EXCEEDED', details: { limit: 'max_wall_ms' } },
    });

    const late = await rt.submitStep(run.run_id, body);
    await late.done;
    expect(await rt.store.getStep(late.step_id)).toMatchObject({
      status: 'failed',
      error: { code: 'BUDGET_EXCEEDED', details: { limit: 'max_wall_ms' } },
    });
    expect(calls).toBe(1);
    await rt.close();
  });

  it("a step's own max_wall_ms is a budget too; a plain timeout stays TIMEOUT", async () => {
    const clock = new SimulatedClock(Date.parse('2026-01-01T00:00:00.000Z'));
    const waiter = defineAgent({
      name: 'waiter',
      timeoutMs: 300,
      handler: () => new Promise<string>(() => undefined),
    });
    const rt = quietRuntime({ clock, agents: [waiter] });
    const { flow } = await rt.createFlow(flowBody);
    const run = await rt.createRun(flow.flow_id);
    const body = (budgets?: object): unknown => ({
      type: 'agent',
      input: { agent: 'waiter', message: 'x' },
      ...(budgets ? { budgets } : {}),
    });
    const budgeted = await rt.submitStep(run.run_id, body({ max_wall_ms: 100 }));
    const timed = await rt.submitStep(run.run_id, body());
    clock.advance(300);
    await Promise.all([budgeted.done, timed.done]);
    expect((await rt.store.getStep(budgeted.step_id))?.error?.code).toBe('BUDGET_EXCEEDED');
    expect((await rt.store.getStep(timed.step_id))?.error?.code).toBe('TIMEOUT');
    await rt.close();
  });
});

describe('NERVE-4020: provenance on every step, and on the run when it ends', () => {
  it.each([
    ['memory', (): RunStore => memoryStore()],
    ['sqlite', (): RunStore => sqliteStore(join(dir, `${randomUUID()}.db`))],
  ])(
    'on the %s store, steps with no engine call report the run seed, the pool and the replica',
    async (_name, make) => {
      const add = defineTool({
        name: 'add',
        description: 'Adds',
        input: z.object({ a: z.number(), b: z.number() }).strict(),
        handler: ({ a, b }) => ({ sum: a + b }),
      });
      const helper = defineAgent({ name: 'helper', handler: () => 'helped' });
      const planner = defineAgent({
        name: 'planner',
        handler: async (input, ctx, runtime) => {
          await runtime.callTool('add', { a: 1, b: 2 }, ctx);
          return (await runtime.delegate('helper', input, ctx)).output;
        },
      });
      const rt = quietRuntime({
        store: make(),
        agents: [planner, helper],
        tools: [add],
        replicaId: 'replica-7',
      });
      const { flow } = await rt.createFlow(flowBody);
      const run = await rt.createRun(flow.flow_id, { seed: 42 });
      const step = await rt.submitStep(run.run_id, {
        type: 'agent',
        client_token: 'p',
        input: { agent: 'planner', message: 'go' },
      });
      await step.done;
      const placed = { seed: 42, pool_id: 'local', replica_id: 'replica-7', engine: null };
      const steps = await rt.listSteps(run.run_id);
      expect(steps.map((s) => s.name)).toEqual(['planner', 'add', 'helper']);
      for (const s of steps) {
        expect(s.provenance).toMatchObject(placed);
        const [started] = await rt.readStepEvents(s.step_id);
        expect(started).toMatchObject({ type: 'started', provenance: placed });
      }
      const ended = await rt.completeRun(run.run_id);
      expect(ended.provenance).toMatchObject({ ...placed, tokens_in: 0, tokens_out: 0 });
      expect((await rt.getRun(run.run_id))?.provenance).toEqual(ended.provenance);
      await rt.close();
    },
  );
});

describe('gate_eval steps (API.md): enough facts of a kind, now or within wait_ms', () => {
  async function runWithFacts(store: RunStore = memoryStore()) {
    const rt = quietRuntime({ store });
    const { flow } = await rt.createFlow({ name: 'gates', ast: { id: randomUUID() } });
    const run = await rt.createRun(flow.flow_id);
    return { rt, runId: run.run_id };
  }
  const gate = (input: Record<string, unknown>) => ({ type: 'gate_eval', input });
  async function outcome(rt: Runtime, runId: string, input: Record<string, unknown>) {
    const step = await rt.submitStep(runId, gate(input));
    await step.done;
    return rt.getStep(step.step_id);
  }

  it('counts the run’s facts of the type whose data has every field of where', async () => {
    const { rt, runId } = await runWithFacts(sqliteStore(join(dir, `${randomUUID()}.db`)));
    await rt.appendFact(runId, {
      type: 'booking',
      data: { city: 'Lisbon', seats: 2, tags: ['a'] },
    });
    await rt.appendFact(runId, { type: 'booking', data: { city: 'Porto', seats: 2 } });
    await rt.appendFact(runId, { type: 'note', data: { city: 'Lisbon' } });
    const passed = async (input: Record<string, unknown>) =>
      (await outcome(rt, runId, input))?.output;
    expect(await passed({ fact_type: 'booking' })).toEqual({ passed: true });
    expect(await passed({ fact_type: 'booking', min_count: 2 })).toEqual({ passed: true });
    expect(await passed({ fact_type: 'booking', min_count: 3 })).toEqual({ passed: false });
    expect(await passed({ fact_type: 'booking', where: { city: 'Lisbon' } })).toEqual({
      passed: true,
    });
    expect(await passed({ fact_type: 'booking', where: { seats: 2 }, min_count: 2 })).toEqual({
      passed: true,
    });
    expect(await passed({ fact_type: 'booking', where: { tags: ['a'] } })).toEqual({
      passed: true,
    });
    expect(await passed({ fact_type: 'booking', where: { city: 'Lisbon', seats: 3 } })).toEqual({
      passed: false,
    });
    expect(await passed({ fact_type: 'flight' })).toEqual({ passed: false });
    const step = await outcome(rt, runId, { fact_type: 'booking' });
    expect(step).toMatchObject({ type: 'gate_eval', name: 'booking', status: 'succeeded' });
    expect((await rt.readStepEvents(step?.step_id ?? '')).map((e) => e.type)).toEqual([
      'started',
      'end',
    ]);
    await rt.close();
  });

  it('waits up to wait_ms for a fact to come; without one it ends passed: false', async () => {
    const clock = new SimulatedClock(Date.parse('2026-01-01T00:00:00.000Z'));
    const rt = quietRuntime({ clock });
    const { flow } = await rt.createFlow({ name: 'gates', ast: { id: randomUUID() } });
    const { run_id: runId } = await rt.createRun(flow.flow_id);
    const status = async (id: string) => (await rt.getStep(id))?.status;
    /** Moves the clock one poll interval at a time, letting each poll read the store. */
    const tick = async (ms: number) => {
      for (let t = 0; t < ms; t += GATE_POLL_MS) {
        clock.advance(GATE_POLL_MS);
        await settle(5);
      }
    };

    const waiting = await rt.submitStep(runId, gate({ fact_type: 'booking', wait_ms: 10_000 }));
    await tick(500);
    expect(await status(waiting.step_id)).toBe('running');
    await rt.appendFact(runId, { type: 'booking', data: { city: 'Lisbon' } });
    await tick(GATE_POLL_MS);
    await waiting.done;
    expect(await rt.getStep(waiting.step_id)).toMatchObject({
      status: 'succeeded',
      output: { passed: true },
    });

    const lapsing = await rt.submitStep(runId, gate({ fact_type: 'flight', wait_ms: 100 }));
    await tick(75);
    expect(await status(lapsing.step_id)).toBe('running');
    await tick(25);
    await lapsing.done;
    expect(await rt.getStep(lapsing.step_id)).toMatchObject({
      status: 'succeeded',
      output: { passed: false },
    });
    await rt.close();
  });

  it('a waiting gate ends at once when cancelled; bad input is a SCHEMA_VIOLATION', async () => {
    const { rt, runId } = await runWithFacts();
    const waiting = await rt.submitStep(runId, gate({ fact_type: 'booking', wait_ms: 60_000 }));
    await settle(3);
    await rt.cancelStep(waiting.step_id);
    await waiting.done;
    expect(await rt.getStep(waiting.step_id)).toMatchObject({
      status: 'cancelled',
      error: { code: 'CANCELLED' },
    });
    for (const input of [
      {},
      { fact_type: '' },
      { fact_type: 'x', min_count: -1 },
      { fact_type: 'x', extra: 1 },
    ]) {
      await expect(rt.submitStep(runId, gate(input))).rejects.toBeInstanceOf(SchemaViolationError);
    }
    await rt.close();
  });
});

describe("a flow's tools[].parameters (API.md): declared and registered schemas both hold", () => {
  function adder() {
    const calls: unknown[] = [];
    const add = defineTool({
      name: 'add',
      description: 'Adds two numbers',
      input: z.strictObject({ a: z.number(), b: z.number() }),
      handler: ({ a, b }) => {
        calls.push({ a, b });
        return { sum: a + b };
      },
    });
    const caller = defineAgent({
      name: 'caller',
      handler: async (input, ctx, runtime) =>
        (await runtime.callTool('add', input.args, ctx)).status,
    });
    return { rt: quietRuntime({ tools: [add], agents: [caller] }), calls };
  }

  it('refuses at creation a flow whose declaration contradicts the registered tool, naming each difference', async () => {
    const { rt } = adder();
    const contradicting = {
      name: 'bad',
      tools: [
        {
          name: 'add',
          parameters: {
            type: 'object',
            properties: { a: { type: 'string' }, c: { type: 'number' } },
            required: ['a', 'c'],
          },
        },
      ],
    };
    const err = await rt.createFlow(contradicting).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SchemaViolationError);
    expect((err as SchemaViolationError).issues).toEqual([
      {
        path: ['tools', 0, 'parameters', 'required'],
        message: 'tool "add": the flow requires "c", which the registered tool does not accept',
      },
      {
        path: ['tools', 0, 'parameters', 'properties', 'a', 'type'],
        message: 'tool "add": the flow declares "string", the registered tool "number"',
      },
    ]);
    // Looser declarations, and tools the runtime does not have, are fine.
    await rt.createFlow({
      name: 'loose',
      tools: [{ name: 'add', parameters: { type: 'object' } }],
    });
    await rt.createFlow({
      name: 'other',
      tools: [{ name: 'nope', parameters: { type: 'object' } }],
    });
    await rt.close();
  });

  it("a tool_call of the flow's run, or an agent's call in it, is checked against the declaration too", async () => {
    const { rt, calls } = adder();
    const { flow } = await rt.createFlow({
      name: 'strict',
      ast: { id: randomUUID() },
      tools: [
        {
          name: 'add',
          parameters: { type: 'object', properties: { a: { type: 'integer', maximum: 10 } } },
        },
      ],
    });
    const run = await rt.createRun(flow.flow_id);
    const over = await rt.submitStep(run.run_id, {
      type: 'tool_call',
      input: { tool: 'add', args: { a: 50, b: 1 } },
    });
    await over.done;
    expect(await rt.getStep(over.step_id)).toMatchObject({
      status: 'failed',
      error: { code: 'SCHEMA_VIOLATION', details: { issues: [{ path: ['a'] }] } },
    });
    const byAgent = await rt.submitStep(run.run_id, {
      type: 'agent',
      input: { agent: 'caller', message: 'go', args: { a: 11, b: 1 } },
    });
    await byAgent.done;
    expect((await rt.getStep(byAgent.step_id))?.output).toBe('error');
    expect(calls).toEqual([]);
    const fits = await rt.submitStep(run.run_id, {
      type: 'tool_call',
      input: { tool: 'add', args: { a: 5, b: 1 } },
    });
    await fits.done;
    expect(await rt.getStep(fits.step_id)).toMatchObject({
      status: 'succeeded',
      output: { sum: 6 },
    });
    expect(calls).toEqual([{ a: 5, b: 1 }]);
    await rt.close();
  });
});

describe('step placement without a fleet', () => {
  it("runs a step placed 'here' as any other, and refuses one placed on a pool: there is no fleet", async () => {
    const { rt, runs } = setup(memoryStore());
    const { flow } = await rt.createFlow(flowBody);
    const run = await rt.createRun(flow.flow_id, {});
    const body = { type: 'agent', input: { agent: 'count', message: 'x' } };
    const here = await rt.submitStep(run.run_id, body, { placement: 'here' });
    expect(await here.done).toBe('succeeded');
    expect(runs()).toBe(1);
    const refused = rt.submitStep(
      run.run_id,
      { ...body, client_token: 'p' },
      { placement: { pool: 'gpu' } },
    );
    await expect(refused).rejects.toMatchObject({ code: 'POOL_UNAVAILABLE' });
    await expect(refused).rejects.toThrow(/placed on pool "gpu", but this runtime has no fleet/);
    // Refused before anything was claimed: the token is free.
    expect((await rt.listSteps(run.run_id)).map((s) => s.client_token)).toEqual([null]);
    expect(runs()).toBe(1);
    await rt.close();
  });

  it("takes the body's own placement over the run's (seed 003 §6): a pin of this pool runs, kept in placement_decision; another pool or tags none has are refused as a run's would be", async () => {
    const { rt, runs } = setup(memoryStore());
    const { flow } = await rt.createFlow(flowBody);
    const run = await rt.createRun(flow.flow_id, {});
    const body = { type: 'agent', input: { agent: 'count', message: 'x' } };
    const pinned = await rt.submitStep(run.run_id, { ...body, placement: { pin: 'local' } });
    expect(await pinned.done).toBe('succeeded');
    expect(await rt.getStep(pinned.step_id)).toMatchObject({
      placement_decision: { pool_id: 'local', policy: 'pin' },
    });
    const auto = await rt.submitStep(run.run_id, { ...body, placement: 'auto' });
    expect(await auto.done).toBe('succeeded');
    expect((await rt.getStep(auto.step_id))?.placement_decision).toMatchObject({
      policy: 'auto',
    });
    for (const placement of [{ pin: 'gpu' }, { affinity: { tags: ['gpu'] } }]) {
      await expect(
        rt.submitStep(run.run_id, { ...body, client_token: 'refused', placement }),
      ).rejects.toMatchObject({ code: 'POOL_UNAVAILABLE' });
    }
    // Refused before anything was claimed: the token is free, nothing ran.
    expect((await rt.listSteps(run.run_id)).map((s) => s.client_token)).toEqual([null, null]);
    expect(runs()).toBe(2);
    await expect(
      rt.submitStep(run.run_id, { ...body, placement: { pin: 'local' } }, { placement: 'here' }),
    ).rejects.toThrow(/the body places the step and so does the caller/);
    await expect(
      rt.submitStep(run.run_id, { ...body, placement: { pool: 'local' } }),
    ).rejects.toMatchObject({ code: 'SCHEMA_VIOLATION' });
    await rt.close();
  });
});
