import type { Socket } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ChatRequest, Engine, EngineReply } from '../../src/engines/chat-request.js';
import { createOpenAIEngine, type OpenAIEngineOptions } from '../../src/engines/openai-engine.js';
import {
  startOpenAICompatibleServer,
  type OpenAICompatibleServer,
} from '../../src/engines/openai-compatible-server.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { CancelledError } from '../../src/errors/cancelled-error.js';
import { EngineError } from '../../src/errors/engine-error.js';
import { RateLimitedError } from '../../src/errors/rate-limited-error.js';
import { TimeoutError } from '../../src/errors/timeout-error.js';
import { watchUnexpectedErrors } from '../support/unexpected-errors.js';

interface Streamed {
  readonly tokens: string[];
  readonly reply: EngineReply | null;
  readonly error: unknown;
}

/** Drains a call; never throws (the error, if any, is returned). */
async function drain(
  stream: AsyncGenerator<string, EngineReply, undefined>,
  onToken: (i: number) => void = () => undefined,
): Promise<Streamed> {
  const tokens: string[] = [];
  try {
    for (;;) {
      const r = await stream.next();
      if (r.done) return { tokens, reply: r.value, error: null };
      tokens.push(r.value);
      onToken(tokens.length);
    }
  } catch (error) {
    return { tokens, reply: null, error };
  }
}

const request: ChatRequest = {
  messages: [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Plan a trip to Berlin' },
  ],
  params: { max_tokens: 12, temperature: 0.2 },
  seed: 42,
};

let server: OpenAICompatibleServer;
const engines: Engine[] = [];
const unexpected = watchUnexpectedErrors();

function engine(options: Partial<OpenAIEngineOptions> = {}): Engine {
  const e = createOpenAIEngine({ baseURL: server.baseURL, model: 'scripted', ...options });
  engines.push(e);
  return e;
}

beforeEach(async () => {
  server = await startOpenAICompatibleServer();
});

afterEach(async () => {
  await server.close();
  expect(unexpected).toEqual([]);
});

