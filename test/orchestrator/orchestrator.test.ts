import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../src/actors/define-agent.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { defineMiddleware, respondWith } from '../../src/orchestrator/middleware.js';
import { createOrchestrator } from '../../src/orchestrator/orchestrator.js';
import { createMemoryRegistry } from '../../src/orchestrator/memory-registry.js';
import { createEmbeddingRouter } from '../../src/orchestrator/embedding-router.js';
import { registryHandlers } from '../../src/orchestrator/registry-handlers.js';
import { createRuleRouter } from '../../src/orchestrator/rule-router.js';
import type { Response } from '../../src/orchestrator/responder.js';
import { configuredPolicy } from '../../src/policy/configured-policy.js';
import { defineTool } from '../../src/tools/define-tool.js';
import type { Runtime, RuntimeOptions } from '../../src/runtime/runtime.js';
import { defineWorkflow, END } from '../../src/workflows/workflow-definition.js';
import { WorkflowEngine } from '../../src/workflows/workflow-engine.js';
import { quietRuntime } from '../support/runtime.js';

const runtimes: Runtime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.close()));
});

/** Messages each agent was given, with the history it got. */
const seen: { agent: string; message: string; history: readonly unknown[] }[] = [];

const planner = defineAgent({
  name: 'planner',
  description: 'plans trips: flights, trains and hotels',
  handler: (input) => {
    seen.push({ agent: 'planner', message: input.message, history: input.history ?? [] });
    return `plan for: ${input.message}`;
  },
});
const weather = defineAgent({
  name: 'weather',
  description: 'tells the weather forecast',
  handler: (input) => {
    seen.push({ agent: 'weather', message: input.message, history: input.history ?? [] });
    return 'sunny';
  },
});
const flaky = defineAgent({
  name: 'flaky',
  description: 'fails',
  handler: () => {
    throw new Error('flaky failed');
  },
});

const add = defineTool({
  name: 'add',
  description: 'adds two numbers',
  input: z.object({ a: z.number(), b: z.number() }),
  handler: ({ a, b }) => a + b,
});

function runtime(options: RuntimeOptions = {}): Runtime {
  const rt = quietRuntime({ agents: [planner, weather, flaky], tools: [add], ...options });
  runtimes.push(rt);
  return rt;
}

const rules = createRuleRouter({
  rules: [
    { pattern: /trip|flight/i, handler: 'planner' },
    { pattern: /weather|rain/i, handler: 'weather' },
    { pattern: /flaky/i, handler: 'flaky' },
  ],
});

const answer = (text: string): Response => ({ text, channel: 'test', media: [], metadata: {} });

