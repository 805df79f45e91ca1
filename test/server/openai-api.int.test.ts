/**
 * The OpenAI API in front of the agents (issue 48 §3): a real server with the examples'
 * agents, and OpenAI's own SDK (`openai`) as the client — the models, a completion whole and
 * streamed (tokens, usage), each a run of the caller's with its step; errors in OpenAI's
 * shape (the SDK's error classes); what axon cannot honour refused, nothing run; keys; the
 * off switch; a client that goes away cancels the step.
 */
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import { notebook } from '../../examples/index.js';
import { POLL, useTestServers, type TestServer } from '../support/server.js';

const servers = useTestServers('openai-api');

const PLAN = 'Plan a trip to Berlin next Tuesday';

/** Answers its input as JSON: what the agent was given. */
const echo = defineAgent({
  name: 'echo',
  description: 'answers its input as JSON',
  handler: (input) => ({ message: input.message, history: input.history ?? null }),
});
const broken = defineAgent({
  name: 'broken',
  description: 'always fails',
  handler: () => {
    throw new Error('the broken agent broke');
  },
});
/** Streams `tick ` until it is cancelled. */
const endless = defineAgent({
  name: 'endless',
  description: 'streams until cancelled',
  async *handler() {
    for (;;) {
      yield 'tick ';
      await new Promise((r) => setTimeout(r, 10));
    }
  },
});
/** Two tokens with a pause between them. */
const slow = defineAgent({
  name: 'slow',
  description: 'pauses between two tokens',
  async *handler() {
    yield 'before ';
    await new Promise((r) => setTimeout(r, 200));
    yield 'after';
  },
});

/** A server with the examples' agents, the test agents above and a durable agent. */
function start(server: Parameters<typeof servers.start>[0] = {}): Promise<TestServer> {
  return servers.start({
    ...server,
    runtime: { agents: [echo, broken, endless, slow, notebook], ...server.runtime },
  });
}

/** OpenAI's client of `s` (no retries: a retried completion would run its agent again). */
const client = (s: TestServer, apiKey = 'unused'): OpenAI =>
  new OpenAI({ baseURL: `${s.url}/v1`, apiKey, maxRetries: 0 });

const user = (content: string): OpenAI.ChatCompletionMessageParam => ({ role: 'user', content });

/** The rejection of `p`, which must reject. */
async function rejection(p: Promise<unknown>): Promise<Error & Record<string, unknown>> {
  try {
    await p;
  } catch (err) {
    return err as Error & Record<string, unknown>;
  }
  throw new Error('expected a rejection');
}

/** The step named by a completion's id (`chatcmpl-<step_id>`). */
const stepOf = (id: string): string => id.replace(/^chatcmpl-/, '');

describe('GET /v1/models', () => {
  it("lists every agent as agent:<name> in OpenAI's shape; not the durable agent; one is retrieved by id", async () => {
    const s = await start();
    const models = await client(s).models.list();
    const ids = models.data.map((m) => m.id);
    expect(ids).toEqual(
      [
        'agent:broken',
        'agent:calendar',
        'agent:echo',
        'agent:endless',
        'agent:flights',
        'agent:planner',
        'agent:slow',
      ].sort(),
    );
    for (const m of models.data) {
      expect(m).toEqual({
        id: m.id,
        object: 'model',
        created: expect.any(Number) as number,
        owned_by: 'axon',
      });
    }
    expect((await client(s).models.retrieve('agent:planner')).id).toBe('agent:planner');
    const missing = await rejection(client(s).models.retrieve('agent:notebook'));
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
  });
});

