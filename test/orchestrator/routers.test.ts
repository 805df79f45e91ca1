import { afterEach, describe, expect, it } from 'vitest';
import { createContext } from '../../src/context/create-context.js';
import type { ExecContext } from '../../src/context/exec-context.js';
import type { ChatRequest } from '../../src/engines/chat-request.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { BudgetExceededError } from '../../src/errors/budget-exceeded-error.js';
import { EngineError } from '../../src/errors/engine-error.js';
import type { Embedder } from '../../src/memory/embedders.js';
import { hashedEmbedder } from '../../src/memory/embedders.js';
import { createEmbeddingRouter } from '../../src/orchestrator/embedding-router.js';
import {
  HYBRID_PREFILTER_TOP_K,
  createHybridRouter,
} from '../../src/orchestrator/hybrid-router.js';
import { createLlmRouter, type RouterChat } from '../../src/orchestrator/llm-router.js';
import type { HandlerDescription, HandlerSource } from '../../src/orchestrator/route-result.js';
import { createRuleRouter } from '../../src/orchestrator/rule-router.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { quietRuntime } from '../support/runtime.js';
import {
  CONFORMANCE_HANDLERS,
  describeRouter,
  expectRouteInvariants,
  keywordChoice,
  keywords,
} from './router.conformance.js';

const runtimes: Runtime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.close()));
});

/** A source of a fixed list of handlers. */
function listed(handlers: readonly HandlerDescription[]): HandlerSource {
  return { handlers: () => Promise.resolve(handlers) };
}

/** A source whose list the test can change. */
function mutable(initial: readonly HandlerDescription[]) {
  const list = [...initial];
  return { list, source: { handlers: () => Promise.resolve([...list]) } satisfies HandlerSource };
}

/** The handlers a router's system message lists (`- name: description`). */
function offeredIn(request: ChatRequest): HandlerDescription[] {
  const system = request.messages.find((m) => m.role === 'system')?.content ?? '';
  return [...system.matchAll(/^- ([^:\n]+): (.*)$/gm)].map((m) => ({
    name: m[1] ?? '',
    description: m[2] ?? '',
  }));
}

/** The message the router asks about: its first user message. */
function askedAbout(request: ChatRequest): string {
  return request.messages.find((m) => m.role === 'user')?.content ?? '';
}

/** A scripted model that routes by shared keywords among the handlers it is offered. */
function oracle(request: ChatRequest): string {
  const choice = keywordChoice(offeredIn(request), askedAbout(request));
  return JSON.stringify({
    handler: choice ?? 'unknown',
    confidence: choice === null ? 0 : 0.9,
    reason: 'shared keywords',
  });
}

interface ModelSetup {
  readonly runtime: Runtime;
  readonly chat: RouterChat;
  readonly requests: ChatRequest[];
  readonly ctx: () => ExecContext;
}

/** A real runtime whose scripted engine answers by `script`; its requests recorded. */
function model(script: (request: ChatRequest, nth: number) => string): ModelSetup {
  const requests: ChatRequest[] = [];
  const engine = createScriptedEngine({
    tokenDelayMs: 0,
    script: (request) => {
      requests.push(request);
      return script(request, requests.length);
    },
  });
  const runtime = quietRuntime({ engines: [engine] });
  runtimes.push(runtime);
  return {
    runtime,
    requests,
    chat: (call, ctx, options) => runtime.chat(call, ctx, options),
    ctx: () => runtime.createContext(),
  };
}

describeRouter('rule', (handlers) =>
  createRuleRouter({
    rules: handlers.map((h) => ({
      pattern: new RegExp(`\\b(?:${keywords(h.description).join('|')})\\b`, 'i'),
      handler: h.name,
    })),
  }),
);

describeRouter('embedding', (handlers) => createEmbeddingRouter({ handlers: listed(handlers) }));

