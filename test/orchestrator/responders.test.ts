import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createContext } from '../../src/context/create-context.js';
import type { ChatRequest } from '../../src/engines/chat-request.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { InternalError } from '../../src/errors/internal-error.js';
import {
  checkChannel,
  fitToChannel,
  stripMarkdown,
  textForChannel,
  textOf,
} from '../../src/orchestrator/channel-text.js';
import { createMultimodalResponder } from '../../src/orchestrator/multimodal-responder.js';
import { createPassthroughResponder } from '../../src/orchestrator/passthrough-responder.js';
import {
  DEFAULT_CHANNEL,
  type Channel,
  type Response,
  type ResponseChunk,
} from '../../src/orchestrator/responder.js';
import { chunksOfText, sseChunk, websocketChunk } from '../../src/orchestrator/stream-chunks.js';
import {
  createToneResponder,
  type ToneResponderOptions,
} from '../../src/orchestrator/tone-responder.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { quietRuntime } from '../support/runtime.js';
import {
  agentResult,
  channelOf,
  codePoints,
  describeResponder,
  hasLoneSurrogate,
} from './responder.conformance.js';

/** The text of a request's last message: what an echoing model answers. */
function lastMessage(request: ChatRequest): string {
  return request.messages.at(-1)?.content ?? '';
}

describeResponder('passthrough', () => createPassthroughResponder());
describeResponder('multimodal', () => createMultimodalResponder());

// The tone responder over a real runtime whose model answers the text unchanged.
const echoRuntime = quietRuntime({
  engines: [createScriptedEngine({ tokenDelayMs: 0, script: lastMessage })],
});
afterAll(() => echoRuntime.close());
describeResponder('tone', () =>
  createToneResponder({
    tone: 'friendly',
    chat: (call, ctx) => echoRuntime.chat(call, ctx),
  }),
);

const SMS: Channel = { name: 'sms', supportsMarkdown: false, supportsMedia: false, maxLength: 12 };

describe('fitToChannel', () => {
  const fit = (text: string, maxLength: number | null) =>
    fitToChannel(text, { ...DEFAULT_CHANNEL, maxLength });

  it('leaves a text of exactly maxLength code points unchanged', () => {
    expect(fit('hello world', 11)).toEqual({ text: 'hello world', truncated: false });
  });

  it('leaves any text unchanged without a limit', () => {
    const long = 'word '.repeat(10_000);
    expect(fit(long, null)).toEqual({ text: long, truncated: false });
  });

  it('cuts at the last whitespace before the limit and ends in an ellipsis', () => {
    expect(fit('hello world', 10)).toEqual({ text: 'hello…', truncated: true });
    expect(fit('the quick brown fox', 12)).toEqual({ text: 'the quick…', truncated: true });
  });

  it('cuts at whitespace right at the limit, keeping every code point before it', () => {
    expect(fit('abc def', 4)).toEqual({ text: 'abc…', truncated: true });
  });

  it('cuts at a line break like at a space', () => {
    expect(fit('line one\nline two', 12).text).toBe('line one…');
  });

  it('drops the whitespace before the cut', () => {
    expect(fit('hello    world again', 12).text).toBe('hello…');
  });

  it('keeps the trailing whitespace of a text that fits', () => {
    expect(fit('hi   ', 5)).toEqual({ text: 'hi   ', truncated: false });
  });

  it('cuts one word longer than the limit at the limit', () => {
    expect(fit('supercalifragilistic', 10)).toEqual({ text: 'supercali…', truncated: true });
  });

  it('counts code points, not UTF-16 units, and never splits a surrogate pair', () => {
    const emoji = '😀'.repeat(8);
    expect(emoji.length).toBe(16);
    expect(fit(emoji, 8)).toEqual({ text: emoji, truncated: false });
    const cut = fit(emoji, 5).text;
    expect(cut).toBe('😀😀😀😀…');
    expect(hasLoneSurrogate(cut)).toBe(false);
    expect(fit('😀😀😀 😀😀😀', 5).text).toBe('😀😀😀…');
  });

  it('keeps an emoji with a skin-tone modifier whole when it can', () => {
    expect(fit('👍🏽👍🏽👍🏽', 4).text).toBe('👍🏽…');
  });

  it('with maxLength 1 sends only the ellipsis for a longer text', () => {
    expect(fit('hello', 1)).toEqual({ text: '…', truncated: true });
    expect(fit('h', 1)).toEqual({ text: 'h', truncated: false });
    expect(fit('😀😀', 1).text).toBe('…');
  });
});