describe('orchestrator.handle', () => {
  it('routes, invokes, remembers the exchange and answers; the next message recalls it', async () => {
    seen.length = 0;
    const rt = runtime();
    const door = createOrchestrator({ runtime: rt, router: rules });
    const first = await door.handle('Plan a trip to Berlin', {
      context: { userId: 'ann', sessionId: 's1' },
    });
    expect(first.route?.bestHandler).toBe('planner');
    expect(first.result?.status).toBe('success');
    expect(first.response.text).toBe('plan for: Plan a trip to Berlin');
    expect(first.error).toBeNull();
    expect(first.memoryErrors).toEqual([]);

    const second = await door.handle('and the weather there?', {
      context: { userId: 'ann', sessionId: 's1' },
    });
    expect(second.response.text).toBe('sunny');
    // The weather agent got the first exchange as its history, from memory.
    expect(seen.at(-1)?.history).toEqual([
      { role: 'user', content: 'Plan a trip to Berlin' },
      { role: 'assistant', content: 'plan for: Plan a trip to Berlin' },
    ]);
    expect(second.recalled?.conversation).toHaveLength(2);
    // The step's stored input holds the history the agent got.
    const step = await rt.store.getStep(second.result?.stepId ?? '');
    expect(step?.input).toEqual({
      message: 'and the weather there?',
      history: seen.at(-1)?.history,
    });
    // Another user recalls nothing of ann's.
    const other = await door.handle('weather?', { context: { userId: 'bob', sessionId: 's1' } });
    expect(other.recalled?.conversation).toEqual([]);
  });

  it('a request whose context cannot have memory (no session) is answered without it, and says why', async () => {
    const door = createOrchestrator({ runtime: runtime(), router: rules });
    const out = await door.handle('trip', { context: { userId: 'ann' } });
    expect(out.response.text).toBe('plan for: trip');
    expect(out.recalled?.conversation).toEqual([]);
    expect(out.memoryErrors).toHaveLength(1);
    expect(String(out.memoryErrors[0])).toMatch(/session/);
  });

  it('times each stage it ran, in order, with what the router found; onEvent sees the invocation’s events', async () => {
    const door = createOrchestrator({ runtime: runtime(), router: rules });
    const events: string[] = [];
    const out = await door.handle('trip', {
      context: { userId: 'ed', sessionId: 's' },
      onEvent: ({ path, event }) => events.push(`${path.join('>')}:${event.type}`),
    });
    expect(out.stages.map((s) => s.name)).toEqual([
      'memory.recall',
      'router.classify',
      'runtime.invoke',
      'memory.store',
      'responder.format',
    ]);
    for (const s of out.stages) expect(s.durationMs).toBeGreaterThanOrEqual(0);
    expect(out.stages[1]?.attributes['axon.route.intent']).toBe('planner');
    expect(out.stages[2]?.attributes['gen_ai.agent.name']).toBe('planner');
    expect(events).toEqual(['planner:started', 'planner:end']);
    // A throwing observer does not stop the request.
    const still = await door.handle('trip', {
      context: { userId: 'ed', sessionId: 's' },
      onEvent: () => {
        throw new Error('observer');
      },
    });
    expect(still.response.text).toBe('plan for: trip');
  });

  it('with memory: false neither recalls nor stores', async () => {
    const rt = runtime();
    const door = createOrchestrator({ runtime: rt, router: rules, memory: false });
    await door.handle('trip one', { context: { userId: 'cy', sessionId: 's1' } });
    const next = await door.handle('trip two', { context: { userId: 'cy', sessionId: 's1' } });
    expect(next.recalled).toBeNull();
    const ctx = rt.createContext({ userId: 'cy', sessionId: 's1' });
    expect((await rt.memory.recall('trip', ctx)).conversation).toEqual([]);
  });

  it('a message no rule fits answers wrong_handler without invoking anything', async () => {
    seen.length = 0;
    const door = createOrchestrator({ runtime: runtime(), router: rules, memory: false });
    const out = await door.handle('hello there');
    expect(out.route?.intent).toBe('unknown');
    expect(out.result?.status).toBe('wrong_handler');
    expect(out.response.text).toMatch(/No handler for: hello there/);
    expect(seen).toEqual([]);
  });

  it('a failing handler is formatted as an error, never thrown', async () => {
    const door = createOrchestrator({ runtime: runtime(), router: rules, memory: false });
    const out = await door.handle('flaky please');
    expect(out.result?.status).toBe('error');
    expect(out.response.text).toMatch(/flaky failed/);
  });

  it('keeps a registry of the runtime’s agents with their calls and health; a newly registered agent is routable', async () => {
    const rt = runtime();
    const registry = createMemoryRegistry();
    const door = createOrchestrator({
      runtime: rt,
      router: createEmbeddingRouter({ handlers: registryHandlers(registry), threshold: 0.2 }),
      registry,
      memory: false,
    });
    const out = await door.handle('book flights and hotels for my trip');
    expect(out.route?.bestHandler).toBe('planner');
    // The runtime's agents and tools are in it, tools with their schema.
    expect((await registry.list()).map((e) => `${e.kind}:${e.name}`)).toEqual([
      'agent:flaky',
      'agent:planner',
      'agent:weather',
      'tool:add',
    ]);
    expect((await registry.resolve('add', 'tool'))?.schema).toMatchObject({ type: 'object' });
    const entry = await registry.resolve('planner', 'agent');
    expect(entry?.stats.calls).toBe(1);
    expect(entry?.stats.successes).toBe(1);
    // Registered after the orchestrator was made: routable at once.
    rt.registerAgent(
      defineAgent({
        name: 'translator',
        description: 'translates text between languages french german',
        handler: () => 'bonjour',
      }),
    );
    const translated = await door.handle('translate this into french german languages');
    expect(translated.route?.bestHandler).toBe('translator');
    expect(translated.response.text).toBe('bonjour');
    // A workflow's role agents take a thread, not a message: never in the registry.
    const engine = new WorkflowEngine(rt, [
      defineWorkflow({
        name: 'translate',
        roles: { translator: { kind: 'engine', prompt: 'translates text between languages' } },
        moderator: () => END,
      }),
    ]);
    expect(rt.listAgents().map((a) => a.name)).toContain('workflow.translate.translator');
    await door.handle('translate this into french german languages');
    expect((await registry.list()).map((e) => e.name)).not.toContain(
      'workflow.translate.translator',
    );
    await engine.close();
  });

  it('a breaker that opens makes the agent unavailable in the registry, and the router no longer offers it', async () => {
    const rt = runtime();
    const registry = createMemoryRegistry();
    const door = createOrchestrator({
      runtime: rt,
      router: createEmbeddingRouter({ handlers: registryHandlers(registry), threshold: 0 }),
      registry,
      memory: false,
    });
    for (let i = 0; i < 3; i++) await door.handle('fails');
    const entry = await registry.resolve('flaky', 'agent');
    expect(entry?.stats.failures).toBe(3);
    expect(entry?.health).toBe('unavailable');
    const next = await door.handle('fails');
    expect(next.route?.handlers.map((h) => h.name)).not.toContain('flaky');
  });

  it('asks the policy about the request once: a per-user limit of 2 a minute lets two requests through, not three', async () => {
    const rt = runtime({
      policy: configuredPolicy({
        rate_limits: { per_user: { requests_per_minute: 2, on_exceed: 'reject' } },
      }),
    });
    const door = createOrchestrator({ runtime: rt, router: rules, memory: false });
    const ctx = { context: { userId: 'dee' } };
    expect((await door.handle('trip', ctx)).result?.status).toBe('success');
    expect((await door.handle('trip', ctx)).result?.status).toBe('success');
    const refused = await door.handle('trip', ctx);
    expect(refused.result).toBeNull();
    expect(refused.error).toMatchObject({ code: 'RATE_LIMITED' });
    expect(refused.response.text).toMatch(/error/i);
  });

  it('invokeChain passes each output on and stops at the first failure', async () => {
    const door = createOrchestrator({ runtime: runtime(), router: rules, memory: false });
    const ok = await door.invokeChain(['planner', 'planner'], 'x');
    expect(ok.output).toBe('plan for: plan for: x');
    const stopped = await door.invokeChain(['planner', 'flaky', 'weather'], 'x');
    expect(stopped.status).toBe('error');
    expect(stopped.handler).toBe('flaky');
  });

  it('refuses a message that is not a string, and ctx with context', async () => {
    const rt = runtime();
    const door = createOrchestrator({ runtime: rt, router: rules });
    await expect(door.handle(42 as never)).rejects.toThrow(TypeError);
    await expect(
      door.handle('x', { ctx: rt.createContext(), context: { userId: 'a' } }),
    ).rejects.toThrow(/ctx or context/);
    expect(() => createOrchestrator({ runtime: rt, router: {} as never })).toThrow(/router/);
  });
});