describeRouter('llm', (handlers) =>
  createLlmRouter({ handlers: listed(handlers), chat: model(oracle).chat }),
);

describeRouter('hybrid', (handlers) =>
  createHybridRouter({
    embedding: createEmbeddingRouter({ handlers: listed(handlers), topK: HYBRID_PREFILTER_TOP_K }),
    llm: { handlers: listed(handlers), chat: model(oracle).chat },
  }),
);

describe('createRuleRouter', () => {
  it('lets the first matching rule win at score 1', async () => {
    const router = createRuleRouter({
      rules: [
        { pattern: /flight/i, handler: 'travel', reason: 'mentions a flight' },
        { pattern: /flight|invoice/i, handler: 'billing' },
      ],
    });
    const result = await router.classify('An invoice for my flight', createContext());
    expect(result.handlers).toEqual([{ name: 'travel', score: 1, reason: 'mentions a flight' }]);
    expect(result.rawScores).toEqual({ travel: 1, billing: 0 });
    const second = await router.classify('An invoice, please', createContext());
    expect(second.bestHandler).toBe('billing');
    expect(second.rawScores).toEqual({ travel: 0, billing: 1 });
  });

  it('routes to the default handler at 0.5 when no rule matches', async () => {
    const router = createRuleRouter({
      rules: [{ pattern: /flight/i, handler: 'travel' }],
      defaultHandler: 'chat',
    });
    const result = await router.classify('hello there', createContext());
    expect(result).toMatchObject({ intent: 'chat', bestHandler: 'chat', confidence: 0.5 });
    expect(result.rawScores).toEqual({ travel: 0, chat: 0.5 });
    const matched = await router.classify('my flight', createContext());
    expect(matched.rawScores).toEqual({ travel: 1, chat: 0 });
  });

  it('compiles a string pattern case-insensitively', async () => {
    const router = createRuleRouter({ rules: [{ pattern: '^refund\\b', handler: 'billing' }] });
    expect((await router.classify('REFUND my order', createContext())).bestHandler).toBe('billing');
    expect((await router.classify('no refund', createContext())).bestHandler).toBeNull();
  });

  it('routes the same way every time with a global RegExp', async () => {
    const router = createRuleRouter({ rules: [{ pattern: /flight/g, handler: 'travel' }] });
    for (let i = 0; i < 3; i++) {
      expect((await router.classify('flight', createContext())).bestHandler).toBe('travel');
    }
  });

  it('refuses bad options with TypeError naming the option', () => {
    expect(() => createRuleRouter({ rules: [{ pattern: '(unclosed', handler: 'x' }] })).toThrow(
      /rules\[0\]\.pattern/,
    );
    expect(() => createRuleRouter({ rules: [{ pattern: '(unclosed', handler: 'x' }] })).toThrow(
      TypeError,
    );
    expect(() => createRuleRouter({ rules: [{ pattern: /a/, handler: '' }] })).toThrow(
      /rules\[0\]\.handler/,
    );
    expect(() =>
      createRuleRouter({ rules: [{ pattern: 42 as unknown as string, handler: 'x' }] }),
    ).toThrow(/rules\[0\]\.pattern/);
    expect(() => createRuleRouter({ rules: 'x' as unknown as [] })).toThrow(/options\.rules/);
    expect(() => createRuleRouter({ rules: [], defaultHandler: '' })).toThrow(
      /options\.defaultHandler/,
    );
  });
});

