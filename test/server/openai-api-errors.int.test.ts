/**
 * The OpenAI API's refusals (issue 48 §3), with OpenAI's SDK and raw requests: an unknown
 * model (404), a bad key (401), a key that may not write (403), each in OpenAI's error
 * shape `{ error: { message, type, param, code } }`; malformed bodies and what axon cannot
 * honour (tools, sampling, n > 1, images, tool messages) refused with 400 naming the field,
 * nothing run; the keys' users own their runs; `openaiApi.enabled: false` serves neither route.
 */
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { notebook } from '../../examples/index.js';
import { useTestServers, type ApiResponse, type TestServer } from '../support/server.js';

const servers = useTestServers('openai-api-errors');

const KEY = 'alice-key-0123456789';
const BOB_KEY = 'bob-key-0123456789abc';
const READER_KEY = 'reader-key-0123456789';
const KEYS = [
  { key: KEY, user_id: 'alice' },
  { key: BOB_KEY, user_id: 'bob' },
  { key: READER_KEY, user_id: 'reader', permissions: ['read' as const] },
];

const client = (s: TestServer, apiKey = 'unused'): OpenAI =>
  new OpenAI({ baseURL: `${s.url}/v1`, apiKey, maxRetries: 0 });

const user = (content: string): OpenAI.ChatCompletionMessageParam => ({ role: 'user', content });

async function rejection(p: Promise<unknown>): Promise<Error & Record<string, unknown>> {
  try {
    await p;
  } catch (err) {
    return err as Error & Record<string, unknown>;
  }
  throw new Error('expected a rejection');
}

/** Expects `res` to be OpenAI's error body with `status`, `code` and `param`. */
function expectOpenAIError(
  res: ApiResponse,
  status: number,
  code: string,
  param: string | null,
): void {
  expect(res.status, res.text).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.body).toEqual({
    error: {
      message: expect.any(String) as string,
      type: expect.any(String) as string,
      param,
      code,
    },
  });
  expect(res.headers.get('x-correlation-id')).toBeTruthy();
}

/** A completion request whose body is `body` as JSON. */
const post = (s: TestServer, body: unknown, headers: Record<string, string> = {}) =>
  s.api('POST', '/v1/chat/completions', JSON.stringify(body), {
    'content-type': 'application/json',
    ...headers,
  });
/** A completion request whose body is `text` as it is. */
const postRaw = (s: TestServer, text: string, contentType: string) =>
  s.api('POST', '/v1/chat/completions', text, { 'content-type': contentType });

describe('an unknown model', () => {
  it("is 404 model_not_found in OpenAI's shape — the SDK's NotFoundError — for a name no agent has, a durable agent, a name without agent:, and axon without a front door", async () => {
    const s = await servers.start({ runtime: { agents: [notebook] } });
    const err = await rejection(
      client(s).chat.completions.create({ model: 'agent:nope', messages: [user('hi')] }),
    );
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err['status']).toBe(404);
    expect(err['error']).toEqual({
      message: expect.stringContaining('agent:nope') as string,
      type: 'invalid_request_error',
      param: 'model',
      code: 'model_not_found',
    });
    const durable = await post(s, { model: 'agent:notebook', messages: [user('hi')] });
    expectOpenAIError(durable, 404, 'model_not_found', 'model');
    expect(durable.text).toContain('/v1/agents/notebook/{key}/messages');
    for (const model of ['planner', 'axon', 'gpt-4o']) {
      expectOpenAIError(
        await post(s, { model, messages: [user('hi')] }),
        404,
        'model_not_found',
        'model',
      );
    }
    expect((await s.api('GET', '/v1/runs')).body).toEqual([]);
  });
});

describe('keys', () => {
  it('a bad key is 401 (AuthenticationError), a read-only key may list but not complete (403); each user owns the runs of their completions', async () => {
    const s = await servers.start({ server: { keys: KEYS } });
    const bad = await rejection(client(s, 'not-a-key-of-this-server').models.list());
    expect(bad).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(bad['error']).toMatchObject({ code: 'invalid_api_key' });
    const noKey = await s.api('GET', '/v1/models');
    expectOpenAIError(noKey, 401, 'invalid_api_key', null);
    const badPost = await rejection(
      client(s, 'not-a-key-of-this-server').chat.completions.create({
        model: 'agent:planner',
        messages: [user('hi')],
      }),
    );
    expect(badPost).toBeInstanceOf(OpenAI.AuthenticationError);

    expect((await client(s, READER_KEY).models.list()).data.length).toBeGreaterThan(0);
    const reader = await rejection(
      client(s, READER_KEY).chat.completions.create({
        model: 'agent:planner',
        messages: [user('hi')],
      }),
    );
    expect(reader).toBeInstanceOf(OpenAI.PermissionDeniedError);

    const completion = await client(s, KEY).chat.completions.create({
      model: 'agent:calendar',
      messages: [user('next monday')],
    });
    const stepId = completion.id.replace(/^chatcmpl-/, '');
    const alice = { authorization: `Bearer ${KEY}` };
    const bob = { authorization: `Bearer ${BOB_KEY}` };
    const runs = (await s.api('GET', '/v1/runs', undefined, alice)).body as { entry: string }[];
    expect(runs.map((r) => r.entry)).toEqual(['calendar']);
    expect((await s.api('GET', '/v1/runs', undefined, bob)).body).toEqual([]);
    expect((await s.api('GET', `/v1/steps/${stepId}`, undefined, bob)).status).toBe(404);
    expect((await s.api('GET', `/v1/steps/${stepId}`, undefined, alice)).status).toBe(200);
  });
});