describe('stripMarkdown', () => {
  it('removes emphasis, strikethrough and inline-code backticks', () => {
    expect(stripMarkdown('**bold**, *it*, __b__, _i_, ***both***, ~~old~~, `code`')).toBe(
      'bold, it, b, i, both, old, code',
    );
    expect(stripMarkdown('**bold *and* it**')).toBe('bold and it');
  });

  it('keeps underscores inside words, lone asterisks and markup inside code', () => {
    expect(stripMarkdown('snake_case_name and 2 * 3 * 4')).toBe('snake_case_name and 2 * 3 * 4');
    expect(stripMarkdown('run `rm -rf _tmp_ **x**` now')).toBe('run rm -rf _tmp_ **x** now');
  });

  it('removes heading marks', () => {
    expect(stripMarkdown('# Title\n### Sub ###\ntext')).toBe('Title\nSub\ntext');
  });

  it('writes links and images as text (url)', () => {
    expect(stripMarkdown('see [the docs](https://x.dev/a) and ![a cat](https://x.dev/c.png)')).toBe(
      'see the docs (https://x.dev/a) and a cat (https://x.dev/c.png)',
    );
  });

  it('keeps list bullets as "- ", indentation included', () => {
    expect(stripMarkdown('* one\n+ two\n- three\n  * nested\n1. first')).toBe(
      '- one\n- two\n- three\n  - nested\n1. first',
    );
  });

  it('removes code fences and quote marks, keeping code as it is', () => {
    expect(stripMarkdown('> quoted **x**\n```ts\nconst a = b * c * d;\n```\nafter')).toBe(
      'quoted x\nconst a = b * c * d;\nafter',
    );
  });

  it('is applied by textForChannel only when the channel lacks markdown', () => {
    expect(textForChannel('**hi** there', DEFAULT_CHANNEL).text).toBe('**hi** there');
    expect(textForChannel('**hi** there friend', SMS)).toEqual({
      text: 'hi there…',
      truncated: true,
    });
  });
});

describe('textOf', () => {
  it('gives a string output as it is and other outputs as JSON', () => {
    expect(textOf(agentResult({ output: 'hi\n' }))).toBe('hi\n');
    expect(textOf(agentResult({ output: { a: [1, 'x'] } }))).toBe('{"a":[1,"x"]}');
    expect(textOf(agentResult({ output: 42 }))).toBe('42');
    expect(textOf(agentResult({ output: null }))).toBe('');
    expect(textOf(agentResult({ output: { n: 10n } }))).toBe('{"n":"10"}');
  });

  it('gives a placeholder rather than throwing for an output JSON cannot show', () => {
    const cycle: Record<string, unknown> = {};
    cycle['self'] = cycle;
    expect(textOf(agentResult({ output: cycle }))).toBe('[an output that cannot be shown as text]');
  });

  it('gives "<status>: <message>" for a failure and the message alone for needs_data', () => {
    expect(textOf(agentResult({ status: 'error', error: new InternalError('boom') }))).toBe(
      'error: boom',
    );
    expect(textOf(agentResult({ status: 'error' }))).toBe('error');
    expect(textOf(agentResult({ status: 'wrong_handler', output: 'not mine' }))).toBe(
      'wrong_handler: not mine',
    );
    expect(textOf(agentResult({ status: 'needs_credentials', output: 'Sign in first' }))).toBe(
      'Sign in first',
    );
  });
});

describe('checkChannel', () => {
  it('returns a valid channel', () => {
    expect(checkChannel(SMS)).toBe(SMS);
    expect(checkChannel(DEFAULT_CHANNEL)).toBe(DEFAULT_CHANNEL);
  });

  it('throws TypeError or RangeError naming the field', () => {
    expect(() => checkChannel(null)).toThrow(TypeError);
    expect(() => checkChannel({ ...SMS, name: '' })).toThrow(/channel\.name/);
    expect(() => checkChannel({ ...SMS, supportsMedia: 'no' })).toThrow(
      /channel\.supportsMedia must be a boolean/,
    );
    expect(() => checkChannel({ ...SMS, maxLength: '12' })).toThrow(TypeError);
    for (const maxLength of [0, -1, 1.5, Number.NaN, Infinity]) {
      expect(() => checkChannel({ ...SMS, maxLength })).toThrow(RangeError);
      expect(() => checkChannel({ ...SMS, maxLength })).toThrow(/channel\.maxLength/);
    }
  });
});

