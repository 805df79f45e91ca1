import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../src/context/clock.js';
import type { ChatRequest, Engine, EngineReply } from '../../src/engines/chat-request.js';
import { paramsHash } from '../../src/engines/request-hash.js';
import {
  createScriptedEngine,
  SCRIPTED_DEFAULT_MAX_TOKENS,
} from '../../src/engines/scripted-engine.js';

interface Streamed {
  readonly tokens: string[];
  readonly usage: EngineReply;
}

async function collect(stream: AsyncGenerator<string, EngineReply, undefined>): Promise<Streamed> {
  const tokens: string[] = [];
  for (;;) {
    const r = await stream.next();
    if (r.done) return { tokens, usage: r.value };
    tokens.push(r.value);
  }
}

function request(overrides: Partial<ChatRequest> = {}): ChatRequest {
  return {
    messages: [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Plan a trip to Berlin' },
    ],
    seed: 42,
    ...overrides,
  };
}

/** Lets pending promise callbacks run (one real macrotask turn; no timers involved). */
function flush(): Promise<void> {
  return new Promise((resolve) => {
    setImmediate(resolve);
  });
}

/** Resolves when `p` settles; `settled()` tells whether it has yet. */
function track<T>(p: Promise<T>): {
  readonly settled: () => boolean;
  readonly promise: Promise<T>;
} {
  let done = false;
  const promise = p.finally(() => {
    done = true;
  });
  // A rejection is observed by whoever awaits `promise`.
  void promise.catch(() => undefined);
  return { settled: () => done, promise };
}

const instant = (): Engine => createScriptedEngine({ tokenDelayMs: 0 });

describe('createScriptedEngine: determinism', () => {
  it('streams byte-identical tokens for the same seed and messages, across engine instances', async () => {
    const a = await collect(instant().stream(request()));
    const b = await collect(instant().stream(request()));
    const c = await collect(createScriptedEngine({ tokenDelayMs: 0 }).stream(request()));
    expect(a.tokens.length).toBe(SCRIPTED_DEFAULT_MAX_TOKENS);
    expect(b.tokens).toEqual(a.tokens);
    expect(c.tokens.join('')).toBe(a.tokens.join(''));
  });

  it('streams a different text for a different seed', async () => {
    const engine = instant();
    const s42 = (await collect(engine.stream(request({ seed: 42 })))).tokens.join('');
    const s43 = (await collect(engine.stream(request({ seed: 43 })))).tokens.join('');
    const s7 = (await collect(engine.stream(request({ seed: 7 })))).tokens.join('');
    expect(s43).not.toBe(s42);
    expect(s7).not.toBe(s42);
    expect(s7).not.toBe(s43);
  });

  it('streams a different text for different messages with the same seed', async () => {
    const engine = instant();
    const berlin = (await collect(engine.stream(request()))).tokens.join('');
    const paris = (
      await collect(
        engine.stream(request({ messages: [{ role: 'user', content: 'Plan a trip to Paris' }] })),
      )
    ).tokens.join('');
    const roleChanged = (
      await collect(
        engine.stream(
          request({
            messages: [
              { role: 'user', content: 'You are terse.' },
              { role: 'user', content: 'Plan a trip to Berlin' },
            ],
          }),
        ),
      )
    ).tokens.join('');
    expect(paris).not.toBe(berlin);
    expect(roleChanged).not.toBe(berlin);
  });
});

