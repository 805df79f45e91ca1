import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.js';
import { ZERO_AMOUNTS } from '../../src/context/budget-ledger.js';
import type {
  ChatRequest,
  Engine,
  EngineCallOptions,
  EngineReply,
} from '../../src/engines/chat-request.js';
import { PRICE_TABLE } from '../../src/engines/price-table.js';
import { chatTokens } from '../../src/engines/chat-tokens.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { BudgetExceededError } from '../../src/errors/budget-exceeded-error.js';
import { createLogger } from '../../src/observability/logger.js';

/** An engine that counts how many streams were started. */
function counting(inner: Engine): { readonly engine: Engine; readonly calls: () => number } {
  let calls = 0;
  const engine: Engine = {
    name: inner.name,
    defaultModel: inner.defaultModel,
    priceTable: inner.priceTable,
    defaultMaxTokens: inner.defaultMaxTokens,
    estimateTokensIn: (req) => inner.estimateTokensIn(req),
    stream(req: ChatRequest, options?: EngineCallOptions) {
      calls++;
      return inner.stream(req, options);
    },
  };
  return { engine, calls: () => calls };
}

/** A runtime with one agent, `writer`, that streams `engine`'s answer through chatTokens. */
function writerRuntime(engine: Engine, params: ChatRequest['params']): Runtime {
  const writer = defineAgent({
    name: 'writer',
    async *handler(input, ctx) {
      const reply = yield* chatTokens(
        engine,
        {
          messages: [{ role: 'user', content: input.message }],
          ...(params ? { params } : {}),
          seed: 7,
        },
        ctx,
      );
      return reply.text;
    },
  });
  return createRuntime({ agents: [writer], logger: createLogger({ level: 'silent' }) });
}

async function engineText(engine: Engine, req: ChatRequest): Promise<string> {
  let text = '';
  for await (const t of engine.stream(req)) text += t;
  return text;
}

