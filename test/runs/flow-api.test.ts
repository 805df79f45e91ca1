import { describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import { canonicalHash } from '../../src/context/canonical-json.js';
import { ConflictError } from '../../src/errors/conflict-error.js';
import { NotFoundError } from '../../src/errors/not-found-error.js';
import { SchemaViolationError } from '../../src/errors/schema-violation-error.js';
import { quietRuntime, until } from '../support/runtime.js';

const flowBody = {
  name: 'trip-planner',
  ast: {
    steps: [
      { id: 'plan', type: 'llm_call' },
      { id: 'book', type: 'tool_call' },
    ],
  },
  tools: [
    {
      name: 'search_flights',
      description: 'Finds flights',
      parameters: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
    },
  ],
  config: {
    fact_schemas: {
      booking: {
        type: 'object',
        properties: { city: { type: 'string' }, seats: { type: 'integer', minimum: 1 } },
        required: ['city', 'seats'],
      },
    },
  },
  labels: { team: 'travel' },
};

/** The same content with every object's keys in reverse order. */
function reversedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reversedKeys);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .reverse()
        .map(([k, v]) => [k, reversedKeys(v)]),
    );
  }
  return value;
}

describe('flows (NERVE-4001)', () => {
  it('are content-addressed: the same content gives the same flow, any change a new one', async () => {
    const rt = quietRuntime();
    const first = await rt.createFlow(flowBody);
    expect(first.created).toBe(true);
    expect(first.flow.hash).toBe(
      canonicalHash({ ast: flowBody.ast, tools: flowBody.tools, config: flowBody.config }),
    );
    expect(first.flow.hash).toMatch(/^[0-9a-f]{64}$/);

    const again = await rt.createFlow(reversedKeys(flowBody));
    expect(again).toEqual({ flow: first.flow, created: false });
    // Name and labels are not content.
    expect((await rt.createFlow({ ...flowBody, name: 'renamed', labels: {} })).flow.flow_id).toBe(
      first.flow.flow_id,
    );

    const changed = await rt.createFlow({ ...flowBody, ast: { steps: [] } });
    expect(changed.created).toBe(true);
    expect(changed.flow.flow_id).not.toBe(first.flow.flow_id);
    expect(await rt.getFlowByHash(first.flow.hash)).toEqual(first.flow);
    expect(await rt.getFlow(changed.flow.flow_id)).toEqual(changed.flow);
    await rt.close();
  });

  it('refuses tool parameters or fact schemas that are not JSON Schema 2020-12, and unknown fields', async () => {
    const rt = quietRuntime();
    const badTool = {
      ...flowBody,
      tools: [
        { name: 'broken', parameters: { type: 'object', properties: { a: { type: 'numbr' } } } },
      ],
    };
    await expect(rt.createFlow(badTool)).rejects.toThrow(/the JSON Schema of tool broken/);
    await expect(
      rt.createFlow({ ...flowBody, config: { fact_schemas: { x: { minimum: 'one' } } } }),
    ).rejects.toBeInstanceOf(SchemaViolationError);
    const unknown = await rt.createFlow({ ...flowBody, extra: 1 }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(SchemaViolationError);
    expect((unknown as SchemaViolationError).code).toBe('SCHEMA_VIOLATION');
    await rt.close();
  });
});

describe('runs of a flow and their facts (NERVE-4004)', () => {
  it('checks facts against the flow schema, stores the valid ones, and lists them', async () => {
    const rt = quietRuntime();
    const { flow } = await rt.createFlow(flowBody);
    const run = await rt.createRun(flow.flow_id, { seed: 42, budgets: { max_tokens_out: 100 } });
    expect(run).toMatchObject({
      flow_id: flow.flow_id,
      mode: 'record',
      seed: 42,
      status: 'running',
    });
    expect(await rt.getRun(run.run_id)).toEqual(run);

    const booking = await rt.appendFact(run.run_id, {
      type: 'booking',
      data: { city: 'Berlin', seats: 2 },
    });
    const bad = await rt
      .appendFact(run.run_id, { type: 'booking', data: { city: 'Rome', seats: 0 } })
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(SchemaViolationError);
    expect((bad as SchemaViolationError).issues.map((i) => i.path)).toEqual([['seats']]);
    const note = await rt.appendFact(run.run_id, {
      type: 'note',
      data: 'any shape without a schema',
    });
    const second = await rt.appendFact(run.run_id, {
      type: 'booking',
      data: { city: 'Rome', seats: 1 },
    });

    expect(await rt.listFacts(run.run_id)).toEqual([booking, note, second]);
    expect(await rt.listFacts(run.run_id, { type: 'booking' })).toEqual([booking, second]);
    expect(await rt.listFacts(run.run_id, { after: booking.fact_id, limit: 1 })).toEqual([note]);
    expect(booking).toMatchObject({ run_id: run.run_id, schema_uri: null, emitted_by_step: null });
    await expect(rt.listFacts('run_unknown')).rejects.toBeInstanceOf(NotFoundError);
    // A flow's facts are queryable across its runs (NERVE-4004).
    const other = await rt.createRun(flow.flow_id);
    const third = await rt.appendFact(other.run_id, {
      type: 'booking',
      data: { city: 'Oslo', seats: 3 },
    });
    expect(await rt.listFlowFacts(flow.flow_id, { type: 'booking' })).toEqual([
      booking,
      second,
      third,
    ]);
    expect(await rt.listFlowFacts(flow.flow_id, { after: second.fact_id })).toEqual([third]);
    await expect(rt.listFlowFacts('flow_unknown')).rejects.toBeInstanceOf(NotFoundError);
    await expect(rt.appendFact('run_unknown', { type: 'x', data: 1 })).rejects.toBeInstanceOf(
      NotFoundError,
    );
    await rt.close();
  });

  it('refuses a run of an unknown flow, and a replay without the run it replays', async () => {
    const rt = quietRuntime();
    await expect(rt.createRun('flow_unknown')).rejects.toBeInstanceOf(NotFoundError);
    const { flow } = await rt.createFlow(flowBody);
    await expect(rt.createRun(flow.flow_id, { mode: 'replay' })).rejects.toBeInstanceOf(
      SchemaViolationError,
    );
    await rt.close();
  });
});

describe('pool_policy (PLACE-5001)', () => {
  const echo = defineAgent({ name: 'echo', handler: (input) => input.message });

  it('refuses at creation a pin of a pool that does not exist, or tags no pool has; nothing is stored', async () => {
    const rt = quietRuntime({ agents: [echo] });
    const { flow } = await rt.createFlow(flowBody);
    for (const placement of [{ pin: 'gpu-a100' }, { affinity: { tags: ['gpu'] } }]) {
      await expect(
        rt.createRun(flow.flow_id, { pool_policy: { placement } }),
      ).rejects.toMatchObject({ code: 'POOL_UNAVAILABLE', retriable: false });
    }
    expect(await rt.store.listRuns()).toEqual([]);
    await rt.close();
  });

  it('records on each step where it was placed and why', async () => {
    const rt = quietRuntime({ agents: [echo], poolTags: ['cpu', 'eu'] });
    const { flow } = await rt.createFlow(flowBody);
    const cases = [
      [undefined, 'auto', 'auto; the only feasible pool'],
      [{ pin: 'local' }, 'pin', 'pinned to local; the only feasible pool'],
      [{ affinity: { tags: ['eu'] } }, 'affinity', 'has tags eu; the only feasible pool'],
    ] as const;
    for (const [placement, policy, reason] of cases) {
      const run = await rt.createRun(flow.flow_id, placement ? { pool_policy: { placement } } : {});
      const step = await rt.submitStep(run.run_id, {
        type: 'agent',
        input: { agent: 'echo', message: 'hi' },
      });
      await step.done;
      expect((await rt.getStep(step.step_id))?.placement_decision).toEqual({
        pool_id: 'local',
        replica_id: null,
        policy,
        reason,
      });
    }
    // An invocation outside a submitted run is placed too.
    const result = await rt.invoke('echo', 'x');
    const [root] = await rt.listSteps(result.runId);
    expect(root?.placement_decision).toMatchObject({ pool_id: 'local', policy: 'auto' });
    await rt.close();
  });

  it('refuses poolTags that are not strings', () => {
    expect(() => quietRuntime({ poolTags: [''] })).toThrow(TypeError);
  });
});

describe('the owner of a run', () => {
  it('is stored on the run, and its steps run under that user', async () => {
    const whoami = defineAgent({ name: 'whoami', handler: (_input, ctx) => ctx.userId });
    const rt = quietRuntime({ agents: [whoami] });
    const { flow } = await rt.createFlow({ name: 'owned', ast: { owned: true } });
    const run = await rt.createRun(flow.flow_id, {}, { userId: 'ann' });
    expect(run.user_id).toBe('ann');
    expect((await rt.getRun(run.run_id))?.user_id).toBe('ann');
    const step = await rt.submitStep(run.run_id, {
      type: 'agent',
      input: { agent: 'whoami', message: '?' },
    });
    await step.done;
    expect((await rt.getStep(step.step_id))?.output).toBe('ann');
    expect((await rt.createRun(flow.flow_id)).user_id).toBeNull();
    await rt.close();
  });
});

describe('facts naming a schema_uri (NERVE-4004)', () => {
  const bookingV1 = {
    type: 'object',
    properties: { city: { type: 'string' }, nights: { type: 'integer', minimum: 1 } },
    required: ['city'],
  };

  it('are checked against the schema registered at that URI; an unknown URI is refused', async () => {
    const rt = quietRuntime({ schemas: { 'urn:acme:booking:v1': bookingV1 } });
    rt.registerSchema('urn:acme:note:v1', { type: 'string', maxLength: 10 });
    const { flow } = await rt.createFlow({ name: 'uris', ast: { uris: true } });
    const run = await rt.createRun(flow.flow_id);
    const ok = await rt.appendFact(run.run_id, {
      type: 'booking',
      schema_uri: 'urn:acme:booking:v1',
      data: { city: 'Rome', nights: 2 },
    });
    expect(ok.schema_uri).toBe('urn:acme:booking:v1');
    // The type has no flow schema: the URI's schema alone decides.
    await expect(
      rt.appendFact(run.run_id, {
        type: 'booking',
        schema_uri: 'urn:acme:booking:v1',
        data: { nights: 0 },
      }),
    ).rejects.toMatchObject({
      code: 'SCHEMA_VIOLATION',
      issues: expect.arrayContaining([
        expect.objectContaining({ path: ['city'] }),
        expect.objectContaining({ path: ['nights'] }),
      ]) as unknown,
    });
    await expect(
      rt.appendFact(run.run_id, {
        type: 'note',
        schema_uri: 'urn:acme:note:v1',
        data: 'x'.repeat(11),
      }),
    ).rejects.toBeInstanceOf(SchemaViolationError);
    await expect(
      rt.appendFact(run.run_id, { type: 'booking', schema_uri: 'urn:unknown', data: {} }),
    ).rejects.toMatchObject({ code: 'SCHEMA_VIOLATION', issues: [{ path: ['schema_uri'] }] });
    expect(await rt.listFacts(run.run_id)).toEqual([ok]);
    await rt.close();
  });

  it('a URI names one schema for good; a schema that is not JSON Schema is refused', () => {
    const rt = quietRuntime({ schemas: { 'urn:a': bookingV1 } });
    expect(() => rt.registerSchema('urn:a', { ...bookingV1 })).not.toThrow();
    expect(() => rt.registerSchema('urn:a', { type: 'string' })).toThrow(ConflictError);
    expect(() => rt.registerSchema('urn:b', { type: 12 })).toThrow(SchemaViolationError);
    expect(() => quietRuntime({ schemas: { 'urn:c': { minimum: 'x' } } })).toThrow(
      SchemaViolationError,
    );
  });
});

describe('checkpoints (NERVE-4005)', () => {
  it("snapshot the run's live steps and the offsets of its logs", async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const waiter = defineAgent({
      name: 'waiter',
      async *handler() {
        yield 'one ';
        yield 'two ';
        await gate;
        return 'done';
      },
    });
    const rt = quietRuntime({ agents: [waiter] });
    const { flow } = await rt.createFlow(flowBody);
    const run = await rt.createRun(flow.flow_id);
    const pending = rt.invoke('waiter', 'x', rt.createContext({ runId: run.run_id }));
    let stepId = '';
    await until(() => {
      stepId = rt.system.list('step').find((e) => e.runId === run.run_id)?.id ?? '';
      return stepId !== '';
    });
    // Let the two tokens reach the log.
    for (let i = 0; i < 20 && (await rt.store.readEvents(stepId)).length < 3; i++) {
      await new Promise((r) => setImmediate(r));
    }

    const live = await rt.checkpoint(run.run_id, { label: 'mid-step' });
    expect(live.label).toBe('mid-step');
    expect(Object.keys(live.snapshots)).toEqual([stepId]);
    expect(live.snapshots[stepId]).toMatchObject({ status: 'active', value: 'running' });
    expect(live.log_offsets).toEqual({ [stepId]: 3 });

    release();
    await pending;
    const after = await rt.checkpoint(run.run_id);
    expect(after.snapshots).toEqual({});
    expect(after.log_offsets).toEqual({ [stepId]: 4 });
    expect((await rt.listCheckpoints(run.run_id)).map((c) => c.checkpoint_id)).toEqual([
      live.checkpoint_id,
      after.checkpoint_id,
    ]);
    await expect(rt.checkpoint('run_unknown')).rejects.toBeInstanceOf(NotFoundError);
    await rt.close();
  });
});