describe('middleware', () => {
  it('runs each stage by priority, in stage order; each may rewrite what passes', async () => {
    const order: string[] = [];
    const door = createOrchestrator({
      runtime: runtime(),
      router: rules,
      memory: false,
      middleware: [
        defineMiddleware({
          name: 'shout',
          stage: 'before_respond',
          run: ({ response }) => {
            order.push('shout');
            return { response: { ...response, text: response.text.toUpperCase() } };
          },
        }),
        defineMiddleware({
          name: 'second',
          stage: 'before_route',
          priority: 20,
          run: ({ message }) => {
            order.push('second');
            return { message: `${message} trip` };
          },
        }),
        defineMiddleware({
          name: 'first',
          stage: 'before_route',
          priority: 10,
          run: ({ message }) => {
            order.push('first');
            return { message: message.trim() };
          },
        }),
        defineMiddleware({
          name: 'look',
          stage: 'before_invoke',
          run: ({ route }) => {
            order.push(`look:${route.intent}`);
          },
        }),
        defineMiddleware({
          name: 'after',
          stage: 'after_invoke',
          run: ({ message, result }) => {
            order.push('after');
            return { message, result: { ...result, output: `${String(result.output)}!` } };
          },
        }),
      ],
    });
    const out = await door.handle('  plan ');
    expect(order).toEqual(['first', 'second', 'look:planner', 'after', 'shout']);
    expect(out.response.text).toBe('PLAN FOR: PLAN TRIP!');
  });

  it('a middleware may end the request with a response: nothing after it runs', async () => {
    seen.length = 0;
    const door = createOrchestrator({
      runtime: runtime(),
      router: rules,
      memory: false,
      middleware: [
        defineMiddleware({
          name: 'closed',
          stage: 'before_invoke',
          run: () => respondWith(answer('we are closed')),
        }),
      ],
    });
    const out = await door.handle('trip');
    expect(out.response.text).toBe('we are closed');
    expect(out.route?.bestHandler).toBe('planner');
    expect(out.result).toBeNull();
    expect(seen).toEqual([]);
  });

  it('a throwing middleware goes to on_error, whose middleware may answer; without one the error is formatted', async () => {
    const errors: string[] = [];
    const boom = defineMiddleware({
      name: 'boom',
      stage: 'after_invoke',
      run: () => {
        throw new Error('kaput');
      },
    });
    const door = createOrchestrator({
      runtime: runtime(),
      router: rules,
      memory: false,
      middleware: [
        boom,
        defineMiddleware({
          name: 'sorry',
          stage: 'on_error',
          run: ({ error, stage }) => {
            errors.push(`${stage}: ${(error as Error).message}`);
            return respondWith(answer('sorry'));
          },
        }),
      ],
    });
    const out = await door.handle('trip');
    expect(out.response.text).toBe('sorry');
    expect(errors).toEqual(['after_invoke: middleware "boom" (after_invoke) threw: kaput']);

    const bare = createOrchestrator({
      runtime: runtime(),
      router: rules,
      memory: false,
      middleware: [boom],
    });
    const plain = await bare.handle('trip');
    expect(plain.response.text).toMatch(/kaput/);
    expect(plain.error).toBeInstanceOf(Error);
  });

  it('refuses a middleware of an unknown stage or without a name', () => {
    expect(() =>
      defineMiddleware({ name: 'x', stage: 'later' as never, run: () => undefined }),
    ).toThrow(/stage/);
    expect(() => defineMiddleware({ name: '', stage: 'on_error', run: () => undefined })).toThrow(
      /name/,
    );
  });
});