describe('chatTokens inside a running agent', () => {
  it('streams the tokens as step events and commits tokens in and out to the result usage', async () => {
    const message = `Write a haiku ${randomUUID()}`;
    const { engine, calls } = counting(createScriptedEngine({ tokenDelayMs: 0 }));
    const runtime = writerRuntime(engine, { max_tokens: 12 });
    const ctx = runtime.createContext();

    const result = await runtime.invoke<string>('writer', message, ctx);

    const req: ChatRequest = {
      messages: [{ role: 'user', content: message }],
      params: { max_tokens: 12 },
      seed: 7,
    };
    const expectedIn = engine.estimateTokensIn(req);
    expect(expectedIn).toBeGreaterThan(0);
    expect(result.status).toBe('success');
    expect(result.output).toBe(await engineText(createScriptedEngine({ tokenDelayMs: 0 }), req));
    expect(calls()).toBe(1);
    expect(result.usage).toEqual({
      promptTokens: expectedIn,
      completionTokens: 12,
      totalTokens: expectedIn + 12,
      costUsd: 0,
    });
    expect(ctx.ledger.committed).toEqual({ tokensIn: expectedIn, tokensOut: 12, costUsd: 0 });
    expect(ctx.ledger.reserved).toEqual(ZERO_AMOUNTS);

    const events = await runtime.store.readEvents(result.stepId);
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('started');
    expect(types.at(-1)).toBe('end');
    const tokens = events.flatMap((e) => (e.type === 'token' ? [e.t] : []));
    expect(tokens).toHaveLength(12);
    expect(tokens.join('')).toBe(result.output);
    const end = events.at(-1);
    expect(end?.type === 'end' ? end.budget_usage : null).toMatchObject({
      tokens_in: expectedIn,
      tokens_out: 12,
      cost_usd: 0,
    });
    const run = await runtime.getRun(result.runId);
    expect(run?.budget_usage).toMatchObject({ tokens_in: expectedIn, tokens_out: 12 });
    await runtime.close();
  });

  it('reserves the engine default max_tokens when the request gives none', async () => {
    const tight = counting(createScriptedEngine({ tokenDelayMs: 0 }));
    const tightRuntime = writerRuntime(tight.engine, undefined);
    const refused = await tightRuntime.invoke(
      'writer',
      'hello',
      tightRuntime.createContext({ budgets: { maxTokensOut: 63 } }),
    );
    expect(refused.status).toBe('error');
    expect(refused.error?.code).toBe('BUDGET_EXCEEDED');
    expect(tight.calls()).toBe(0);

    const exact = counting(createScriptedEngine({ tokenDelayMs: 0 }));
    const exactRuntime = writerRuntime(exact.engine, undefined);
    const ok = await exactRuntime.invoke(
      'writer',
      'hello',
      exactRuntime.createContext({ budgets: { maxTokensOut: 64 } }),
    );
    expect(ok.status).toBe('success');
    expect(ok.usage.completionTokens).toBe(64);
    await tightRuntime.close();
    await exactRuntime.close();
  });

  it('POLICY-3000: a call whose max_tokens does not fit the budget fails with BUDGET_EXCEEDED before any token, and the engine is never called', async () => {
    const { engine, calls } = counting(createScriptedEngine({ tokenDelayMs: 0 }));
    const runtime = writerRuntime(engine, { max_tokens: 64 });
    const ctx = runtime.createContext({ budgets: { maxTokensOut: 10 } });

    const result = await runtime.invoke('writer', 'Write a long essay', ctx);

    expect(result.status).toBe('error');
    expect(result.error).toBeInstanceOf(BudgetExceededError);
    expect(result.error?.code).toBe('BUDGET_EXCEEDED');
    expect(result.error?.details).toMatchObject({
      limit: 'max_tokens_out',
      requested: 64,
      remaining: 10,
    });
    expect(calls()).toBe(0);

    const events = await runtime.store.readEvents(result.stepId);
    expect(events.map((e) => e.type)).toEqual(['started', 'error']);
    const last = events[1];
    expect(last?.type === 'error' ? last.code : null).toBe('BUDGET_EXCEEDED');

    expect(result.usage).toEqual({
      promptTokens: 0,
      completionTokens: 0,
      totalTokens: 0,
      costUsd: 0,
    });
    expect(ctx.ledger.reserved).toEqual(ZERO_AMOUNTS);
    expect(ctx.ledger.committed).toEqual(ZERO_AMOUNTS);
    // The budget is intact: a call that fits still goes through on the same context.
    expect(ctx.budgetRemaining().tokensOut).toBe(10);
    await runtime.close();
  });

  it('leaves nothing reserved when the engine fails mid-stream', async () => {
    const failing: Engine = {
      name: 'failing',
      defaultModel: 'm',
      priceTable: PRICE_TABLE,
      defaultMaxTokens: 8,
      estimateTokensIn: () => 3,
      async *stream(): AsyncGenerator<string, EngineReply, undefined> {
        yield 'one';
        yield ' two';
        await Promise.resolve();
        throw new Error('engine connection reset');
      },
    };
    const runtime = writerRuntime(failing, { max_tokens: 8 });
    const ctx = runtime.createContext({ budgets: { maxTokensOut: 100 } });

    const result = await runtime.invoke('writer', 'hello', ctx);

    expect(result.status).toBe('error');
    expect(result.error?.message).toContain('engine connection reset');
    const types = (await runtime.store.readEvents(result.stepId)).map((e) => e.type);
    expect(types).toEqual(['started', 'token', 'token', 'error']);
    expect(ctx.ledger.reserved).toEqual(ZERO_AMOUNTS);
    // The two tokens the engine did produce were used, and are committed as such.
    expect(ctx.budgetRemaining().tokensOut).toBe(98);
    expect(ctx.tokenUsage).toMatchObject({ promptTokens: 3, completionTokens: 2 });
    await runtime.close();
  });

  it('leaves nothing reserved when the call is cancelled mid-stream', async () => {
    const clockless: Engine = {
      name: 'waiting',
      defaultModel: 'm',
      priceTable: PRICE_TABLE,
      defaultMaxTokens: 8,
      estimateTokensIn: () => 3,
      async *stream(_req, options): AsyncGenerator<string, EngineReply, undefined> {
        yield 'first';
        // Waits until the call is aborted, like a slow engine honouring its signal.
        await new Promise<never>((_resolve, reject) => {
          const signal = options?.signal;
          if (!signal) return;
          signal.addEventListener(
            'abort',
            () => {
              reject(signal.reason as Error);
            },
            { once: true },
          );
        });
        return { tokensIn: 3, tokensOut: 1, toolCalls: [], model: 'm', finishReason: 'stop' };
      },
    };
    const runtime = writerRuntime(clockless, { max_tokens: 8 });
    const ctx = runtime.createContext({ budgets: { maxTokensOut: 100 } });
    const stream = runtime.stream('writer', 'hello', ctx);
    const seen: string[] = [];
    for await (const { event } of stream) {
      seen.push(event.type);
      if (event.type === 'token') stream.cancel();
    }
    const result = await stream.result;

    expect(seen).toContain('token');
    expect(result.status).toBe('error');
    expect(result.error?.code).toBe('CANCELLED');
    expect(ctx.ledger.reserved).toEqual(ZERO_AMOUNTS);
    await runtime.close();
  });
});
