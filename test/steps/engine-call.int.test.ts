import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../src/actors/define-agent.js';
import { SchemaViolationError } from '../../src/errors/schema-violation-error.js';
import type { Runtime, RuntimeOptions } from '../../src/runtime/runtime.js';
import { SimulatedClock } from '../../src/context/clock.js';
import type { ChatRequest } from '../../src/engines/chat-request.js';
import { createOpenAIEngine } from '../../src/engines/openai-engine.js';
import {
  startOpenAICompatibleServer,
  type OpenAICompatibleServer,
} from '../../src/engines/openai-compatible-server.js';
import { PRICE_TABLE, costOf, priceOf } from '../../src/engines/price-table.js';
import { modelHash, paramsHash, promptHash } from '../../src/engines/request-hash.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { CircuitOpenError } from '../../src/errors/circuit-open-error.js';
import { defineTool } from '../../src/tools/define-tool.js';
import type { StepEvent } from '../../src/streams/events.js';
import { quietRuntime } from '../support/runtime.js';

let server: OpenAICompatibleServer;
const runtimes: Runtime[] = [];

function runtime(options: RuntimeOptions): Runtime {
  const rt = quietRuntime(options);
  runtimes.push(rt);
  return rt;
}

beforeEach(async () => {
  server = await startOpenAICompatibleServer({
    engine: createScriptedEngine({ tokenDelayMs: 0, model: 'gpt-4o' }),
  });
});

afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((rt) => rt.close()));
  await server.close();
});

const request: ChatRequest = {
  messages: [{ role: 'user', content: 'Plan a trip to Berlin' }],
  model: 'gpt-4o',
  params: { max_tokens: 10 },
  seed: 42,
};

/** An agent that chats with `engine` and returns the text, or the error's code. */
const writer = defineAgent({
  name: 'writer',
  async handler(_input, ctx, rt) {
    try {
      const reply = await rt.chat({ ...request, engine: 'openai' }, ctx);
      return reply.text;
    } catch (err) {
      return { failed: (err as { code?: string }).code ?? 'unknown' };
    }
  },
});

function openai(maxRetries = 0) {
  return createOpenAIEngine({ baseURL: server.baseURL, model: 'gpt-4o', maxRetries });
}