describe('spans', () => {
  it('every stage is a span of the request’s trace; the invocation’s steps are under runtime.invoke', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    const rt = runtime({ tracer: provider.getTracer('axon') });
    const door = createOrchestrator({ runtime: rt, router: rules });
    await door.handle('trip to Rome', { context: { userId: 'u', sessionId: 's' } });
    await provider.forceFlush();
    const spans = exporter.getFinishedSpans();
    const byName = new Map(spans.map((s) => [s.name, s]));
    const root = byName.get('orchestrator.handle');
    expect(root).toBeDefined();
    for (const name of [
      'memory.recall',
      'router.classify',
      'runtime.invoke',
      'memory.store',
      'responder.format',
    ]) {
      const span = byName.get(name);
      expect(span, name).toBeDefined();
      expect(span?.spanContext().traceId).toBe(root?.spanContext().traceId);
      expect(span?.parentSpanContext?.spanId, name).toBe(root?.spanContext().spanId);
    }
    // The invocation's step (and what it delegates to) is under the runtime.invoke stage.
    const agentSpan = byName.get('invoke_agent planner');
    expect(agentSpan?.spanContext().traceId).toBe(root?.spanContext().traceId);
    expect(agentSpan?.parentSpanContext?.spanId).toBe(
      byName.get('runtime.invoke')?.spanContext().spanId,
    );
    expect(byName.get('router.classify')?.attributes['axon.route.intent']).toBe('planner');
    const order = spans
      .filter((s) => s.parentSpanContext?.spanId === root?.spanContext().spanId)
      .sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1])
      .map((s) => s.name);
    expect(order).toEqual([
      'memory.recall',
      'router.classify',
      'runtime.invoke',
      'memory.store',
      'responder.format',
    ]);

    // Streamed, the same: the agent's span under the request's runtime.invoke.
    exporter.reset();
    const chunks = [];
    for await (const c of door.stream('trip to Oslo', { context: { userId: 'u', sessionId: 's' } }))
      chunks.push(c);
    expect(chunks.at(-1)?.done).toBe(true);
    await provider.forceFlush();
    const streamed = new Map(exporter.getFinishedSpans().map((s) => [s.name, s]));
    expect(streamed.get('invoke_agent planner')?.parentSpanContext?.spanId).toBe(
      streamed.get('runtime.invoke')?.spanContext().spanId,
    );
    expect(streamed.get('runtime.invoke')?.parentSpanContext?.spanId).toBe(
      streamed.get('orchestrator.stream')?.spanContext().spanId,
    );
  });
});