describe('a body axon cannot take', () => {
  it('is 400 in OpenAI’s shape naming the field, and runs nothing; the server stays up', async () => {
    const s = await servers.start();
    const messages = [user('hi')];
    const model = 'agent:calendar';
    const cases: [unknown, string, string | null][] = [
      [[], 'invalid_value', null],
      ['a string', 'invalid_value', null],
      [null, 'invalid_value', null],
      [{ messages }, 'invalid_value', 'model'],
      [{ model: 42, messages }, 'invalid_value', 'model'],
      [{ model }, 'invalid_value', 'messages'],
      [{ model, messages: [] }, 'invalid_value', 'messages'],
      [{ model, messages: 'hi' }, 'invalid_value', 'messages'],
      [{ model, messages: [42] }, 'invalid_value', 'messages[0]'],
      [{ model, messages: [{ role: 'robot', content: 'x' }] }, 'invalid_value', 'messages[0].role'],
      [{ model, messages: [{ role: 'user' }] }, 'invalid_value', 'messages[0].content'],
      [
        { model, messages: [{ role: 'assistant', content: 'x' }] },
        'invalid_value',
        'messages[0].role',
      ],
      [
        { model, messages: [{ role: 'user', content: 'x', name: 'al' }] },
        'unsupported_parameter',
        'messages[0].name',
      ],
      [
        {
          model,
          messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }],
        },
        'unsupported_parameter',
        'messages[0].content[0].type',
      ],
      [
        { model, messages: [{ role: 'tool', content: 'x', tool_call_id: 't' }, ...messages] },
        'unsupported_parameter',
        'messages[0].role',
      ],
      [
        {
          model,
          messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 't' }] }, ...messages],
        },
        'unsupported_parameter',
        'messages[0].tool_calls',
      ],
      [
        { model, messages, tools: [{ type: 'function', function: { name: 'f' } }] },
        'unsupported_parameter',
        'tools',
      ],
      [{ model, messages, n: 2 }, 'unsupported_parameter', 'n'],
      [{ model, messages, temperature: 0.2 }, 'unsupported_parameter', 'temperature'],
      [{ model, messages, max_tokens: 10 }, 'unsupported_parameter', 'max_tokens'],
      [
        { model, messages, response_format: { type: 'json_object' } },
        'unsupported_parameter',
        'response_format',
      ],
      [{ model, messages, logprobs: true }, 'unsupported_parameter', 'logprobs'],
      [{ model, messages, something: 1 }, 'unknown_parameter', 'something'],
      [{ model, messages, stream: 'yes' }, 'invalid_value', 'stream'],
      [
        { model, messages, stream_options: { include_usage: true } },
        'invalid_value',
        'stream_options',
      ],
      [
        { model, messages, stream: true, stream_options: { extra: 1 } },
        'unsupported_parameter',
        'stream_options.extra',
      ],
      [{ model, messages, seed: 1.5 }, 'invalid_value', 'seed'],
    ];
    for (const [body, code, param] of cases) {
      const res = await post(s, body);
      expectOpenAIError(res, 400, code, param);
      expect((res.body as { error: { type: string } }).error.type).toBe('invalid_request_error');
    }
    // Not JSON, or not JSON at all.
    expectOpenAIError(
      await postRaw(s, '{"model":', 'application/json'),
      400,
      'invalid_params',
      null,
    );
    expectOpenAIError(
      await postRaw(s, 'model=x', 'application/x-www-form-urlencoded'),
      415,
      'invalid_params',
      null,
    );
    expect((await s.api('GET', '/v1/runs')).body).toEqual([]);

    // The SDK raises a refusal as BadRequestError; null and [] are taken as absent, n: 1 as asked.
    const sdk = await rejection(
      client(s).chat.completions.create({ model: 'agent:planner', messages, temperature: 1 }),
    );
    expect(sdk).toBeInstanceOf(OpenAI.BadRequestError);
    const fine = await post(s, {
      model: 'agent:calendar',
      messages: [user('next friday')],
      n: 1,
      temperature: null,
      tools: [],
      logprobs: false,
    });
    expect(fine.status, fine.text).toBe(200);
  });
});

describe('openaiApi.enabled: false', () => {
  it('serves neither route (404) while the rest of the API answers', async () => {
    const s = await servers.start({ server: { openaiApi: { enabled: false } } });
    const err = await rejection(client(s).models.list());
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    const completion = await post(s, { model: 'agent:planner', messages: [user('hi')] });
    expect(completion.status).toBe(404);
    expect((await s.api('GET', '/v1/pools')).status).toBe(200);
    expect((await s.api('GET', '/v1/runs')).body).toEqual([]);
  });
});