describe('POST /v1/chat/completions', () => {
  it('answers a chat.completion: the agent’s output, the step’s usage, an id naming the step of a run of the caller’s', async () => {
    const s = await start();
    const { data: completion, response } = await client(s)
      .chat.completions.create({ model: 'agent:planner', messages: [user(PLAN)] })
      .withResponse();
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe('agent:planner');
    expect(completion.choices).toHaveLength(1);
    const [choice] = completion.choices;
    expect(choice?.finish_reason).toBe('stop');
    expect(choice?.message.role).toBe('assistant');
    expect(choice?.message.content).toMatch(
      /^Here is your plan for Berlin\. Fly out on \d{4}-\d{2}-\d{2}/,
    );
    expect(completion.usage).toEqual({
      prompt_tokens: 150,
      completion_tokens: 50,
      total_tokens: 200,
    });
    expect(completion.id).toMatch(/^chatcmpl-step_[0-9a-f]{32}$/);
    const stepId = stepOf(completion.id);
    expect(response.headers.get('x-axon-step-id')).toBe(stepId);

    // The step and its run are in the store, as the trace UI shows them.
    const step = await s.api('GET', `/v1/steps/${stepId}`);
    expect(step.body).toMatchObject({ status: 'succeeded', name: 'planner' });
    const runId = (step.body as { run_id: string }).run_id;
    const run = await s.api('GET', `/v1/runs/${runId}`);
    expect(run.body).toMatchObject({ status: 'completed', entry: 'planner' });
    const tree = await s.api('GET', `/v1/runs/${runId}/steps`);
    expect(JSON.stringify(tree.body)).toContain('calendar');
  });

  it('maps a conversation: the last message is the agent’s message, the ones before its history (developer as system, text parts joined)', async () => {
    const s = await start();
    const completion = await client(s).chat.completions.create({
      model: 'agent:echo',
      messages: [
        { role: 'developer', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'first' },
            { type: 'text', text: 'part' },
          ],
        },
        { role: 'assistant', content: 'an answer', refusal: null },
        user('the question'),
      ],
    });
    expect(JSON.parse(completion.choices[0]?.message.content ?? '')).toEqual({
      message: 'the question',
      history: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'first\npart' },
        { role: 'assistant', content: 'an answer' },
      ],
    });
    const single = await client(s).chat.completions.create({
      model: 'agent:echo',
      messages: [user('alone')],
    });
    expect(JSON.parse(single.choices[0]?.message.content ?? '')).toEqual({
      message: 'alone',
      history: null,
    });
  });

  it('takes seed as the run’s seed', async () => {
    const s = await start();
    const completion = await client(s).chat.completions.create({
      model: 'agent:planner',
      messages: [user(PLAN)],
      // Deprecated by OpenAI; axon takes it as the run's seed.
      // eslint-disable-next-line @typescript-eslint/no-deprecated
      seed: 7,
    });
    const step = await s.api('GET', `/v1/steps/${stepOf(completion.id)}`);
    const run = await s.api('GET', `/v1/runs/${(step.body as { run_id: string }).run_id}`);
    expect((run.body as { seed: number }).seed).toBe(7);
  });

  it('answers a question an agent asks back (needs_data) as its content', async () => {
    const s = await start();
    const completion = await client(s).chat.completions.create({
      model: 'agent:calendar',
      messages: [user('whenever suits')],
    });
    expect(completion.choices[0]?.message.content).toBe('Which day should the trip start?');
  });

  it('a failing agent is an error in OpenAI’s shape (500, InternalServerError) naming its step', async () => {
    const s = await start();
    const err = await rejection(
      client(s).chat.completions.create({ model: 'agent:broken', messages: [user('go')] }),
    );
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect(err['status']).toBe(500);
    expect(err['error']).toMatchObject({
      message: expect.stringContaining('the broken agent broke') as string,
    });
    const stepId = (err['headers'] as Headers).get('x-axon-step-id');
    expect((await s.api('GET', `/v1/steps/${stepId}`)).body).toMatchObject({ status: 'failed' });
  });
});