describe('orchestrator.stream', () => {
  const talker = defineAgent({
    name: 'talker',
    description: 'talks',
    handler: async (input, ctx, rt) =>
      (
        await rt.chat(
          { messages: [{ role: 'user', content: input.message }], params: { max_tokens: 12 } },
          ctx,
        )
      ).text,
  });

  it('yields the handler’s tokens as they come, then the formatted response', async () => {
    const rt = runtime({ agents: [talker], engines: [createScriptedEngine({ tokenDelayMs: 0 })] });
    const door = createOrchestrator({
      runtime: rt,
      router: createRuleRouter({ rules: [{ pattern: /.*/, handler: 'talker' }] }),
      memory: false,
    });
    const chunks = [];
    for await (const c of door.stream('say something')) chunks.push(c);
    const last = chunks.at(-1);
    expect(last?.done).toBe(true);
    const text = chunks
      .slice(0, -1)
      .map((c) => c.text)
      .join('');
    expect(text.length).toBeGreaterThan(0);
    expect(last?.response?.text).toBe(text);
    expect(chunks.map((c) => c.index)).toEqual(chunks.map((_, i) => i));
  });

  it('a consumer that stops early cancels the invocation', async () => {
    const rt = runtime({ agents: [talker], engines: [createScriptedEngine({ tokenDelayMs: 5 })] });
    const door = createOrchestrator({
      runtime: rt,
      router: createRuleRouter({ rules: [{ pattern: /.*/, handler: 'talker' }] }),
      memory: false,
    });
    const ctx = rt.createContext();
    let taken = 0;
    for await (const c of door.stream('talk', { ctx })) {
      if (!c.done) taken++;
      if (taken === 2) break;
    }
    expect(taken).toBe(2);
    expect(ctx.isCancelled()).toBe(true);
  });
});
