import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../src/actors/define-agent.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { createOpenAIEngine } from '../../src/engines/openai-engine.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { NotFoundError } from '../../src/errors/not-found-error.js';
import { ReplayMismatchError } from '../../src/errors/replay-mismatch-error.js';
import { SchemaViolationError } from '../../src/errors/schema-violation-error.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import { redisStore } from '../../src/store/redis/redis-store.js';
import type { StepRecord } from '../../src/store/records.js';
import type { RunStore } from '../../src/store/run-store.js';
import { sqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { redisUrl } from '../support/redis.js';
import { useTestResources } from '../support/test-resources.js';
import { quietRuntime } from '../support/runtime.js';

const resources = useTestResources('replay');

const runtimes: Runtime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.close()));
});

/**
 * A runtime with an `openai` engine on the local OpenAI-compatible server, the tool `add`
 * (counting its calls), and the agent `planner`, which asks the engine the same question
 * twice (repeated identical calls must stay distinct) and then calls `add`.
 */
function setup(store: RunStore): { rt: Runtime; adds: () => number } {
  let adds = 0;
  const add = defineTool({
    name: 'add',
    description: 'Adds two numbers',
    input: z.strictObject({ a: z.number(), b: z.number() }),
    handler: ({ a, b }) => {
      adds++;
      return { sum: a + b };
    },
  });
  const planner = defineAgent({
    name: 'planner',
    handler: async (input, ctx, runtime) => {
      const ask = {
        engine: 'openai',
        messages: [{ role: 'user' as const, content: input.message }],
        params: { max_tokens: 8 },
      };
      const first = await runtime.chat(ask, ctx);
      const second = await runtime.chat(ask, ctx);
      const sum = await runtime.callTool<{ sum: number }>('add', { a: 2, b: 40 }, ctx);
      return { first: first.text, second: second.text, sum: sum.output?.sum ?? null };
    },
  });
  const rt = quietRuntime({
    store,
    agents: [planner],
    tools: [add],
    engines: [
      createOpenAIEngine({ baseURL: resources.server.baseURL, model: 'scripted', maxRetries: 0 }),
      createScriptedEngine({ tokenDelayMs: 0 }),
    ],
  });
  runtimes.push(rt);
  return { rt, adds: () => adds };
}

/** The token texts of a step's log, in order. */
async function tokens(rt: Runtime, stepId: string): Promise<string[]> {
  const events = await rt.store.readEvents(stepId);
  return events.flatMap((e) => (e.type === 'token' ? [e.t] : []));
}

/** Submits a step and waits for its end; the stored step. */
async function runStep(rt: Runtime, runId: string, body: unknown): Promise<StepRecord> {
  const submitted = await rt.submitStep(runId, body);
  await submitted.done;
  const step = await rt.store.getStep(submitted.step_id);
  if (!step) throw new Error('the step is not stored');
  return step;
}

const plannerStep = (token: string, message = 'Plan a trip to Berlin'): unknown => ({
  type: 'agent',
  client_token: token,
  input: { agent: 'planner', message },
});

const llmStep = (token: string, content = 'Name three rivers'): unknown => ({
  type: 'llm_call',
  client_token: token,
  input: { messages: [{ role: 'user', content }], params: { max_tokens: 16 } },
});