describe('runtime.chat: an engine call inside a step', () => {
  it('streams the tokens into the step and reports the call in the step provenance (NERVE-4012, NERVE-4020)', async () => {
    const engine = openai();
    const rt = runtime({ engines: [engine], agents: [writer] });

    const result = await rt.invoke<string>('writer', 'go');

    expect(result.status).toBe('success');
    const events = await rt.store.readEvents(result.stepId);
    const tokens = events.flatMap((e) => (e.type === 'token' ? [e.t] : []));
    expect(tokens).toHaveLength(10);
    expect(tokens.join('')).toBe(result.output);
    const end = events.at(-1) as Extract<StepEvent, { type: 'end' }>;
    const price = priceOf(PRICE_TABLE, 'gpt-4o');
    const usage = events.find((e) => e.type === 'metrics');
    expect(usage).toMatchObject({ tokens_out: 10 });
    const tokensIn = (usage as { tokens_in: number }).tokens_in;
    expect(tokensIn).toBeGreaterThan(0);
    expect(end.provenance).toEqual({
      seed: 42,
      prompt_hash: promptHash(request),
      params_hash: paramsHash(request, engine),
      engine: 'openai',
      model_hash: modelHash('openai', 'gpt-4o'),
      pool_id: 'local',
      replica_id: null,
      tokens_in: tokensIn,
      tokens_out: 10,
      cost_usd: costOf(price, tokensIn, 10),
      decode_time_ms: expect.any(Number) as number,
      price_table: PRICE_TABLE.version,
    });
    expect(end.provenance.cost_usd).toBeGreaterThan(0);
    expect(end.budget_usage.cost_usd).toBe(end.provenance.cost_usd);
    const step = await rt.store.getStep(result.stepId);
    expect(step?.provenance?.prompt_hash).toBe(promptHash(request));
  });

  it('POLICY-3000: a call whose estimated cost does not fit fails before any request is sent', async () => {
    const rt = runtime({ engines: [openai()], agents: [writer] });
    const ctx = rt.createContext({ budgets: { maxCostUsd: 0.00001 } });

    const stream = rt.stream('writer', 'go', ctx);
    const escalations: unknown[] = [];
    for await (const { event } of stream) if (event.type === 'escalation') escalations.push(event);
    const result = await stream.result;

    expect(result.output).toEqual({ failed: 'BUDGET_EXCEEDED' });
    expect(server.requests).toHaveLength(0);
    expect(ctx.ledger.committed.costUsd).toBe(0);
    // POLICY-3002: the budget running out is an escalation of the step, with the reason.
    expect(escalations).toEqual([
      expect.objectContaining({
        target: 'budget:max_cost_usd',
        reason: expect.stringMatching(/budget exceeded: max_cost_usd/) as string,
      }),
    ]);
  });

  it('a malformed call is SCHEMA_VIOLATION before any request, and no verdict on the engine (regression: it opened the breaker)', async () => {
    const rt = runtime({ engines: [openai()] });
    const bad = [
      { engine: 'openai', messages: null },
      { engine: 'openai', messages: [{ role: 'user', content: 'x' }], params: { max_tokens: -1 } },
      { engine: 'openai', messages: [{ role: 'user', content: 'x' }], params: { max_tokens: 1.5 } },
      { engine: 'openai', messages: [] },
    ];
    for (const call of bad) {
      const err = await rt.chat(call as never, rt.createContext()).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SchemaViolationError);
    }
    expect(server.requests).toHaveLength(0);
    // Four refusals later the engine's breaker is still closed: a good call goes through.
    const ok = await rt.chat({ ...request, engine: 'openai' }, rt.createContext());
    expect(ok.tokensOut).toBe(10);
  });

  it('POLICY-3002: the engine breaker opens after three failures, refuses with an escalation, and a probe closes it', async () => {
    const clock = new SimulatedClock(Date.now());
    const rt = runtime({ engines: [openai()], agents: [writer], clock });
    server.fault(
      { kind: 'http_error', status: 500 },
      { kind: 'http_error', status: 502 },
      { kind: 'http_error', status: 503 },
    );
    for (let i = 0; i < 3; i++) {
      expect((await rt.invoke('writer', 'go')).output).toEqual({ failed: 'INTERNAL' });
    }
    expect(server.requests).toHaveLength(3);

    const refused = await rt.invoke('writer', 'go');
    expect(refused.output).toEqual({
      failed: new CircuitOpenError('engine:openai', 'open', 0).code,
    });
    expect(server.requests).toHaveLength(3);
    const events = await rt.store.readEvents(refused.stepId);
    expect(events.find((e) => e.type === 'escalation')).toMatchObject({
      target: 'engine:openai',
      breaker_state: 'open',
    });

    clock.advance(60_000);
    const probe = await rt.invoke<string>('writer', 'go');
    expect(typeof probe.output).toBe('string');
    expect(server.requests).toHaveLength(4);
    expect(typeof (await rt.invoke('writer', 'go')).output).toBe('string');
  });

  it('a worker-placed agent chats through the host: its own token first, then the engine tokens, in order', async () => {
    const rt = runtime({
      engines: [openai()],
      agents: [
        defineAgent({
          name: 'chatter',
          placement: 'worker',
          module: new URL('../fixtures/worker-agents.ts', import.meta.url).href,
          export: 'chatter',
        }),
      ],
      workers: { maxThreads: 1 },
    });
    const result = await rt.invoke<{ text: string; promptHash: string }>('chatter', {
      message: 'hello',
      args: { engine: 'openai' },
    });

    expect(result.status).toBe('success');
    const events = await rt.store.readEvents(result.stepId);
    const tokens = events.flatMap((e) => (e.type === 'token' ? [e.t] : []));
    expect(tokens[0]).toBe('thinking: ');
    expect(tokens.slice(1).join('')).toBe(result.output?.text);
    expect(tokens).toHaveLength(7);
    expect(server.requests).toHaveLength(1);
    const end = events.at(-1) as Extract<StepEvent, { type: 'end' }>;
    expect(end.provenance.engine).toBe('openai');
    expect(end.provenance.prompt_hash).toBe(result.output?.promptHash);
    expect(end.budget_usage.tokens_out).toBe(6);
  });
});