describe('createToneResponder', () => {
  let runtime: Runtime | null = null;
  afterEach(async () => {
    await runtime?.close();
    runtime = null;
  });

  /** A tone responder over a real runtime whose scripted model runs `script`. */
  function toneOver(
    script: (request: ChatRequest) => string,
    options: Partial<ToneResponderOptions> = {},
  ) {
    const rt = quietRuntime({ engines: [createScriptedEngine({ tokenDelayMs: 0, script })] });
    runtime = rt;
    return createToneResponder({
      tone: 'cheerful',
      chat: (call, ctx) => rt.chat(call, ctx),
      ...options,
    });
  }

  it('sends the model’s rewrite, asked through the runtime and counted on the context', async () => {
    const requests: ChatRequest[] = [];
    const responder = toneOver((request) => {
      requests.push(request);
      return 'rewritten text';
    });
    const ctx = createContext();
    const response = await responder.format(agentResult({ output: 'the text' }), SMS, ctx);
    expect(response.text).toBe('rewritten…');
    expect(response.metadata).toMatchObject({
      tone: 'cheerful',
      rewritten: true,
      truncated: true,
      status: 'success',
    });
    expect(response.metadata).not.toHaveProperty('tone_error');
    expect(requests).toHaveLength(1);
    const system = requests[0]?.messages[0]?.content ?? '';
    expect(system).toContain('cheerful');
    expect(system).toContain('at most 12 characters');
    expect(system).toContain('plain text');
    expect(lastMessage(requests[0] as ChatRequest)).toBe('the text');
    expect(ctx.tokenUsage.completionTokens).toBe(2);
  });

  it('passes the engine, model and maxTokens it was given', async () => {
    const requests: ChatRequest[] = [];
    const responder = toneOver(
      (request) => {
        requests.push(request);
        return 'ok then';
      },
      { engine: 'scripted', model: 'tiny', maxTokens: 5 },
    );
    await responder.format(agentResult({ output: 'x' }), DEFAULT_CHANNEL, createContext());
    expect(requests[0]).toMatchObject({ model: 'tiny', params: { max_tokens: 5 } });
  });

  it('sends the original unchanged, with tone_error, when the model call throws', async () => {
    const responder = toneOver(() => {
      throw new Error('model is down');
    });
    const response = await responder.format(
      agentResult({ output: '**Booked** for Tuesday.' }),
      DEFAULT_CHANNEL,
      createContext(),
    );
    expect(response.text).toBe('**Booked** for Tuesday.');
    expect(response.metadata).toMatchObject({ rewritten: false, tone_error: 'model is down' });
  });

  it('sends the original when the engine does not exist (the runtime rejects)', async () => {
    const responder = toneOver(() => 'never', { engine: 'no-such-engine' });
    const response = await responder.format(
      agentResult({ output: 'Booked for Tuesday.' }),
      DEFAULT_CHANNEL,
      createContext(),
    );
    expect(response.text).toBe('Booked for Tuesday.');
    expect(response.metadata['tone_error']).toEqual(expect.stringContaining('no-such-engine'));
  });

  it('sends the original when the model answers nothing or is cut at max_tokens', async () => {
    const empty = toneOver(() => '   ');
    const a = await empty.format(agentResult({ output: 'hi' }), DEFAULT_CHANNEL, createContext());
    expect(a.text).toBe('hi');
    expect(a.metadata['tone_error']).toBe('the model answered with an empty text');
    await runtime?.close();

    const cut = toneOver(() => 'one two three four', { maxTokens: 2 });
    const b = await cut.format(agentResult({ output: 'hi' }), DEFAULT_CHANNEL, createContext());
    expect(b.text).toBe('hi');
    expect(b.metadata['tone_error']).toBe('the rewrite was cut at max_tokens');
  });

  it('does not rewrite a failed result', async () => {
    let calls = 0;
    const responder = toneOver(() => {
      calls++;
      return 'rewritten';
    });
    const response = await responder.format(
      agentResult({ status: 'error', error: new InternalError('boom') }),
      DEFAULT_CHANNEL,
      createContext(),
    );
    expect(response.text).toBe('error: boom');
    expect(response.metadata['rewritten']).toBe(false);
    expect(calls).toBe(0);
  });

  it('checks its options, naming the option', () => {
    const chat: ToneResponderOptions['chat'] = () => Promise.reject(new Error('unused'));
    expect(() => createToneResponder({ tone: ' ', chat })).toThrow(/tone/);
    expect(() => createToneResponder({ tone: 'x', chat: 'f' as unknown as typeof chat })).toThrow(
      TypeError,
    );
    expect(() => createToneResponder({ tone: 'x', chat, maxTokens: 0 })).toThrow(/maxTokens/);
    expect(() => createToneResponder({ tone: 'x', chat, engine: '' })).toThrow(RangeError);
  });
});

