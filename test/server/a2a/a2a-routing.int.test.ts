/**
 * Where an A2A message goes and what it may hold, over real HTTP with the SDK's clients: the
 * default agent, the front door's router before it, a message naming no skill on a server
 * with neither (refused, naming the skills); text and data parts (the agent's message and
 * args), a file part refused; A2A 0.3's wire (`message/send`, `message/stream`,
 * `tasks/get`) beside 1.0's; the options createServer refuses, and `enabled: false`.
 */
import { randomUUID } from 'node:crypto';
import { TaskState, type Message } from '@a2a-js/sdk';
import { LegacyJsonRpcTransport } from '@a2a-js/sdk/compat/v0_3/client';
import { ContentTypeNotSupportedError } from '@a2a-js/sdk/errors';
import { describe, expect, it } from 'vitest';
import { createRuleRouter } from '../../../src/orchestrator/rule-router.js';
import { configuredPolicy } from '../../../src/policy/configured-policy.js';
import { createServer } from '../../../src/server/create-server.js';
import { expectApiError, parseSse, useTestServers } from '../../support/server.js';
import { a2aClient, asTask, axonIds, kindOf, sendRequest, userMessage } from './a2a-client.js';

const servers = useTestServers('a2a-routing');

/** What a message was routed to: its task's agent and how. */
async function routed(url: string, message: Message): Promise<[string, string]> {
  const task = asTask(await (await a2aClient(url)).sendMessage(sendRequest(message)));
  expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  const axon = (task.metadata as { axon: { agent: string; routed_by: string } }).axon;
  return [axon.agent, axon.routed_by];
}

describe('a message that names no skill', () => {
  it('goes to the default agent the options name', async () => {
    const s = await servers.start({ server: { a2a: { defaultAgent: 'calendar' } } });
    expect(await routed(s.url, userMessage('next friday'))).toEqual(['calendar', 'default']);
    // A named skill is still the one taken.
    expect(await routed(s.url, userMessage('Plan a trip to Tokyo next friday', 'planner'))).toEqual(
      ['planner', 'skill'],
    );
  });

  it("goes where the front door's router places it, else to the default agent", async () => {
    const router = createRuleRouter({ rules: [{ pattern: /\btrip\b/i, handler: 'planner' }] });
    const s = await servers.start({ server: { a2a: { router, defaultAgent: 'calendar' } } });
    expect(await routed(s.url, userMessage('Plan a trip to Rome next Monday'))).toEqual([
      'planner',
      'router',
    ]);
    expect(await routed(s.url, userMessage('next monday'))).toEqual(['calendar', 'default']);
  });

  it('goes to the first skill on a server with neither a default agent nor a router that places it (never refused)', async () => {
    const router = createRuleRouter({ rules: [{ pattern: /\btrip\b/i, handler: 'planner' }] });
    const plain = await servers.start();
    expect(await routed(plain.url, userMessage('next monday'))).toEqual(['planner', 'first']);
    const routedOnly = await servers.start({ server: { a2a: { router } } });
    expect(await routed(routedOnly.url, userMessage('book flights'))).toEqual(['planner', 'first']);
    expect(await routed(routedOnly.url, userMessage('a trip to Paris next monday'))).toEqual([
      'planner',
      'router',
    ]);
  });
});