describe('createEmbeddingRouter', () => {
  const handlers = CONFORMANCE_HANDLERS;

  it('leaves out handlers below the threshold but gives every raw score', async () => {
    const router = createEmbeddingRouter({ handlers: listed(handlers) });
    const result = await router.classify('book flights to the airport', createContext());
    expect(Object.keys(result.rawScores).sort()).toEqual(['billing', 'flights', 'weather']);
    expect(result.handlers.map((h) => h.name)).toEqual(['flights']);
    expect(result.rawScores['flights']).toBe(result.confidence);
    expect(result.rawScores['billing']).toBeLessThan(0.3);

    const lenient = createEmbeddingRouter({ handlers: listed(handlers), threshold: 0 });
    const all = await lenient.classify('book flights to the airport', createContext());
    expect(all.handlers.map((h) => h.name)).toHaveLength(3);
    expect(all.handlers[0]?.name).toBe('flights');
    expectRouteInvariants(all);
  });

  it('keeps the best topK candidates', async () => {
    const many = Array.from({ length: 8 }, (_, i) => ({
      name: `h${i}`,
      description: `book flights number ${i}`,
    }));
    const router = createEmbeddingRouter({ handlers: listed(many), topK: 3 });
    const result = await router.classify('book flights', createContext());
    expect(result.handlers).toHaveLength(3);
    expect(Object.keys(result.rawScores)).toHaveLength(8);
    const kept = Math.min(...result.handlers.map((h) => h.score));
    const dropped = Object.entries(result.rawScores).filter(
      ([name]) => !result.handlers.some((h) => h.name === name),
    );
    for (const [, score] of dropped) expect(score).toBeLessThanOrEqual(kept);
    expect(
      (
        await createEmbeddingRouter({ handlers: listed(many) }).classify(
          'book flights',
          createContext(),
        )
      ).handlers,
    ).toHaveLength(5);
  });

  it('routes to a handler registered after the previous call', async () => {
    const { list, source } = mutable(handlers);
    const router = createEmbeddingRouter({ handlers: source });
    const message = 'translate this sentence into german';
    expect((await router.classify(message, createContext())).bestHandler).toBeNull();
    list.push({ name: 'translate', description: 'translate a sentence into german or french' });
    const result = await router.classify(message, createContext());
    expect(result.bestHandler).toBe('translate');
    expect(Object.keys(result.rawScores)).toHaveLength(4);
  });

  it('embeds each description once, and again when it changes', async () => {
    const inner = hashedEmbedder();
    const embedded: string[] = [];
    const counting: Embedder = {
      name: 'counting',
      dimensions: inner.dimensions,
      embed: (texts) => {
        embedded.push(...texts);
        return inner.embed(texts);
      },
    };
    const { list, source } = mutable(handlers);
    const router = createEmbeddingRouter({ handlers: source, embedder: counting });
    await router.classify('will it rain', createContext());
    await router.classify('will it snow', createContext());
    expect(embedded).toEqual([
      'will it rain',
      ...handlers.map((h) => h.description),
      'will it snow',
    ]);
    list[0] = { name: 'weather', description: 'storms and sunshine' };
    embedded.length = 0;
    const result = await router.classify('storms tonight?', createContext());
    expect(embedded).toEqual(['storms tonight?', 'storms and sunshine']);
    expect(result.bestHandler).toBe('weather');
  });

  it('refuses bad options naming the option', () => {
    const handlersOption = listed(handlers);
    expect(() => createEmbeddingRouter({ handlers: handlersOption, threshold: 1.5 })).toThrow(
      RangeError,
    );
    expect(() => createEmbeddingRouter({ handlers: handlersOption, threshold: NaN })).toThrow(
      /options\.threshold/,
    );
    expect(() => createEmbeddingRouter({ handlers: handlersOption, topK: 0 })).toThrow(
      /options\.topK/,
    );
    expect(() => createEmbeddingRouter({ handlers: handlersOption, topK: 2.5 })).toThrow(
      RangeError,
    );
    expect(() => createEmbeddingRouter({ handlers: [] as unknown as HandlerSource })).toThrow(
      /options\.handlers/,
    );
  });
});