describe('createMultimodalResponder', () => {
  const responder = createMultimodalResponder();
  const image = { type: 'image', url: 'https://example.com/room.jpg', alt: 'the room' } as const;
  const card = {
    type: 'card',
    title: 'Breakfast',
    body: '7 to 10',
    actions: [{ label: 'Book', value: 'book' }],
  } as const;
  const format = (output: unknown, channel: Channel): Promise<Response> =>
    responder.format(agentResult({ output }), channel, createContext());

  it('sends text and blocks as media on a channel with media', async () => {
    const response = await format({ text: 'Your room', blocks: [image, card] }, DEFAULT_CHANNEL);
    expect(response.text).toBe('Your room');
    expect(response.media).toEqual([image, card]);
    expect(response.metadata).toMatchObject({ dropped_blocks: 0, truncated: false });
  });

  it("appends the blocks' text on a channel without media", async () => {
    const channel = channelOf({ supportsMedia: false });
    const response = await format({ text: 'Your room', blocks: [image, card] }, channel);
    expect(response.media).toEqual([]);
    expect(response.text).toBe('Your room\n\n[image: the room]\n\nBreakfast: 7 to 10');
    const noAlt = await format({ blocks: [{ ...image, alt: '' }] }, channel);
    expect(noAlt.text).toBe('[image: https://example.com/room.jpg]');
  });

  it("fits the text with the blocks' text to the channel", async () => {
    const response = await format({ text: 'Your room', blocks: [image] }, SMS);
    expect(response.text).toBe('Your room…');
    expect(response.metadata['truncated']).toBe(true);
  });

  it('drops invalid blocks and counts them', async () => {
    const response = await format(
      {
        text: 'x',
        blocks: [
          { type: 'video', url: 'https://example.com/v.mp4' },
          { type: 'image', url: 'javascript:alert(1)', alt: 'x' },
          { type: 'card', title: 1, body: 'b' },
          'not a block',
          { ...image, extra: 'dropped field' },
        ],
      },
      DEFAULT_CHANNEL,
    );
    expect(response.media).toEqual([image]);
    expect(response.metadata['dropped_blocks']).toBe(4);
  });

  it('sends a string output like passthrough, and another object as JSON', async () => {
    const channel = channelOf({ supportsMarkdown: false });
    const passthrough = await createPassthroughResponder().format(
      agentResult({ output: '**hi**' }),
      channel,
      createContext(),
    );
    const multimodal = await format('**hi**', channel);
    expect(multimodal).toEqual(
      expect.objectContaining({ text: passthrough.text, media: [], channel: channel.name }),
    );
    expect((await format({ answer: 42 }, DEFAULT_CHANNEL)).text).toBe('{"answer":42}');
    expect((await format({ text: 5 }, DEFAULT_CHANNEL)).text).toBe('{"text":5}');
  });
});

describe('sseChunk and websocketChunk', () => {
  const response: Response = { text: 'Hello', channel: 'web', media: [], metadata: { n: 1 } };

  it('frame a text chunk', () => {
    const chunk: ResponseChunk = { index: 0, text: 'Hel\nlo "x"', done: false };
    expect(sseChunk(chunk)).toBe(
      'event: chunk\nid: 0\ndata: {"type":"chunk","index":0,"text":"Hel\\nlo \\"x\\""}\n\n',
    );
    expect(websocketChunk(chunk)).toBe('{"type":"chunk","index":0,"text":"Hel\\nlo \\"x\\""}');
  });

  it('frame the final chunk with its response', () => {
    const chunk: ResponseChunk = { index: 2, text: '', done: true, response };
    const message =
      '{"type":"done","index":2,"text":"","response":' +
      '{"text":"Hello","channel":"web","media":[],"metadata":{"n":1}}}';
    expect(websocketChunk(chunk)).toBe(message);
    expect(sseChunk(chunk)).toBe(`event: done\nid: 2\ndata: ${message}\n\n`);
  });

  it('keep an SSE frame to one data line whatever the text', () => {
    const frame = sseChunk({ index: 1, text: 'a\r\nb\nc\u2028', done: false });
    expect(frame.split('\n').filter((line) => line.startsWith('data:'))).toHaveLength(1);
    expect(frame.match(/\n/g)).toHaveLength(4);
  });

  it('reject a chunk with a bad index', () => {
    expect(() => websocketChunk({ index: -1, text: '', done: false })).toThrow(RangeError);
  });
});