describe('the OpenAI binding against a local OpenAI-compatible server', () => {
  it('streams the same text as the engine behind the server, with the server-counted usage', async () => {
    const direct = await drain(createScriptedEngine({ tokenDelayMs: 0 }).stream(request));
    const viaHttp = await drain(engine().stream(request));

    expect(viaHttp.error).toBeNull();
    expect(viaHttp.tokens.join('')).toBe(direct.tokens.join(''));
    expect(viaHttp.tokens).toHaveLength(12);
    expect(viaHttp.reply).toMatchObject({
      tokensIn: direct.reply?.tokensIn,
      tokensOut: 12,
      toolCalls: [],
      model: 'scripted',
      finishReason: 'length',
    });
    // The request as the SDK sent it: streamed with usage, the seed and params passed through.
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.body).toMatchObject({
      model: 'scripted',
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 12,
      temperature: 0.2,
      seed: 42,
    });
  });

  it('assembles tool calls streamed in pieces', async () => {
    await server.close();
    server = await startOpenAICompatibleServer({
      engine: createScriptedEngine({
        tokenDelayMs: 0,
        script: () => ({
          text: 'Let me add those.',
          toolCalls: [
            { name: 'add', arguments: { a: 2, b: 40 } },
            { name: 'search_flights', arguments: { to: 'BER', date: '2026-11-24' } },
          ],
        }),
      }),
    });
    const tools = [
      { name: 'add', parameters: { type: 'object', properties: { a: { type: 'number' } } } },
    ];
    const out = await drain(engine().stream({ ...request, tools }));

    expect(out.error).toBeNull();
    expect(out.tokens.join('')).toBe('Let me add those.');
    expect(out.reply?.finishReason).toBe('tool_calls');
    expect(out.reply?.toolCalls.map((c) => [c.name, JSON.parse(c.arguments) as unknown])).toEqual([
      ['add', { a: 2, b: 40 }],
      ['search_flights', { to: 'BER', date: '2026-11-24' }],
    ]);
    expect(out.reply?.toolCalls.every((c) => c.id.startsWith('call_'))).toBe(true);
    expect(server.requests[0]?.body).toMatchObject({
      tools: [{ type: 'function', function: { name: 'add' } }],
    });
  });

  it('retries a 429 after the Retry-After it was given, then streams', async () => {
    server.fault({ kind: 'rate_limit', retryAfterSeconds: 1 });
    const started = Date.now();
    const out = await drain(engine({ maxRetries: 2 }).stream(request));

    expect(out.error).toBeNull();
    expect(out.tokens).toHaveLength(12);
    expect(server.requests).toHaveLength(2);
    // Retry-After: 1 was honoured (the SDK's own backoff would have waited about half that).
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('a 429 that outlasts the retries is RateLimitedError with the retry-after', async () => {
    server.fault(
      { kind: 'rate_limit', retryAfterSeconds: 0 },
      { kind: 'rate_limit', retryAfterSeconds: 0 },
    );
    const out = await drain(engine({ maxRetries: 1 }).stream(request));

    expect(out.error).toBeInstanceOf(RateLimitedError);
    expect(out.error).toMatchObject({ code: 'RATE_LIMITED', retriable: true, retryAfterMs: 0 });
    expect(out.tokens).toEqual([]);
    expect(server.requests).toHaveLength(2);
  });

  it('a 500 is retried as configured; with no retries left it is EngineError http_error, retriable', async () => {
    server.fault({ kind: 'http_error', status: 500 });
    const retried = await drain(engine({ maxRetries: 1 }).stream(request));
    expect(retried.error).toBeNull();
    expect(server.requests).toHaveLength(2);

    server.fault({ kind: 'http_error', status: 500 });
    const failed = await drain(engine({ maxRetries: 0 }).stream(request));
    expect(failed.error).toBeInstanceOf(EngineError);
    expect(failed.error).toMatchObject({
      code: 'INTERNAL',
      failure: 'http_error',
      status: 500,
      retriable: true,
      details: { engine: 'openai', status: 500 },
    });
  });

  it('a malformed chunk mid-stream is EngineError malformed_stream, after the tokens before it', async () => {
    server.fault({ kind: 'malformed_chunk', afterTokens: 3 });
    const out = await drain(engine({ maxRetries: 0 }).stream(request));

    expect(out.tokens).toHaveLength(3);
    expect(out.error).toBeInstanceOf(EngineError);
    expect(out.error).toMatchObject({ failure: 'malformed_stream', retriable: true });
  });

  it('a connection reset mid-stream is EngineError connection_lost', async () => {
    server.fault({ kind: 'reset', afterTokens: 4 });
    const out = await drain(engine({ maxRetries: 0 }).stream(request));

    expect(out.tokens).toHaveLength(4);
    expect(out.error).toBeInstanceOf(EngineError);
    expect(out.error).toMatchObject({ failure: 'connection_lost' });
  });

  it('a stream that goes silent ends with TimeoutError after idleTimeoutMs, not a hang', async () => {
    server.fault({ kind: 'silence', afterTokens: 2 });
    const out = await drain(engine({ maxRetries: 0, idleTimeoutMs: 300 }).stream(request));

    expect(out.tokens).toHaveLength(2);
    expect(out.error).toBeInstanceOf(TimeoutError);
    expect(out.error).toMatchObject({
      code: 'TIMEOUT',
      timeoutMs: 300,
      details: { phase: 'stream' },
    });
  });

  it('a server that never answers ends with TimeoutError after timeoutMs', async () => {
    // A server that accepts the connection and never says anything.
    const { createServer } = await import('node:net');
    const held = new Set<Socket>();
    const mute = createServer((socket) => held.add(socket));
    await new Promise<void>((resolve) => mute.listen(0, '127.0.0.1', resolve));
    const port = (mute.address() as { port: number }).port;
    const e = createOpenAIEngine({
      baseURL: `http://127.0.0.1:${port}/v1`,
      model: 'm',
      maxRetries: 0,
      timeoutMs: 300,
    });
    const out = await drain(e.stream(request));
    for (const socket of held) socket.destroy();
    await new Promise((resolve) => mute.close(resolve));

    expect(out.error).toBeInstanceOf(TimeoutError);
    expect(out.error).toMatchObject({ timeoutMs: 300, details: { phase: 'response' } });
  });

  it('an unreachable endpoint is EngineError connection_failed', async () => {
    const closed = await startOpenAICompatibleServer();
    const baseURL = closed.baseURL;
    await closed.close();
    const out = await drain(
      createOpenAIEngine({ baseURL, model: 'm', maxRetries: 0 }).stream(request),
    );
    expect(out.error).toBeInstanceOf(EngineError);
    expect(out.error).toMatchObject({ failure: 'connection_failed', retriable: true });
  });

  it('a refused key is EngineError http_error 401, not retriable', async () => {
    await server.close();
    server = await startOpenAICompatibleServer({ apiKey: 'right' });
    const out = await drain(engine({ apiKey: 'wrong' }).stream(request));
    expect(out.error).toMatchObject({ failure: 'http_error', status: 401, retriable: false });
    expect(server.requests).toHaveLength(1);

    const ok = await drain(engine({ apiKey: 'right' }).stream(request));
    expect(ok.error).toBeNull();
  });

  it('an abort mid-stream ends the call with the signal reason and closes the connection', async () => {
    await server.close();
    server = await startOpenAICompatibleServer({
      engine: createScriptedEngine({ tokenDelayMs: 20 }),
    });
    const controller = new AbortController();
    const reason = new CancelledError('user left');
    const out = await drain(engine().stream(request, { signal: controller.signal }), (n) => {
      if (n === 2) controller.abort(reason);
    });
    expect(out.tokens).toHaveLength(2);
    expect(out.error).toBe(reason);
  });

  it('refuses bad options with errors naming them', () => {
    expect(() => createOpenAIEngine({ baseURL: 'localhost:8000', model: 'm' })).toThrow(
      /baseURL must be an http\(s\) URL/,
    );
    expect(() => createOpenAIEngine({ baseURL: 'http://x/v1', model: '' })).toThrow(/model/);
    expect(() =>
      createOpenAIEngine({ baseURL: 'http://x/v1', model: 'm', maxRetries: -1 }),
    ).toThrow(/maxRetries/);
    expect(() =>
      createOpenAIEngine({ baseURL: 'http://x/v1', model: 'm', idleTimeoutMs: 0 }),
    ).toThrow(/idleTimeoutMs/);
  });
});

describe('the local OpenAI-compatible server', () => {
  it('answers whole (non-streamed) requests, lists its model, and refuses bad bodies with 400', async () => {
    const post = (body: string): Promise<Response> =>
      fetch(`${server.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
    const whole = await post(
      JSON.stringify({
        model: 'scripted',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 5,
        seed: 1,
      }),
    );
    expect(whole.status).toBe(200);
    const json = (await whole.json()) as {
      choices: { message: { content: string } }[];
      usage: { completion_tokens: number };
    };
    expect(json.usage.completion_tokens).toBe(5);
    expect(json.choices[0]?.message.content.split(' ').length).toBe(5);

    expect((await post('{not json')).status).toBe(400);
    const noMessages = await post(JSON.stringify({ model: 'scripted', messages: [] }));
    expect(noMessages.status).toBe(400);
    expect(await noMessages.json()).toMatchObject({ error: { message: /messages/ } });

    const models = await fetch(`${server.baseURL}/models`);
    expect(await models.json()).toMatchObject({ data: [{ id: 'scripted' }] });
  });
});