describe('stream: true', () => {
  it('sends chat.completion.chunk frames of the step’s tokens that reassemble the answer, then the usage, then [DONE]', async () => {
    const s = await start();
    const whole = await client(s).chat.completions.create({
      model: 'agent:planner',
      messages: [user(PLAN)],
    });
    const stream = await client(s).chat.completions.create({
      model: 'agent:planner',
      messages: [user(PLAN)],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe(whole.choices[0]?.message.content);
    // Token by token, not the answer at once.
    expect(chunks.filter((c) => (c.choices[0]?.delta.content ?? '') !== '').length).toBeGreaterThan(
      10,
    );
    expect(chunks[0]?.choices[0]?.delta.role).toBe('assistant');
    const finish = chunks.at(-2);
    expect(finish?.choices[0]?.finish_reason).toBe('stop');
    const last = chunks.at(-1);
    expect(last?.choices).toEqual([]);
    expect(last?.usage).toEqual({ prompt_tokens: 150, completion_tokens: 50, total_tokens: 200 });
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    const step = await s.api('GET', `/v1/steps/${stepOf(chunks[0]?.id ?? '')}`);
    expect(step.body).toMatchObject({ status: 'succeeded', name: 'planner' });
  });

  it('without include_usage: no usage chunk; the wire ends with data: [DONE]', async () => {
    const s = await start();
    const res = await s.api('POST', '/v1/chat/completions', {
      model: 'agent:calendar',
      messages: [user('next friday')],
      stream: true,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const frames = res.text.split('\n\n').filter((f) => f !== '');
    expect(frames.at(-1)).toBe('data: [DONE]');
    const chunks = frames
      .slice(0, -1)
      .map((f) => JSON.parse(f.replace(/^data: /, '')) as Record<string, unknown>);
    expect(chunks.every((c) => !('usage' in c))).toBe(true);
    // An agent that streams no tokens: its output as one piece.
    const text = chunks
      .map((c) => (c['choices'] as { delta: { content?: string } }[])[0]?.delta.content ?? '')
      .join('');
    expect(JSON.parse(text)).toEqual({
      date: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/) as string,
      free: true,
    });
  });

  it('keeps a quiet stream alive with comments the SDK skips', async () => {
    const s = await start({ server: { keepAliveMs: 20 } });
    const body = { model: 'agent:slow', messages: [user('go')], stream: true };
    const raw = await s.api('POST', '/v1/chat/completions', body);
    expect(raw.text).toContain(': keep-alive\n\n');
    let text = '';
    for await (const chunk of await client(s).chat.completions.create({ ...body, stream: true })) {
      text += chunk.choices[0]?.delta.content ?? '';
    }
    expect(text).toBe('before after');
  });

  it('a step that fails ends the stream with an error frame: the SDK raises it', async () => {
    const s = await start();
    const stream = await client(s).chat.completions.create({
      model: 'agent:broken',
      messages: [user('go')],
      stream: true,
    });
    const seen: OpenAI.ChatCompletionChunk[] = [];
    const err = await rejection(
      (async () => {
        for await (const chunk of stream) seen.push(chunk);
      })(),
    );
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.message).toContain('the broken agent broke');
    // The stream had begun: the assistant's first chunk, then the error.
    expect(seen.map((c) => c.choices[0]?.delta.role)).toEqual(['assistant']);
  });

  it('a client that goes away cancels the step', async () => {
    const s = await start();
    const abort = new AbortController();
    const stream = await client(s).chat.completions.create(
      { model: 'agent:endless', messages: [user('go')], stream: true },
      { signal: abort.signal },
    );
    let id = '';
    try {
      for await (const chunk of stream) {
        id = chunk.id;
        if (chunk.choices[0]?.delta.content) abort.abort();
      }
    } catch (err) {
      // The SDK may raise the abort, or just end the iteration.
      expect(err).toBeInstanceOf(OpenAI.APIUserAbortError);
    }
    expect(id).toMatch(/^chatcmpl-step_/);
    await expect
      .poll(async () => (await s.api('GET', `/v1/steps/${stepOf(id)}`)).body, POLL)
      .toMatchObject({ status: 'cancelled' });
  });
});

describe('while the server drains', () => {
  it('refuses new completions with 503 and ends a running stream with an error frame once its step is cancelled', async () => {
    const s = await start();
    const stream = await client(s).chat.completions.create({
      model: 'agent:endless',
      messages: [user('go')],
      stream: true,
    });
    const chunks = stream[Symbol.asyncIterator]();
    // Read up to the first token: the step is running.
    const content = async (): Promise<string | null | undefined> =>
      ((await chunks.next()).value as OpenAI.ChatCompletionChunk).choices[0]?.delta.content;
    while ((await content()) !== 'tick ') continue;
    const closing = s.close();
    const refused = await rejection(
      client(s).chat.completions.create({ model: 'agent:calendar', messages: [user('monday')] }),
    );
    expect(refused).toBeInstanceOf(OpenAI.InternalServerError);
    expect(refused['status']).toBe(503);
    expect(refused['error']).toMatchObject({ type: 'server_error', code: 'pool_unavailable' });
    const ended = await rejection(
      (async () => {
        for (;;) if ((await chunks.next()).done === true) return;
      })(),
    );
    expect(ended).toBeInstanceOf(OpenAI.APIError);
    expect((ended as unknown as { error: { code: string } }).error.code).toBe('cancelled');
    await closing;
  });
});