describe('createScriptedEngine: token count and shape', () => {
  it.each([1, 5, 17, 64, 200])('streams exactly max_tokens = %i tokens', async (n) => {
    const { tokens, usage } = await collect(
      instant().stream(request({ params: { max_tokens: n } })),
    );
    expect(tokens).toHaveLength(n);
    expect(usage.tokensOut).toBe(n);
  });

  it('streams 64 tokens when max_tokens is absent (with or without params)', async () => {
    const engine = instant();
    expect(engine.defaultMaxTokens).toBe(64);
    expect((await collect(engine.stream(request()))).tokens).toHaveLength(64);
    expect(
      (await collect(engine.stream(request({ params: { temperature: 0.2 } })))).tokens,
    ).toHaveLength(64);
  });

  it('streams nothing for max_tokens 0 and reports zero tokens out', async () => {
    const { tokens, usage } = await collect(
      instant().stream(request({ params: { max_tokens: 0 } })),
    );
    expect(tokens).toEqual([]);
    expect(usage.tokensOut).toBe(0);
  });

  it.each([-1, 1.5, Number.NaN])('refuses max_tokens %s with a RangeError', async (n) => {
    await expect(collect(instant().stream(request({ params: { max_tokens: n } })))).rejects.toThrow(
      RangeError,
    );
  });

  it('joins to a text without a leading space: the first token has none, each later one exactly one', async () => {
    for (const seed of [1, 2, 3, 42, 1234]) {
      const { tokens } = await collect(instant().stream(request({ seed })));
      const text = tokens.join('');
      expect(text).toBe(text.trimStart());
      expect(tokens[0]).toMatch(/^\S+$/);
      for (const t of tokens.slice(1)) expect(t).toMatch(/^ \S+$/);
      expect(text.endsWith('.')).toBe(true);
    }
  });

  it('returns the usage at the end: estimated tokens in, tokens produced out, no cost', async () => {
    const engine = instant();
    // 'You are terse.' = 14 chars -> 4 tokens; 'Plan a trip to Berlin' = 21 chars -> 6 tokens.
    const req = request({ params: { max_tokens: 9 } });
    const { tokens, usage } = await collect(engine.stream(req));
    expect(usage).toMatchObject({ tokensIn: 10, tokensOut: tokens.length, toolCalls: [] });
    expect(engine.estimateTokensIn(req)).toBe(10);
  });
});

describe('createScriptedEngine: stop sequences and sampling parameters', () => {
  it('ends the text before the first stop sequence, even one that spans tokens', async () => {
    const engine = instant();
    const whole = (await collect(engine.stream(request({ params: { max_tokens: 30 } })))).tokens;
    const text = whole.join('');
    // A stop sequence made of the end of token 5 and the start of token 6.
    const t5 = whole[5] as string;
    const stop = t5.slice(-2) + (whole[6] as string).slice(0, 3);
    const at = text.indexOf(stop);
    const { tokens, usage } = await collect(
      engine.stream(request({ params: { max_tokens: 30, stop: ['never-there', stop] } })),
    );
    expect(tokens.join('')).toBe(text.slice(0, at));
    expect(tokens.join('')).not.toContain(stop);
    expect(usage.finishReason).toBe('stop');
    expect(usage.tokensOut).toBe(tokens.length);
    // A stop sequence the text does not contain changes nothing; max_tokens still cuts.
    const none = await collect(
      engine.stream(request({ params: { max_tokens: 7, stop: ['zzz'] } })),
    );
    const seven = await collect(engine.stream(request({ params: { max_tokens: 7 } })));
    expect(none.tokens).toEqual(seven.tokens);
    expect(none.tokens).toHaveLength(7);
    expect(none.usage.finishReason).toBe('length');
  });

  it('cuts a scripted answer at a stop sequence too; an empty stop sequence is refused', async () => {
    const engine = createScriptedEngine({ tokenDelayMs: 0, script: () => 'one two END three' });
    expect((await collect(engine.stream(request({ params: { stop: [' END'] } })))).tokens).toEqual([
      'one',
      ' two',
    ]);
    await expect(collect(engine.stream(request({ params: { stop: [''] } })))).rejects.toThrow(
      RangeError,
    );
  });

  it('gives the same text whatever temperature and top_p are, while they change params_hash', async () => {
    const engine = instant();
    const cold = request({ params: { temperature: 0, top_p: 0.1 } });
    const hot = request({ params: { temperature: 1.5, top_p: 1 } });
    expect((await collect(engine.stream(cold))).tokens).toEqual(
      (await collect(engine.stream(hot))).tokens,
    );
    expect(paramsHash(cold, engine)).not.toBe(paramsHash(hot, engine));
  });
});