describe('cancelling and completing runs and steps', () => {
  /** An agent that streams a token, then waits until its step is cancelled. */
  const stuck = defineAgent({
    name: 'stuck',
    async *handler(_input, ctx) {
      yield 'waiting ';
      await new Promise((resolve) => {
        ctx.signal.addEventListener('abort', resolve);
      });
    },
  });

  it('a cancelled run ends every live step CANCELLED, then is cancelled itself', async () => {
    const rt = quietRuntime({ agents: [stuck] });
    const { flow } = await rt.createFlow(flowBody);
    const run = await rt.createRun(flow.flow_id);
    const steps = await Promise.all([
      rt.submitStep(run.run_id, { type: 'agent', input: { agent: 'stuck', message: 'a' } }),
      rt.submitStep(run.run_id, { type: 'agent', input: { agent: 'stuck', message: 'b' } }),
    ]);

    const cancelling = await rt.cancelRun(run.run_id);
    expect(cancelling.status).toBe('cancelling');
    await cancelling.done;
    await Promise.all(steps.map((s) => s.done));

    expect((await rt.getRun(run.run_id))?.status).toBe('cancelled');
    for (const s of steps) {
      const events = await rt.store.readEvents(s.step_id);
      expect(events.at(-1)).toMatchObject({ type: 'error', code: 'CANCELLED' });
      expect((await rt.store.getStep(s.step_id))?.status).toBe('cancelled');
    }
    await expect(rt.cancelRun(run.run_id)).rejects.toBeInstanceOf(ConflictError);
    await expect(
      rt.submitStep(run.run_id, { type: 'agent', input: { agent: 'stuck', message: 'c' } }),
    ).rejects.toBeInstanceOf(ConflictError);
    await rt.close();
  });

  it('cancels one step; completes a run with no live steps; refuses what does not apply', async () => {
    const rt = quietRuntime({ agents: [stuck] });
    const { flow } = await rt.createFlow(flowBody);
    const run = await rt.createRun(flow.flow_id);
    const step = await rt.submitStep(run.run_id, {
      type: 'agent',
      input: { agent: 'stuck', message: 'a' },
    });
    await expect(rt.completeRun(run.run_id)).rejects.toBeInstanceOf(ConflictError);

    expect(await rt.cancelStep(step.step_id)).toEqual({ status: 'cancelling' });
    await step.done;
    expect((await rt.store.getStep(step.step_id))?.status).toBe('cancelled');
    await expect(rt.cancelStep(step.step_id)).rejects.toBeInstanceOf(ConflictError);
    await expect(rt.cancelStep('step_unknown')).rejects.toBeInstanceOf(NotFoundError);

    expect(await rt.completeRun(run.run_id)).toMatchObject({ status: 'completed' });
    await expect(rt.completeRun(run.run_id)).rejects.toBeInstanceOf(ConflictError);
    await expect(rt.completeRun('run_unknown')).rejects.toBeInstanceOf(NotFoundError);
    await rt.close();
  });
});