describe('chunksOfText', () => {
  const done: Response = { text: 'final', channel: 'sms', media: [], metadata: {} };

  async function* from(texts: readonly string[]): AsyncGenerator<string> {
    for (const t of texts) yield t;
  }

  async function collect(chunks: AsyncIterable<ResponseChunk>): Promise<ResponseChunk[]> {
    const out: ResponseChunk[] = [];
    for await (const chunk of chunks) out.push(chunk);
    return out;
  }

  it('yields texts as chunks in order, then a final chunk with the response', async () => {
    const chunks = await collect(
      chunksOfText(from(['Hel', 'lo']), DEFAULT_CHANNEL, () => Promise.resolve(done)),
    );
    expect(chunks).toEqual([
      { index: 0, text: 'Hel', done: false },
      { index: 1, text: 'lo', done: false },
      { index: 2, text: '', done: true, response: done },
    ]);
  });

  it('never yields more than maxLength code points of text in all', async () => {
    let finished = false;
    const chunks = await collect(
      chunksOfText(
        from(['hello ', 'wor', 'ld and more', ' tail']),
        channelOf({ maxLength: 8 }),
        () => {
          finished = true;
          return Promise.resolve(done);
        },
      ),
    );
    expect(chunks.map((c) => c.text)).toEqual(['hello ', 'wo', '']);
    expect(chunks.at(-1)).toEqual({ index: 2, text: '', done: true, response: done });
    expect(finished).toBe(true);
  });

  it('counts code points and never splits an emoji, even one split between texts', async () => {
    const chunks = await collect(
      chunksOfText(from(['a\uD83D', '\uDE00b', '😀😀😀']), channelOf({ maxLength: 4 }), () =>
        Promise.resolve(done),
      ),
    );
    const texts = chunks.filter((c) => !c.done).map((c) => c.text);
    expect(texts).toEqual(['a', '😀b', '😀']);
    expect(texts.some(hasLoneSurrogate)).toBe(false);
    expect(codePoints(texts.join(''))).toBe(4);
  });

  it('strips markdown per text on a channel without it, and skips empty texts', async () => {
    const chunks = await collect(
      chunksOfText(
        from(['**bold** ', '', 'and _it_']),
        channelOf({ supportsMarkdown: false }),
        () => Promise.resolve(done),
      ),
    );
    expect(chunks.map((c) => c.text)).toEqual(['bold ', 'and it', '']);
  });

  it('pulls from the source only when asked, and closes it when the consumer stops', async () => {
    let pulls = 0;
    let closed = false;
    let finished = false;
    async function* source(): AsyncGenerator<string> {
      try {
        for (let i = 0; ; i++) {
          pulls++;
          yield `t${i} `;
        }
      } finally {
        closed = true;
      }
    }
    const chunks = chunksOfText(source(), DEFAULT_CHANNEL, () => {
      finished = true;
      return Promise.resolve(done);
    });
    const it = chunks[Symbol.asyncIterator]();
    expect(pulls).toBe(0);
    expect((await it.next()).value).toEqual({ index: 0, text: 't0 ', done: false });
    expect((await it.next()).value).toEqual({ index: 1, text: 't1 ', done: false });
    expect(pulls).toBe(2);
    await it.return?.();
    expect(closed).toBe(true);
    expect(pulls).toBe(2);
    expect(finished).toBe(false);
  });

  it('rejects with the source’s error, without a final chunk', async () => {
    async function* failing(): AsyncGenerator<string> {
      yield 'a';
      throw new Error('stream broke');
    }
    const seen: ResponseChunk[] = [];
    const run = async () => {
      for await (const chunk of chunksOfText(failing(), DEFAULT_CHANNEL, () =>
        Promise.resolve(done),
      ))
        seen.push(chunk);
    };
    await expect(run()).rejects.toThrow('stream broke');
    expect(seen).toEqual([{ index: 0, text: 'a', done: false }]);
  });

  it('checks its arguments', () => {
    const finish = () => Promise.resolve(done);
    expect(() => chunksOfText(from([]), { ...SMS, maxLength: 0 }, finish)).toThrow(RangeError);
    expect(() => chunksOfText(['a'] as unknown as AsyncIterable<string>, SMS, finish)).toThrow(
      /texts/,
    );
  });
});