describe('createScriptedEngine: a script', () => {
  it('streams the scripted text split in words, cut at max_tokens', async () => {
    const seen: ChatRequest[] = [];
    const engine = createScriptedEngine({
      tokenDelayMs: 0,
      script: (req) => {
        seen.push(req);
        return 'Fly out on Tuesday  with AX 234.';
      },
    });
    const req = request({ params: { max_tokens: 5 } });
    const { tokens, usage } = await collect(engine.stream(req));
    expect(tokens).toEqual(['Fly', ' out', ' on', ' Tuesday', '  with']);
    expect(usage.tokensOut).toBe(5);
    expect(seen).toEqual([req]);
  });

  it('streams the whole scripted text when it is shorter than max_tokens', async () => {
    const engine = createScriptedEngine({ tokenDelayMs: 0, script: () => 'Shall I book it?' });
    const { tokens, usage } = await collect(engine.stream(request()));
    expect(tokens.join('')).toBe('Shall I book it?');
    expect(usage.tokensOut).toBe(4);
  });

  it('falls back to the seeded text when the script returns null', async () => {
    const engine = createScriptedEngine({ tokenDelayMs: 0, script: () => null });
    const scripted = await collect(engine.stream(request()));
    const plain = await collect(instant().stream(request()));
    expect(scripted.tokens).toEqual(plain.tokens);
  });
});

describe('createScriptedEngine: timing on a simulated clock', () => {
  it('delivers no token before the clock advances by tokenDelayMs, then one per delay', async () => {
    const clock = new SimulatedClock(1_000);
    const engine = createScriptedEngine({ tokenDelayMs: 10, clock });
    const expected = (await collect(instant().stream(request({ params: { max_tokens: 3 } }))))
      .tokens;
    const stream = engine.stream(request({ params: { max_tokens: 3 } }));

    const first = track(stream.next());
    await flush();
    expect(first.settled()).toBe(false);
    clock.advance(9);
    await flush();
    expect(first.settled()).toBe(false);
    clock.advance(1);
    expect(await first.promise).toEqual({ done: false, value: expected[0] });

    const second = track(stream.next());
    await flush();
    clock.advance(9);
    await flush();
    expect(second.settled()).toBe(false);
    clock.advance(1);
    expect(await second.promise).toEqual({ done: false, value: expected[1] });
  });

  it('stops with the signal reason when aborted while waiting for a token', async () => {
    const clock = new SimulatedClock(0);
    const engine = createScriptedEngine({ tokenDelayMs: 10, clock });
    const controller = new AbortController();
    const stream = engine.stream(request(), { signal: controller.signal });
    const first = stream.next();
    await flush();
    clock.advance(10);
    expect((await first).done).toBe(false);

    const second = track(stream.next());
    await flush();
    const reason = new Error('user pressed stop');
    controller.abort(reason);
    await expect(second.promise).rejects.toBe(reason);
    // The pending token timer was cleared, and the stream is over.
    expect(clock.pending).toBe(0);
    expect(await stream.next()).toEqual({ done: true, value: undefined });
  });

  it('holds one abort listener for a whole stream, and none once the stream is over', async () => {
    const clock = new SimulatedClock(0);
    const engine = createScriptedEngine({ tokenDelayMs: 1, clock });
    for (const stop of ['end', 'break'] as const) {
      const controller = new AbortController();
      const stream = engine.stream(request(), { signal: controller.signal });
      for (let i = 0; ; i++) {
        const next = stream.next();
        await flush();
        clock.advance(1);
        const r = await next;
        if (r.done) break;
        expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
        if (stop === 'break' && i === 2) {
          await stream.return(undefined as never);
          break;
        }
      }
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    }
  });

  it('stops with the signal reason when aborted between tokens without a delay', async () => {
    const controller = new AbortController();
    const stream = instant().stream(request(), { signal: controller.signal });
    expect((await stream.next()).done).toBe(false);
    const reason = new Error('stop now');
    controller.abort(reason);
    await expect(stream.next()).rejects.toBe(reason);
  });

  it('produces no token at all when the signal is already aborted', async () => {
    const clock = new SimulatedClock(0);
    const reason = new Error('aborted before the call');
    const signal = AbortSignal.abort(reason);
    for (const engine of [instant(), createScriptedEngine({ tokenDelayMs: 5, clock })]) {
      await expect(engine.stream(request(), { signal }).next()).rejects.toBe(reason);
    }
    expect(clock.pending).toBe(0);
  });

  it('refuses a negative or non-finite tokenDelayMs with a RangeError', () => {
    expect(() => createScriptedEngine({ tokenDelayMs: -1 })).toThrow(RangeError);
    expect(() => createScriptedEngine({ tokenDelayMs: Number.NaN })).toThrow(RangeError);
    expect(() => createScriptedEngine({ tokenDelayMs: Number.POSITIVE_INFINITY })).toThrow(
      RangeError,
    );
  });
});