describe('createLlmRouter', () => {
  const handlers = listed(CONFORMANCE_HANDLERS);

  it('asks the engine and model it is given; an engine the runtime lacks rejects', async () => {
    const m = model(() => '{"handler": "flights", "confidence": 0.8}');
    const router = createLlmRouter({ handlers, chat: m.chat, engine: 'scripted', model: 'tiny' });
    expect((await router.classify('get me to Rome', m.ctx())).bestHandler).toBe('flights');
    expect(m.requests[0]?.model).toBe('tiny');
    const elsewhere = createLlmRouter({ handlers, chat: m.chat, engine: 'nowhere' });
    await expect(elsewhere.classify('get me to Rome', m.ctx())).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    expect(m.requests).toHaveLength(1);
  });

  it('routes to the handler the model answers, at its confidence', async () => {
    const m = model(() => '{"handler": "flights", "confidence": 0.8, "reason": "a trip"}');
    const router = createLlmRouter({ handlers, chat: m.chat, maxTokens: 100 });
    const result = await router.classify('get me to Rome', m.ctx());
    expect(result).toEqual({
      intent: 'flights',
      confidence: 0.8,
      bestHandler: 'flights',
      handlers: [{ name: 'flights', score: 0.8, reason: 'a trip' }],
      rawScores: { weather: 0, flights: 0.8, billing: 0 },
    });
    const [request] = m.requests;
    expect(m.requests).toHaveLength(1);
    expect(request?.params?.max_tokens).toBe(100);
    const system = request?.messages[0];
    expect(system?.role).toBe('system');
    for (const h of CONFORMANCE_HANDLERS) {
      expect(system?.content).toContain(`${h.name}: ${h.description}`);
    }
    expect(request?.messages[1]).toEqual({ role: 'user', content: 'get me to Rome' });
  });

  it('reads the answer out of prose around it', async () => {
    const m = model(
      () =>
        'Between {flights, billing} I choose:\n```json\n{"handler": "billing", "confidence": 0.7}\n```\nHope that {helps}.',
    );
    const router = createLlmRouter({ handlers, chat: m.chat });
    const result = await router.classify('money back please', m.ctx());
    expect(result.bestHandler).toBe('billing');
    expect(result.confidence).toBe(0.7);
    expect(m.requests).toHaveLength(1);
  });

  it('retries an invalid answer once, telling the model what was wrong', async () => {
    const m = model((_request, nth) =>
      nth === 1
        ? '{"handler": "trains", "confidence": 0.9}'
        : '{"handler": "flights", "confidence": 0.6}',
    );
    const router = createLlmRouter({ handlers, chat: m.chat });
    const result = await router.classify('get me to Rome', m.ctx());
    expect(result.bestHandler).toBe('flights');
    expect(result.confidence).toBe(0.6);
    expect(m.requests).toHaveLength(2);
    const retry = m.requests[1]?.messages ?? [];
    expect(retry.at(-2)).toEqual({
      role: 'assistant',
      content: '{"handler": "trains", "confidence": 0.9}',
    });
    expect(retry.at(-1)?.role).toBe('user');
    expect(retry.at(-1)?.content).toMatch(/handler: must be one of: .*"flights"/);
  });

  it('routes to unknown with empty rawScores when the answer is invalid twice', async () => {
    const m = model(() => 'I think it is about flights, fairly sure.');
    const router = createLlmRouter({ handlers, chat: m.chat });
    const result = await router.classify('get me to Rome', m.ctx());
    expect(result).toEqual({
      intent: 'unknown',
      confidence: 0,
      bestHandler: null,
      handlers: [],
      rawScores: {},
    });
    expect(m.requests).toHaveLength(2);
    expect(m.requests[1]?.messages.at(-1)?.content).toContain('no JSON object');
  });

  it('tells a confidence out of range back to the model', async () => {
    const m = model((_r, nth) =>
      nth === 1
        ? '{"handler": "weather", "confidence": 95}'
        : '{"handler": "weather", "confidence": 0.95}',
    );
    const router = createLlmRouter({ handlers, chat: m.chat });
    expect((await router.classify('sunny?', m.ctx())).confidence).toBe(0.95);
    expect(m.requests[1]?.messages.at(-1)?.content).toMatch(/confidence/);
  });

  it('routes to unknown, every handler at 0, when the model answers unknown', async () => {
    const m = model(() => '{"handler": "unknown", "confidence": 0.9}');
    const router = createLlmRouter({ handlers, chat: m.chat });
    const result = await router.classify('sing me a song', m.ctx());
    expect(result.bestHandler).toBeNull();
    expect(result.confidence).toBe(0);
    expect(result.rawScores).toEqual({ weather: 0, flights: 0, billing: 0 });
  });

  it('passes on an error of the engine', async () => {
    const m = model(() => {
      throw new EngineError('scripted', 'http_error', 'upstream broke', { status: 500 });
    });
    const router = createLlmRouter({ handlers, chat: m.chat });
    await expect(router.classify('get me to Rome', m.ctx())).rejects.toBeInstanceOf(EngineError);
  });

  it('passes on a budget that does not fit, without calling the engine', async () => {
    const m = model(oracle);
    const router = createLlmRouter({ handlers, chat: m.chat });
    const ctx = m.runtime.createContext({ budgets: { maxTokensOut: 10 } });
    await expect(router.classify('get me to Rome', ctx)).rejects.toBeInstanceOf(
      BudgetExceededError,
    );
    expect(m.requests).toHaveLength(0);
  });

  it('offers only the handlers `candidates` gives', async () => {
    const m = model(oracle);
    const router = createLlmRouter({
      handlers,
      chat: m.chat,
      candidates: () => Promise.resolve(CONFORMANCE_HANDLERS.slice(1)),
    });
    const result = await router.classify('weather forecast: rain?', m.ctx());
    expect(result.bestHandler).toBeNull();
    expect(offeredIn(m.requests[0] as ChatRequest).map((h) => h.name)).toEqual([
      'flights',
      'billing',
    ]);
    expect(Object.keys(result.rawScores)).toEqual(['flights', 'billing']);
  });

  it('refuses bad options naming the option', () => {
    const chat = model(oracle).chat;
    expect(() => createLlmRouter({ handlers, chat: undefined as unknown as RouterChat })).toThrow(
      /options\.chat/,
    );
    expect(() => createLlmRouter({ handlers, chat, maxTokens: 0 })).toThrow(RangeError);
    expect(() => createLlmRouter({ handlers, chat, engine: '' })).toThrow(/options\.engine/);
    expect(() => createLlmRouter({ handlers: {} as HandlerSource, chat })).toThrow(
      /options\.handlers/,
    );
  });
});