describe.each([
  ['memory', (): RunStore => memoryStore()],
  ['sqlite', (): RunStore => sqliteStore(resources.file())],
  ['redis', (): RunStore => redisStore({ url: redisUrl(), prefix: resources.prefix() })],
])('record, replay and strict_replay on the %s store', (_name, make) => {
  it('record stores every engine and tool call keyed by actor path and call sequence, not by prompt', async () => {
    const { rt } = setup(make());
    const { flow } = await rt.createFlow({ name: 'trip', ast: { id: randomUUID() } });
    const run = await rt.createRun(flow.flow_id, { seed: 7 });
    const step = await runStep(rt, run.run_id, plannerStep('c-1'));
    expect(step.status).toBe('succeeded');

    const recordings = await rt.store.listRecordings(run.run_id);
    // Paths are below the submitted step: the planner itself is [], its tool call ['add'].
    expect(recordings.map((r) => [r.kind, r.name, r.actor_path.join('/'), r.seq])).toEqual([
      ['engine', 'openai', '', 1],
      ['engine', 'openai', '', 2],
      ['tool', 'add', 'add', 1],
    ]);
    const [first, second] = recordings;
    // The same prompt twice: one hash, two recordings.
    expect(first?.inputs.prompt_hash).toBe(second?.inputs.prompt_hash);
    expect(first?.inputs).toMatchObject({ engine: 'openai', model: 'scripted', seed: 7 });
    expect(recordings[2]?.output).toEqual({ value: { sum: 42 }, error: null });
  });

  it('replay serves every call from the recording: no engine request, no tool call, equal outputs (NERVE-4021)', async () => {
    const { rt, adds } = setup(make());
    const { flow } = await rt.createFlow({ name: 'trip', ast: { id: randomUUID() } });
    const recorded = await rt.createRun(flow.flow_id, { seed: 7 });
    const original = await runStep(rt, recorded.run_id, plannerStep('c-1'));
    const originalTokens = await tokens(rt, original.step_id);
    const requestsAfterRecord = resources.server.requests.length;
    const addsAfterRecord = adds();

    const replay = await rt.createRun(flow.flow_id, { mode: 'replay', replay_of: recorded.run_id });
    expect(replay).toMatchObject({ mode: 'replay', replay_of: recorded.run_id, seed: 7 });
    const replayed = await runStep(rt, replay.run_id, plannerStep('c-1'));

    expect(replayed.status).toBe('succeeded');
    expect(replayed.output).toEqual(original.output);
    expect(await tokens(rt, replayed.step_id)).toEqual(originalTokens);
    expect(resources.server.requests.length).toBe(requestsAfterRecord);
    expect(adds()).toBe(addsAfterRecord);
    // NERVE-4020: the replayed step reports the recorded call's provenance.
    expect(replayed.provenance).toMatchObject({
      seed: 7,
      engine: 'openai',
      prompt_hash: original.provenance?.prompt_hash,
      params_hash: original.provenance?.params_hash,
      model_hash: original.provenance?.model_hash,
    });
    expect(replayed.budget_usage.tokens_out).toBe(original.budget_usage.tokens_out);
  });

  it('strict_replay reproduces the token stream byte for byte (NERVE-4021)', async () => {
    const { rt } = setup(make());
    const { flow } = await rt.createFlow({ name: 'rivers', ast: { id: randomUUID() } });
    const recorded = await rt.createRun(flow.flow_id, { seed: 1234 });
    const original = await runStep(rt, recorded.run_id, llmStep('t-1'));
    const strict = await rt.createRun(flow.flow_id, {
      mode: 'strict_replay',
      seed: 1234,
      replay_of: recorded.run_id,
    });
    const replayed = await runStep(rt, strict.run_id, llmStep('t-1'));
    expect(replayed.status).toBe('succeeded');
    const a = Buffer.from((await tokens(rt, original.step_id)).join(''), 'utf8');
    const b = Buffer.from((await tokens(rt, replayed.step_id)).join(''), 'utf8');
    expect(a.length).toBeGreaterThan(0);
    expect(b.equals(a)).toBe(true);
    expect(replayed.output).toEqual(original.output);
  });
});