describe("a message's parts", () => {
  it("are the agent's message (its text parts) and args (its data part); a file part is refused", async () => {
    const s = await servers.start();
    const client = await a2aClient(s.url);
    const withArgs: Message = {
      ...userMessage('Lisbon', 'flights'),
      parts: [
        ...userMessage('Lisbon').parts,
        {
          content: { $case: 'data', value: { to: 'LIS', date: '2031-05-06' } },
          mediaType: 'application/json',
          filename: '',
          metadata: undefined,
        },
      ],
    };
    const task = asTask(await client.sendMessage(sendRequest(withArgs)));
    const step = await s.api('GET', `/v1/steps/${axonIds(task).step_id}`);
    expect(step.body).toMatchObject({
      status: 'succeeded',
      input: { message: 'Lisbon', args: { to: 'LIS', date: '2031-05-06' } },
    });
    expect(task.artifacts[0]?.parts[0]?.content).toMatchObject({
      $case: 'data',
      value: { offer: { to: 'LIS', date: '2031-05-06' } },
    });
    const file: Message = {
      ...userMessage('look', 'planner'),
      parts: [
        {
          content: { $case: 'url', value: 'https://example.com/a.pdf' },
          mediaType: 'application/pdf',
          filename: 'a.pdf',
          metadata: undefined,
        },
      ],
    };
    await expect(client.sendMessage(sendRequest(file))).rejects.toBeInstanceOf(
      ContentTypeNotSupportedError,
    );
    expect((await s.api('GET', '/v1/runs')).body).toHaveLength(1);
  });
});