describe('createScriptedEngine: AXON_SCRIPTED_TOKEN_MS', () => {
  const KEY = 'AXON_SCRIPTED_TOKEN_MS';
  let saved: string | undefined;
  beforeEach(() => {
    saved = process.env[KEY];
  });
  afterEach(() => {
    if (saved === undefined) Reflect.deleteProperty(process.env, KEY);
    else process.env[KEY] = saved;
  });

  /** Milliseconds of simulated time before the first token arrives (up to `limit`). */
  async function firstTokenDelay(
    engine: Engine,
    clock: SimulatedClock,
    limit = 50,
  ): Promise<number> {
    const first = track(engine.stream(request()).next());
    for (let ms = 0; ms <= limit; ms++) {
      await flush();
      if (first.settled()) {
        await first.promise;
        return ms;
      }
      clock.advance(1);
    }
    throw new Error(`no token within ${limit} ms`);
  }

  it('uses the env delay when tokenDelayMs is not given', async () => {
    process.env[KEY] = '7';
    const clock = new SimulatedClock(0);
    expect(await firstTokenDelay(createScriptedEngine({ clock }), clock)).toBe(7);
  });

  it('prefers an explicit tokenDelayMs to the env delay', async () => {
    process.env[KEY] = '7';
    const clock = new SimulatedClock(0);
    expect(await firstTokenDelay(createScriptedEngine({ clock, tokenDelayMs: 3 }), clock)).toBe(3);
  });

  it('defaults to 5 ms without the env variable, and when it is not a valid delay', async () => {
    for (const value of [undefined, 'abc', '-4']) {
      if (value === undefined) Reflect.deleteProperty(process.env, KEY);
      else process.env[KEY] = value;
      const clock = new SimulatedClock(0);
      expect(await firstTokenDelay(createScriptedEngine({ clock }), clock)).toBe(5);
    }
  });

  it('streams without waiting when the env delay is 0', async () => {
    process.env[KEY] = '0';
    const clock = new SimulatedClock(0);
    const { tokens } = await collect(
      createScriptedEngine({ clock }).stream(request({ params: { max_tokens: 4 } })),
    );
    expect(tokens).toHaveLength(4);
    expect(clock.now()).toBe(0);
    expect(clock.pending).toBe(0);
  });
});

describe('createScriptedEngine: scripted tool calls', () => {
  it('returns scripted tool calls with ids that depend only on the request and their position', async () => {
    const engine = createScriptedEngine({
      tokenDelayMs: 0,
      script: () => ({
        text: 'One moment.',
        toolCalls: [
          { name: 'add', arguments: { a: 1, b: 2 } },
          { name: 'now', arguments: '{}' },
        ],
      }),
    });
    const first = await collect(engine.stream(request()));
    const again = await collect(engine.stream(request()));
    const other = await collect(engine.stream(request({ seed: 43 })));

    expect(first.tokens.join('')).toBe('One moment.');
    expect(first.usage.finishReason).toBe('tool_calls');
    expect(first.usage.toolCalls.map((c) => [c.name, c.arguments])).toEqual([
      ['add', '{"a":1,"b":2}'],
      ['now', '{}'],
    ]);
    expect(again.usage.toolCalls).toEqual(first.usage.toolCalls);
    expect(other.usage.toolCalls[0]?.id).not.toBe(first.usage.toolCalls[0]?.id);
    expect(new Set(first.usage.toolCalls.map((c) => c.id)).size).toBe(2);
  });
});