describe('createHybridRouter', () => {
  const many: readonly HandlerDescription[] = [
    ...CONFORMANCE_HANDLERS,
    { name: 'trains', description: 'book train tickets and rail passes' },
    { name: 'hotels', description: 'book hotel rooms and stays' },
    { name: 'cars', description: 'rent cars at the airport' },
  ];

  function hybrid(m: ModelSetup, handlers: readonly HandlerDescription[] = many) {
    return createHybridRouter({
      embedding: createEmbeddingRouter({
        handlers: listed(handlers),
        topK: HYBRID_PREFILTER_TOP_K,
      }),
      llm: { handlers: listed(handlers), chat: m.chat },
    });
  }

  it('lets the model choose among the embedding candidates only', async () => {
    const m = model(() => '{"handler": "trains", "confidence": 0.9, "reason": "by rail"}');
    const message = 'book tickets for the airport';
    const pre = await createEmbeddingRouter({ handlers: listed(many), topK: 10 }).classify(
      message,
      createContext(),
    );
    expect(pre.handlers.map((h) => h.name)).toContain('trains');
    expect(pre.bestHandler).not.toBe('trains');

    const result = await hybrid(m).classify(message, m.ctx());
    expectRouteInvariants(result);
    expect(result.bestHandler).toBe('trains');
    expect(result.confidence).toBe(0.9);
    expect(result.handlers[0]?.reason).toContain('by rail');
    expect(result.handlers.map((h) => h.name).sort()).toEqual(
      pre.handlers.map((h) => h.name).sort(),
    );
    expect(result.rawScores).toEqual(pre.rawScores);
    const offered = offeredIn(m.requests[0] as ChatRequest).map((h) => h.name);
    expect(offered).toEqual(pre.handlers.map((h) => h.name));
    expect(offered).not.toContain('weather');
  });

  it('keeps the best 5', async () => {
    const similar = Array.from({ length: 12 }, (_, i) => ({
      name: `desk${String(i).padStart(2, '0')}`,
      description: `book tickets desk ${i}`,
    }));
    // The model picks the last of the ten it is offered.
    const m = model((request) =>
      JSON.stringify({ handler: offeredIn(request).at(-1)?.name, confidence: 0.5 }),
    );
    const result = await hybrid(m, similar).classify('book tickets', m.ctx());
    const offered = offeredIn(m.requests[0] as ChatRequest);
    expect(offered).toHaveLength(10);
    expect(result.handlers).toHaveLength(5);
    expect(result.bestHandler).toBe(offered.at(-1)?.name);
    expect(result.handlers.slice(1).map((h) => h.name)).toEqual(
      offered.slice(0, 4).map((h) => h.name),
    );
    expectRouteInvariants(result);
  });

  it('falls back to the embedding candidates when the model answers garbage', async () => {
    const m = model(() => 'no idea, sorry');
    const message = 'book tickets for the airport';
    const pre = await createEmbeddingRouter({ handlers: listed(many), topK: 5 }).classify(
      message,
      createContext(),
    );
    const result = await hybrid(m).classify(message, m.ctx());
    expect(m.requests).toHaveLength(2);
    expect(result.handlers.map(({ name, score }) => ({ name, score }))).toEqual(
      pre.handlers.map(({ name, score }) => ({ name, score })),
    );
    expect(result.bestHandler).toBe(pre.bestHandler);
    for (const h of result.handlers) expect(h.reason).toMatch(/fallback: .*not valid/);
  });

  it('falls back when the engine fails, but passes on a budget error', async () => {
    const failing = model(() => {
      throw new EngineError('scripted', 'connection_failed', 'unreachable');
    });
    const result = await hybrid(failing).classify('book tickets for the airport', failing.ctx());
    expect(result.bestHandler).not.toBeNull();
    expect(result.handlers[0]?.reason).toMatch(/fallback: the model's call failed \(INTERNAL\)/);

    const m = model(oracle);
    const ctx = m.runtime.createContext({ budgets: { maxTokensOut: 10 } });
    await expect(hybrid(m).classify('book tickets for the airport', ctx)).rejects.toBeInstanceOf(
      BudgetExceededError,
    );
  });

  it('does not ask the model when no handler passes the pre-filter', async () => {
    const m = model(oracle);
    const result = await hybrid(m).classify('purple elephants juggle quietly', m.ctx());
    expect(result.bestHandler).toBeNull();
    expect(Object.keys(result.rawScores)).toHaveLength(many.length);
    expect(m.requests).toHaveLength(0);
  });

  it('refuses bad options naming the option', () => {
    const chat = model(oracle).chat;
    const embedding = createEmbeddingRouter({ handlers: listed(many) });
    expect(() =>
      createHybridRouter({ embedding, llm: { handlers: listed(many), chat }, topK: 0 }),
    ).toThrow(/options\.topK/);
    expect(() =>
      createHybridRouter({
        embedding,
        llm: { handlers: listed(many), chat: 'x' as unknown as RouterChat },
      }),
    ).toThrow(/options\.llm\.chat/);
    expect(() =>
      createHybridRouter({
        embedding: {} as typeof embedding,
        llm: { handlers: listed(many), chat },
      }),
    ).toThrow(/options\.embedding/);
  });
});