describe("A2A 0.3's wire", () => {
  it("message/send and tasks/get in 0.3 JSON, and message/stream through the SDK's 0.3 client", async () => {
    const s = await servers.start();
    const card = (await (await fetch(`${s.url}/.well-known/agent-card.json`)).json()) as {
      url: string;
    };
    const rpc = async (method: string, params: unknown): Promise<Record<string, unknown>> => {
      const res = await s.api('POST', new URL(card.url).pathname, {
        jsonrpc: '2.0',
        id: 7,
        method,
        params,
      });
      expect(res.status, res.text).toBe(200);
      return res.body as Record<string, unknown>;
    };
    const sent = await rpc('message/send', {
      message: {
        kind: 'message',
        messageId: randomUUID(),
        role: 'user',
        parts: [{ kind: 'text', text: 'next wednesday' }],
        metadata: { skill: 'calendar' },
      },
    });
    expect(sent).toMatchObject({
      jsonrpc: '2.0',
      id: 7,
      result: {
        kind: 'task',
        status: { state: 'completed' },
        artifacts: [
          {
            artifactId: 'output',
            parts: [{ kind: 'data', data: { date: expect.any(String) as string, free: true } }],
          },
        ],
      },
    });
    const id = (sent['result'] as { id: string }).id;
    expect(await rpc('tasks/get', { id })).toMatchObject({
      result: { kind: 'task', id, status: { state: 'completed' } },
    });
    expect(
      await rpc('message/send', {
        message: {
          kind: 'message',
          messageId: 'm',
          role: 'user',
          parts: [{ kind: 'text', text: 'hi' }],
          metadata: { skill: 'nope' },
        },
      }),
    ).toMatchObject({
      error: {
        code: -32602,
        message: 'no skill named "nope" here; the skills are planner, calendar, flights',
      },
    });

    const legacy = new LegacyJsonRpcTransport({ endpoint: card.url });
    const kinds: string[] = [];
    let text = '';
    for await (const event of legacy.sendMessageStream(
      sendRequest(userMessage('Plan a trip to Berlin next Tuesday', 'planner')),
    )) {
      kinds.push(kindOf(event));
      const p = event.payload;
      if (p?.$case === 'artifactUpdate' && !p.value.lastChunk) {
        const c = p.value.artifact?.parts[0]?.content;
        text += c?.$case === 'text' ? c.value : '';
      }
    }
    expect(kinds.slice(0, 2)).toEqual(['task', 'statusUpdate:WORKING']);
    expect(kinds.at(-1)).toBe('statusUpdate:COMPLETED');
    expect(text).toMatch(/^Here is your plan for Berlin\./);
  });

  it('a stream is SSE frames of JSON-RPC responses on the wire', async () => {
    const s = await servers.start();
    const res = await fetch(`${s.url}/a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'r1',
        method: 'SendStreamingMessage',
        params: {
          message: {
            messageId: 'm1',
            role: 'ROLE_USER',
            parts: [{ text: 'next sunday' }],
            metadata: { skill: 'calendar' },
          },
        },
      }),
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const { frames } = parseSse(await res.text());
    expect(frames.map((f) => f.data['id'])).toEqual(frames.map(() => 'r1'));
    expect(Object.keys(frames[0]?.data['result'] ?? {})).toEqual(['task']);
    expect(frames.at(-1)?.data['result']).toMatchObject({
      statusUpdate: { status: { state: 'TASK_STATE_COMPLETED' } },
    });
  });
});

describe('a message the policy refuses', () => {
  it('is a task FAILED with the refusal, nothing run (a rate limit)', async () => {
    const policy = configuredPolicy({
      rate_limits: { per_user: { requests_per_minute: 1, on_exceed: 'reject' } },
    });
    const s = await servers.start({ runtime: { policy } });
    const client = await a2aClient(s.url);
    const first = asTask(await client.sendMessage(sendRequest(userMessage('monday', 'calendar'))));
    expect(first.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const refused = asTask(
      await client.sendMessage(sendRequest(userMessage('tuesday', 'calendar'))),
    );
    expect(refused.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(refused.status?.message?.metadata).toMatchObject({ code: 'RATE_LIMITED' });
    const said = refused.status?.message?.parts[0]?.content;
    expect(said?.$case === 'text' ? said.value : '').toMatch(/^RATE_LIMITED: /);
    // Its run holds no step: the agent was not run.
    const { run_id, step_id } = axonIds(refused);
    expect(step_id).toBeNull();
    expect((await s.api('GET', `/v1/runs/${run_id}/steps`)).body).toEqual([]);
  });
});

describe('what is not served', () => {
  it('answers its A2A error: another protocol version, listing tasks, push notifications', async () => {
    const s = await servers.start();
    const call = async (version: string, method: string, params: unknown): Promise<unknown> => {
      const res = await s.api(
        'POST',
        '/a2a',
        { jsonrpc: '2.0', id: 1, method, params },
        {
          'a2a-version': version,
        },
      );
      expect(res.status, res.text).toBe(200);
      return (res.body as { error: unknown }).error;
    };
    expect(await call('2.0', 'GetTask', { id: 'x' })).toMatchObject({ code: -32009 });
    expect(await call('1.0', 'ListTasks', {})).toMatchObject({
      code: -32004,
      message:
        "listing tasks is not served here: read a task by its id, or list the caller's runs with GET /v1/runs",
    });
    expect(
      await call('1.0', 'CreateTaskPushNotificationConfig', { taskId: 'x', url: 'http://x' }),
    ).toMatchObject({ code: -32003 });
  });
});

describe('the options', () => {
  it('createServer refuses a default agent that is no skill, and a URL that is not absolute', async () => {
    const runtime = servers.runtime();
    try {
      await expect(
        createServer(runtime, { port: 0, a2a: { defaultAgent: 'nobody' } }),
      ).rejects.toThrow(
        new RangeError(
          'createServer: a2a.defaultAgent "nobody" is not an agent served as an A2A skill (none)',
        ),
      );
      await expect(createServer(runtime, { port: 0, a2a: { url: '/a2a' } })).rejects.toThrow(
        RangeError,
      );
    } finally {
      await runtime.close();
    }
  });

  it('url is the endpoint the card names (a server behind a proxy)', async () => {
    const s = await servers.start({ server: { a2a: { url: 'https://agents.example.com/a2a' } } });
    const card = (await (await fetch(`${s.url}/.well-known/agent-card.json`)).json()) as {
      url: string;
    };
    expect(card.url).toBe('https://agents.example.com/a2a');
  });

  it('enabled: false serves neither the card nor the endpoint', async () => {
    const s = await servers.start({ server: { a2a: { enabled: false } } });
    expectApiError(await s.api('GET', '/.well-known/agent-card.json'), 404, 'NOT_FOUND');
    expectApiError(
      await s.api('POST', '/a2a', { jsonrpc: '2.0', id: 1, method: 'GetTask', params: {} }),
      404,
      'NOT_FOUND',
    );
  });
});