describe('strict_replay refuses what it cannot reproduce (NERVE-4022)', () => {
  async function recordedRun(rt: Runtime): Promise<{ flowId: string; runId: string }> {
    const { flow } = await rt.createFlow({ name: 'rivers', ast: { id: randomUUID() } });
    const run = await rt.createRun(flow.flow_id, { seed: 99 });
    const step = await runStep(rt, run.run_id, llmStep('t-1'));
    expect(step.status).toBe('succeeded');
    return { flowId: flow.flow_id, runId: run.run_id };
  }

  it('a run whose seed differs from the recording is refused at creation', async () => {
    const { rt } = setup(memoryStore());
    const { flowId, runId } = await recordedRun(rt);
    const err = await rt
      .createRun(flowId, { mode: 'strict_replay', seed: 100, replay_of: runId })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReplayMismatchError);
    expect(err).toMatchObject({
      code: 'REPLAY_MISMATCH',
      field: 'seed',
      details: { expected: 99, actual: 100 },
    });
    // A plain replay takes another seed: it serves the recording regardless.
    await expect(
      rt.createRun(flowId, { mode: 'replay', seed: 100, replay_of: runId }),
    ).resolves.toMatchObject({ mode: 'replay', seed: 100 });
  });

  it('a run under another policy than the recording is refused at creation; the policy defaults to it', async () => {
    const { rt } = setup(memoryStore());
    const { flow } = await rt.createFlow({ name: 'rivers', ast: { id: randomUUID() } });
    const policy = { tools: { allow: ['add'], deny: [] } };
    const recorded = await rt.createRun(flow.flow_id, { seed: 5, policy });
    const err = await rt
      .createRun(flow.flow_id, { mode: 'strict_replay', replay_of: recorded.run_id, policy: {} })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReplayMismatchError);
    expect(err).toMatchObject({ field: 'policy', details: { expected: policy, actual: {} } });
    await expect(
      rt.createRun(flow.flow_id, { mode: 'strict_replay', replay_of: recorded.run_id }),
    ).resolves.toMatchObject({ policy, seed: 5 });
  });

  it.each([
    ['prompt_hash', llmStep('t-1', 'Name three mountains')],
    [
      'params_hash',
      {
        type: 'llm_call',
        client_token: 't-1',
        input: {
          messages: [{ role: 'user', content: 'Name three rivers' }],
          params: { max_tokens: 17 },
        },
      },
    ],
    [
      'model',
      {
        type: 'llm_call',
        client_token: 't-1',
        input: {
          model: 'scripted-2',
          messages: [{ role: 'user', content: 'Name three rivers' }],
          params: { max_tokens: 16 },
        },
      },
    ],
    ['recording', llmStep('t-unknown')],
  ])(
    'a step whose %s differs ends with REPLAY_MISMATCH naming it, before any token',
    async (field, body) => {
      const { rt } = setup(memoryStore());
      const { flowId, runId } = await recordedRun(rt);
      const strict = await rt.createRun(flowId, { mode: 'strict_replay', replay_of: runId });
      const step = await runStep(rt, strict.run_id, body);
      expect(step.status).toBe('failed');
      expect(step.error).toMatchObject({ code: 'REPLAY_MISMATCH', retriable: false });
      expect(step.error?.details).toMatchObject({ field });
      expect(step.error?.message).toContain(field);
      expect(await tokens(rt, step.step_id)).toEqual([]);
    },
  );

  it('an engine, a replica or tool arguments that differ are named too', async () => {
    const store = memoryStore();
    const { rt } = setup(store);
    const { flowId, runId } = await recordedRun(rt);
    const tool = (b: number): unknown => ({
      type: 'tool_call',
      client_token: 't-tool',
      input: { tool: 'add', args: { a: 1, b } },
    });
    expect((await runStep(rt, runId, tool(2))).status).toBe('succeeded');

    const strict = await rt.createRun(flowId, { mode: 'strict_replay', replay_of: runId });
    const otherEngine = await runStep(rt, strict.run_id, {
      type: 'llm_call',
      client_token: 't-1',
      input: {
        engine: 'openai',
        messages: [{ role: 'user', content: 'Name three rivers' }],
        params: { max_tokens: 16 },
      },
    });
    expect(otherEngine.error).toMatchObject({
      code: 'REPLAY_MISMATCH',
      details: { field: 'engine' },
    });
    const otherArgs = await runStep(rt, strict.run_id, tool(3));
    expect(otherArgs.error).toMatchObject({
      code: 'REPLAY_MISMATCH',
      details: { field: 'args_hash' },
    });
    const again = await rt.createRun(flowId, { mode: 'strict_replay', replay_of: runId });
    expect((await runStep(rt, again.run_id, tool(2))).output).toEqual({ sum: 3 });

    // Another replica of the pool, on the same store: its calls name another replica.
    const elsewhere = quietRuntime({
      store,
      replicaId: 'replica-2',
      engines: [createScriptedEngine({ tokenDelayMs: 0 })],
    });
    runtimes.push(elsewhere);
    const there = await elsewhere.createRun(flowId, { mode: 'strict_replay', replay_of: runId });
    const moved = await runStep(elsewhere, there.run_id, llmStep('t-1'));
    expect(moved.error).toMatchObject({
      code: 'REPLAY_MISMATCH',
      details: { field: 'replica', expected: null, actual: 'replica-2' },
    });
  });

  it('a difference deep in the step ends the whole step, even when its agent catches the failed call', async () => {
    const { rt } = setup(memoryStore());
    // Calls `add` with `b` from its args and asks the engine `asks` times; a failed tool call
    // it keeps as a value (as `callTool` returns it) and goes on.
    const forgiving = defineAgent({
      name: 'forgiving',
      handler: async (input, ctx, runtime) => {
        const b = Number(input.args?.['b'] ?? 2);
        const sum = await runtime.callTool<{ sum: number }>('add', { a: 1, b }, ctx);
        const texts: string[] = [];
        for (let i = 0; i < Number(input.args?.['asks'] ?? 2); i++) {
          const r = await runtime.chat(
            { messages: [{ role: 'user', content: `ask ${i}` }], params: { max_tokens: 4 } },
            ctx,
          );
          texts.push(r.text);
        }
        return { sum: sum.output?.sum ?? null, failed: sum.error?.code ?? null, texts };
      },
    });
    rt.registerAgent(forgiving);
    const step = (args: Record<string, number>): unknown => ({
      type: 'agent',
      client_token: 'f-1',
      input: { agent: 'forgiving', message: 'go', args },
    });
    const { flow } = await rt.createFlow({ name: 'forgiving', ast: { id: randomUUID() } });
    const recorded = await rt.createRun(flow.flow_id, { seed: 3 });
    const original = await runStep(rt, recorded.run_id, step({ b: 2, asks: 2 }));
    expect(original.status).toBe('succeeded');
    const strict = () =>
      rt.createRun(flow.flow_id, { mode: 'strict_replay', replay_of: recorded.run_id });

    // Other arguments to the tool: the agent would end well with `failed: REPLAY_MISMATCH`.
    const otherArgs = await runStep(rt, (await strict()).run_id, step({ b: 3, asks: 2 }));
    expect(otherArgs).toMatchObject({
      status: 'failed',
      error: { code: 'REPLAY_MISMATCH', details: { field: 'args_hash' } },
    });
    // One engine call fewer than recorded: its stream could not be the recorded one.
    const fewer = await runStep(rt, (await strict()).run_id, step({ b: 2, asks: 1 }));
    expect(fewer).toMatchObject({
      status: 'failed',
      error: { code: 'REPLAY_MISMATCH', details: { field: 'recording', expected: 2, actual: 1 } },
    });
    // The same step replays.
    const same = await runStep(rt, (await strict()).run_id, step({ b: 2, asks: 2 }));
    expect(same).toMatchObject({ status: 'succeeded', output: original.output });
  });

  it('the same differences pass a plain replay, which serves the recording as it is', async () => {
    const { rt } = setup(memoryStore());
    const { flowId, runId } = await recordedRun(rt);
    const original = (await rt.store.listSteps(runId))[0];
    const replay = await rt.createRun(flowId, { mode: 'replay', replay_of: runId });
    const step = await runStep(rt, replay.run_id, llmStep('t-1', 'Name three mountains'));
    expect(step.status).toBe('succeeded');
    expect(step.output).toEqual(original?.output);
  });

  it('a replay needs a recorded run that exists', async () => {
    const { rt } = setup(memoryStore());
    const { flow } = await rt.createFlow({ name: 'f', ast: { id: randomUUID() } });
    await expect(rt.createRun(flow.flow_id, { mode: 'replay' })).rejects.toBeInstanceOf(
      SchemaViolationError,
    );
    await expect(
      rt.createRun(flow.flow_id, { mode: 'record', replay_of: 'run_x' }),
    ).rejects.toBeInstanceOf(SchemaViolationError);
    await expect(
      rt.createRun(flow.flow_id, { mode: 'strict_replay', replay_of: 'run_missing' }),
    ).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('record and replay from a worker thread', () => {
  it("a worker-placed agent's engine calls are recorded on the host and served from the recording", async () => {
    const chatter = defineAgent({
      name: 'chatter',
      placement: 'worker',
      module: new URL('../fixtures/worker-agents.ts', import.meta.url).href,
      export: 'chatter',
    });
    const rt = quietRuntime({
      agents: [chatter],
      engines: [
        createOpenAIEngine({ baseURL: resources.server.baseURL, model: 'scripted', maxRetries: 0 }),
      ],
      workers: { maxThreads: 1 },
    });
    runtimes.push(rt);
    const { flow } = await rt.createFlow({ name: 'thread', ast: { id: randomUUID() } });
    const recorded = await rt.createRun(flow.flow_id, { seed: 11 });
    const body = {
      type: 'agent',
      client_token: 'w-1',
      input: { agent: 'chatter', message: 'Hello from a thread', args: { engine: 'openai' } },
    };
    const original = await runStep(rt, recorded.run_id, body);
    expect(original.status).toBe('succeeded');
    expect((await rt.store.listRecordings(recorded.run_id)).map((r) => r.name)).toEqual(['openai']);
    const requests = resources.server.requests.length;

    const strict = await rt.createRun(flow.flow_id, {
      mode: 'strict_replay',
      replay_of: recorded.run_id,
    });
    const replayed = await runStep(rt, strict.run_id, body);
    expect(replayed.status).toBe('succeeded');
    expect(replayed.output).toEqual(original.output);
    expect(await tokens(rt, replayed.step_id)).toEqual(await tokens(rt, original.step_id));
    expect(resources.server.requests.length).toBe(requests);
  });
});

describe('determinism suite: 64 fixed seeds, record then strict_replay (NERVE-4021)', () => {
  it.each([
    ['memory', (): RunStore => memoryStore()],
    ['sqlite', (): RunStore => sqliteStore(resources.file())],
    ['redis', (): RunStore => redisStore({ url: redisUrl(), prefix: resources.prefix() })],
  ])(
    'on the %s store, every stream replays token for token and byte for byte, and the same seed records the same stream twice',
    async (_name, make) => {
      const { rt } = setup(make());
      const { flow } = await rt.createFlow({ name: 'determinism', ast: { id: randomUUID() } });
      const streams = new Set<string>();
      for (let seed = 1; seed <= 64; seed++) {
        const body = llmStep(`seed-${seed}`, `Describe the city of seed ${seed % 7}`);
        const recorded = await rt.createRun(flow.flow_id, { seed });
        const again = await rt.createRun(flow.flow_id, { seed });
        const strict = await rt.createRun(flow.flow_id, {
          mode: 'strict_replay',
          seed,
          replay_of: recorded.run_id,
        });
        // Each stream as bytes, token by token: a length before each token's UTF-8, so
        // streams equal here have the same tokens with the same boundaries.
        const bytes: Buffer[] = [];
        for (const run of [recorded, again, strict]) {
          const step = await runStep(rt, run.run_id, body);
          expect(step.status, `seed ${seed}, run ${run.mode}`).toBe('succeeded');
          const parts = (await tokens(rt, step.step_id)).map((t) => Buffer.from(t, 'utf8'));
          bytes.push(
            Buffer.concat(parts.flatMap((p) => [Buffer.from(`${p.length}:`, 'latin1'), p])),
          );
        }
        const [a, b, c] = bytes as [Buffer, Buffer, Buffer];
        expect(a.length, `seed ${seed}`).toBeGreaterThan(0);
        expect(b.equals(a), `seed ${seed}: a second recording`).toBe(true);
        expect(c.equals(a), `seed ${seed}: strict replay`).toBe(true);
        streams.add(a.toString('hex'));
      }
      // The seed decides the text: 64 seeds over 7 prompts give (nearly) 64 different streams.
      expect(streams.size).toBeGreaterThan(56);
    },
  );
});