describe('facts emitted by steps (NERVE-4004)', () => {
  it('are checked, stored as emitted by the step, then published as its fact event; worker steps too', async () => {
    const emitter = defineAgent({
      name: 'emitter',
      handler: async (input, ctx, runtime) => {
        const fact = await runtime.emitFact({ type: 'booking', data: input.args ?? {} }, ctx);
        return fact.fact_id;
      },
    });
    const rt = quietRuntime({
      agents: [
        emitter,
        defineAgent({
          name: 'worker-emitter',
          placement: 'worker',
          module: new URL('../fixtures/worker-agents.ts', import.meta.url).href,
          export: 'factEmitter',
        }),
      ],
      workers: { maxThreads: 1 },
    });
    const { flow } = await rt.createFlow(flowBody);
    const run = await rt.createRun(flow.flow_id);
    const ctx = rt.createContext({ runId: run.run_id });

    const ok = await rt.invoke<string>(
      'emitter',
      { message: 'x', args: { city: 'Berlin', seats: 2 } },
      ctx,
    );
    expect(ok.status).toBe('success');
    const [stored] = await rt.listFacts(run.run_id);
    expect(stored).toMatchObject({
      fact_id: ok.output,
      type: 'booking',
      data: { city: 'Berlin', seats: 2 },
      emitted_by_step: ok.stepId,
    });
    const events = await rt.store.readEvents(ok.stepId);
    expect(events.find((e) => e.type === 'fact')).toMatchObject({ fact: stored });

    const bad = await rt.invoke('emitter', { message: 'x', args: { city: 'Rome' } }, ctx);
    expect(bad.error?.code).toBe('SCHEMA_VIOLATION');
    expect((await rt.store.readEvents(bad.stepId)).some((e) => e.type === 'fact')).toBe(false);

    const fromWorker = await rt.invoke<string>(
      'worker-emitter',
      { message: 'x', args: { city: 'Oslo', seats: 1 } },
      ctx,
    );
    expect(fromWorker.status).toBe('success');
    const facts = await rt.listFacts(run.run_id);
    expect(facts.map((f) => f.data)).toEqual([
      { city: 'Berlin', seats: 2 },
      { city: 'Oslo', seats: 1 },
    ]);
    expect(facts[1]?.emitted_by_step).toBe(fromWorker.stepId);
    expect((await rt.store.readEvents(fromWorker.stepId)).some((e) => e.type === 'fact')).toBe(
      true,
    );
    await rt.close();
  });

  it('outside a step, emitFact is refused', async () => {
    const rt = quietRuntime();
    await expect(rt.emitFact({ type: 'x', data: 1 }, rt.createContext())).rejects.toThrow(
      /running step/,
    );
    await rt.close();
  });
});