describe('llm_plan and llm_call steps (NERVE-4010, NERVE-4011)', () => {
  let added: number;
  const add = defineTool({
    name: 'add',
    description: 'Adds two numbers',
    input: z.object({ a: z.number(), b: z.number() }).strict(),
    handler: ({ a, b }) => {
      added++;
      return { sum: a + b };
    },
  });
  beforeEach(() => {
    added = 0;
  });

  it('llm_plan emits only valid suggestions as tool_suggest, reports the invalid ones, and runs nothing', async () => {
    const planner = createScriptedEngine({
      tokenDelayMs: 0,
      script: () => ({
        text: 'Adding.',
        toolCalls: [
          { name: 'add', arguments: { a: 2, b: 40 } },
          { name: 'add', arguments: { a: 'two', b: 40 } },
          { name: 'rm', arguments: { path: '/' } },
          { name: 'add', arguments: '{"a": 1,' },
        ],
      }),
    });
    const rt = runtime({ engines: [planner], tools: [add] });

    const result = await rt.llmPlan({
      messages: [{ role: 'user', content: 'What is 2 + 40?' }],
      tools: ['add'],
    });

    expect(result.status).toBe('succeeded');
    expect(result.output?.suggestions).toEqual([{ tool: 'add', args: { a: 2, b: 40 } }]);
    expect(result.output?.rejected.map((r) => [r.tool, r.errors[0]?.path])).toEqual([
      ['add', ['a']],
      ['rm', []],
      ['add', []],
    ]);
    expect(added).toBe(0);
    const events = await rt.store.readEvents(result.stepId);
    const suggests = events.filter((e) => e.type === 'tool_suggest');
    expect(suggests).toEqual([
      expect.objectContaining({ tool: 'add', args: { a: 2, b: 40 }, reason: 'Adding.' }),
    ]);
    expect(events.filter((e) => e.type === 'narration')).toHaveLength(3);
    const step = await rt.store.getStep(result.stepId);
    expect(step?.type).toBe('llm_plan');
  });

  it('llm_call runs the tool calls through the OpenAI binding and answers with their results', async () => {
    await server.close();
    server = await startOpenAICompatibleServer({
      engine: createScriptedEngine({
        tokenDelayMs: 0,
        script: (req) => {
          const answer = req.messages.find((m) => m.role === 'tool');
          if (answer) return `The sum is ${(JSON.parse(answer.content) as { sum: number }).sum}.`;
          return {
            toolCalls: [
              { name: 'add', arguments: { a: 2, b: 40 } },
              { name: 'add', arguments: { a: 'x' } },
            ],
          };
        },
      }),
    });
    const rt = runtime({ engines: [openai()], tools: [add] });

    const result = await rt.llmCall({
      engine: 'openai',
      messages: [{ role: 'user', content: 'What is 2 + 40?' }],
      tools: ['add'],
    });

    expect(result.status).toBe('succeeded');
    expect(result.output?.text).toBe('The sum is 42.');
    expect(result.output?.tool_runs).toEqual([
      { tool: 'add', args: { a: 2, b: 40 }, status: 'success', output: { sum: 42 }, error: null },
      {
        tool: 'add',
        args: { a: 'x' },
        status: 'error',
        output: null,
        error: expect.objectContaining({ code: 'SCHEMA_VIOLATION' }) as unknown,
      },
    ]);
    // The bad call never ran; the good one ran once, as a tool_call child step.
    expect(added).toBe(1);
    expect(server.requests).toHaveLength(2);
    const second = server.requests[1]?.body as { messages: { role: string }[] };
    expect(second.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool']);
    const children = (await rt.store.listSteps(result.runId)).filter((s) => s.type === 'tool_call');
    expect(children).toHaveLength(2);
  });

  it('bad input and unknown tools fail the step before the engine is called', async () => {
    const rt = runtime({ engines: [openai()], tools: [add] });

    const bad = await rt.llmCall({ engine: 'openai', messages: [] });
    expect(bad.status).toBe('failed');
    expect(bad.error?.code).toBe('SCHEMA_VIOLATION');
    expect(bad.error?.details).toMatchObject({
      issues: [expect.objectContaining({ path: ['messages'] })],
    });

    const unknown = await rt.llmPlan({
      engine: 'openai',
      messages: [{ role: 'user', content: 'x' }],
      tools: ['add', 'nope'],
    });
    expect(unknown.error?.code).toBe('NOT_FOUND');

    const noTools = await rt.llmPlan({
      engine: 'openai',
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(noTools.error?.code).toBe('SCHEMA_VIOLATION');

    const noEngine = await rt.llmCall({
      engine: 'gpt-9',
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(noEngine.error?.code).toBe('NOT_FOUND');
    expect(server.requests).toHaveLength(0);
  });
});
