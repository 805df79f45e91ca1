/**
 * `/mcp` on axon serve (issue 48 §1, docs/mcp.md) through the MCP SDK's own client over
 * Streamable HTTP: the tools and their JSON Schemas; a function tool's and an agent's call,
 * each a step of the session's run (in the store, the runs list, the trace; the run completed
 * when the session ends); progress notifications carrying the tokens; a durable agent by key
 * keeping its state; a message that waits; an MCP cancellation cancelling the step (its
 * status read over the HTTP API); the refusals as JSON-RPC errors with nothing run.
 */
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { EXAMPLE_DURABLE_AGENTS } from '../../examples/index.js';
import { teller } from '../fixtures/mcp-teller.js';
import { callTool, refusedWith, stepOf, textOf, useMcpClients } from '../support/mcp-client.js';
import { POLL, useTestServers, type TestServer } from '../support/server.js';

const servers = useTestServers('mcp');
const connect = useMcpClients();

function start(tokenDelayMs = 1): Promise<TestServer> {
  return servers.start({
    tokenDelayMs,
    runtime: { agents: [...EXAMPLE_DURABLE_AGENTS, teller] },
  });
}

/** The MCP session runs the server holds (`entry: mcp`), newest first. */
async function mcpRuns(s: TestServer): Promise<{ run_id: string; status: string }[]> {
  const res = await s.api('GET', '/v1/runs?entry=mcp');
  expect(res.status).toBe(200);
  return res.body as { run_id: string; status: string }[];
}

interface Step {
  readonly step_id: string;
  readonly type: string;
  readonly name: string;
  readonly status: string;
  readonly parent_step_id: string | null;
  readonly error: { code: string } | null;
}

async function stepsOf(s: TestServer, runId: string): Promise<Step[]> {
  const res = await s.api('GET', `/v1/runs/${runId}/steps`);
  expect(res.status).toBe(200);
  return res.body as Step[];
}

describe('/mcp: tools', () => {
  it('lists the function tools, the agents and the durable agents with their JSON Schemas', async () => {
    const s = await start();
    const { client } = await connect(s.url);
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect([...byName.keys()].sort()).toEqual(
      [
        'add',
        'search_flights',
        'agent_planner',
        'agent_calendar',
        'agent_flights',
        'actor_notebook',
        'actor_follow-up',
        'actor_teller',
      ].sort(),
    );
    // A function tool: its own schema.
    const add = byName.get('add')?.inputSchema;
    expect(add?.type).toBe('object');
    expect(add?.properties).toEqual({ a: { type: 'number' }, b: { type: 'number' } });
    expect(add?.required).toEqual(['a', 'b']);
    // An agent: API.md's agent step input, less the agent.
    expect(byName.get('agent_planner')?.inputSchema).toMatchObject({
      type: 'object',
      properties: { message: { type: 'string' }, args: { type: 'object' } },
      required: ['message'],
      additionalProperties: false,
    });
    expect(byName.get('agent_planner')?.description).toContain('Plans a trip');
    // A durable agent: its key, and its input schema nested as the message.
    expect(byName.get('actor_notebook')?.inputSchema).toMatchObject({
      type: 'object',
      properties: {
        key: { type: 'string', pattern: '^[A-Za-z0-9._~-]{1,128}$' },
        message: {
          type: 'object',
          properties: { text: { type: 'string' } },
          required: ['text'],
          additionalProperties: false,
        },
      },
      required: ['key', 'message'],
      additionalProperties: false,
    });
  });
});

describe('/mcp: calls are steps of the session run', () => {
  it("a tool's and an agent's call: their results, the tokens as progress, the steps in the run, the trace, and the run completed with the session", async () => {
    const s = await start();
    const { client, transport } = await connect(s.url);
    const sum = await callTool(client, 'add', { a: 2, b: 40 });
    expect(sum.isError).toBeFalsy();
    expect(sum.structuredContent).toEqual({ sum: 42 });
    expect(textOf(sum)).toBe('{"sum":42}');
    const progress: { progress: number; message?: string | undefined }[] = [];
    const plan = await callTool(
      client,
      'agent_planner',
      { message: 'A trip to Paris on Friday' },
      { onprogress: (p) => progress.push(p) },
    );
    expect(plan.isError).toBeFalsy();
    expect(textOf(plan)).toMatch(/^Here is your plan for Paris\./);
    // Every token, in order, numbered from 1: the text the agent streamed is its answer.
    expect(progress.length).toBeGreaterThan(5);
    expect(progress.map((p) => p.progress)).toEqual(progress.map((_p, i) => i + 1));
    expect(progress.map((p) => p.message).join('')).toBe(textOf(plan));

    // One run for the session, both calls steps of it, with the ids the results name.
    const [run, ...others] = await mcpRuns(s);
    expect(others).toEqual([]);
    expect(run?.status).toBe('running');
    const runId = run?.run_id ?? '';
    expect(stepOf(sum)).toMatchObject({ run_id: runId, status: 'succeeded' });
    expect(stepOf(plan)).toMatchObject({ run_id: runId, status: 'succeeded' });
    const steps = await stepsOf(s, runId);
    const top = steps.filter((x) => x.parent_step_id === null);
    expect(top.map((x) => [x.step_id, x.type, x.name, x.status])).toEqual([
      [stepOf(sum).step_id, 'tool_call', 'add', 'succeeded'],
      [stepOf(plan).step_id, 'agent', 'planner', 'succeeded'],
    ]);
    const tree = await s.runtime.traceTree(runId);
    expect(tree).toContain('tool add');
    expect(tree).toMatch(/agent planner[\s\S]*agent calendar[\s\S]*tool search_flights/);

    // The session ends (DELETE): its run is completed.
    await transport.terminateSession();
    await expect.poll(async () => (await mcpRuns(s))[0]?.status, POLL).toBe('completed');
  });

  it('a durable agent by key keeps its state between calls; another key is another actor; its tokens come as progress', async () => {
    const s = await start();
    const { client } = await connect(s.url);
    const note = (key: string, text: string) =>
      callTool(client, 'actor_notebook', { key, message: { text } });
    expect((await note('k1', 'first')).structuredContent).toEqual({ count: 1 });
    const second = await note('k1', 'second');
    expect(second.structuredContent).toEqual({ count: 2 });
    expect((await note('k2', 'other')).structuredContent).toEqual({ count: 1 });
    const actor = await s.api('GET', '/v1/agents/notebook/k1');
    expect(actor.body).toMatchObject({ state: { notes: ['first', 'second'] } });
    // The message is a step of the actor's own run.
    const step = stepOf(second);
    expect(step.run_id).toBe((actor.body as { run_id: string }).run_id);
    expect(step.message_id).toBe(step.step_id);
    expect((await s.api('GET', `/v1/steps/${step.step_id}`)).body).toMatchObject({
      status: 'succeeded',
      output: { count: 2 },
    });

    const words: string[] = [];
    const told = await callTool(
      client,
      'actor_teller',
      { key: 'k1', message: { words: 3, ms: 1 } },
      { onprogress: (p) => words.push(p.message ?? '') },
    );
    expect(told.structuredContent).toEqual({ told: 1 });
    expect(words).toEqual(['w0 ', 'w1 ', 'w2 ']);
  });

  it('a message that waits (an event) ends its call as waiting; the actor goes on when the event comes', async () => {
    const s = await start();
    const { client } = await connect(s.url);
    const waiting = await callTool(client, 'actor_follow-up', {
      key: 't1',
      message: { text: 'approved', await: 'approval' },
    });
    expect(waiting.isError).toBeFalsy();
    expect(stepOf(waiting).status).toBe('waiting');
    expect(textOf(waiting)).toMatch(/is waiting/);
    const event = await s.api('POST', '/v1/events', { name: 'approval', data: { answer: 'yes' } });
    expect(event.status).toBe(202);
    await expect
      .poll(async () => (await s.api('GET', '/v1/agents/follow-up/t1')).body, POLL)
      .toMatchObject({ state: { log: ['approved:yes'] } });
  });
});

describe('/mcp: cancellation', () => {
  it("an MCP cancellation cancels the agent's step: CANCELLED over the HTTP API", async () => {
    // 20 ms a token: the plan takes about a second to stream.
    const s = await start(20);
    const { client } = await connect(s.url);
    const stop = new AbortController();
    const call = callTool(
      client,
      'agent_planner',
      { message: 'A trip to Rome on Monday' },
      {
        signal: stop.signal,
        onprogress: () => {
          stop.abort('enough');
        },
      },
    );
    await expect(call).rejects.toThrow();
    const [run] = await mcpRuns(s);
    const planner = async () =>
      (await stepsOf(s, run?.run_id ?? '')).find((x) => x.name === 'planner');
    await expect.poll(async () => (await planner())?.status, POLL).toBe('cancelled');
    const step = await planner();
    const record = await s.api('GET', `/v1/steps/${step?.step_id ?? ''}`);
    expect(record.body).toMatchObject({ status: 'cancelled', error: { code: 'CANCELLED' } });
  });

  it("an MCP cancellation cancels a durable agent's message: CANCELLED, the actor's state unchanged", async () => {
    const s = await start();
    const { client } = await connect(s.url);
    const stop = new AbortController();
    const call = callTool(
      client,
      'actor_teller',
      { key: 'c1', message: { words: 500, ms: 10 } },
      {
        signal: stop.signal,
        onprogress: () => {
          stop.abort('enough');
        },
      },
    );
    await expect(call).rejects.toThrow();
    const actor = async () =>
      (await s.api('GET', '/v1/agents/teller/c1')).body as {
        run_id: string;
        status: string;
        state: unknown;
      };
    const runId = (await actor()).run_id;
    await expect
      .poll(async () => (await stepsOf(s, runId)).map((x) => x.status), POLL)
      .toEqual(['cancelled']);
    expect((await stepsOf(s, runId))[0]?.error?.code).toBe('CANCELLED');
    expect((await actor()).state).toEqual({ told: 0 });
    // The actor goes on with its next message.
    const next = await callTool(client, 'actor_teller', {
      key: 'c1',
      message: { words: 1, ms: 0 },
    });
    expect(next.structuredContent).toEqual({ told: 1 });
  });
});

describe('/mcp: refusals', () => {
  it('an unknown tool, and arguments failing the schema, are JSON-RPC errors (-32602) and nothing runs', async () => {
    const s = await start();
    const { client } = await connect(s.url);
    const call = (name: string, args: Record<string, unknown>) => callTool(client, name, args);
    const unknown = await refusedWith(call('nope', {}), ErrorCode.InvalidParams, 'NOT_FOUND');
    expect(unknown['tool']).toBe('nope');
    const add = await refusedWith(
      call('add', { a: 'two', b: 2 }),
      ErrorCode.InvalidParams,
      'SCHEMA_VIOLATION',
    );
    expect(add['issues']).toEqual([{ path: ['a'], message: 'must be number' }]);
    await refusedWith(call('add', { a: 1 }), ErrorCode.InvalidParams, 'SCHEMA_VIOLATION');
    await refusedWith(call('agent_planner', {}), ErrorCode.InvalidParams, 'SCHEMA_VIOLATION');
    await refusedWith(
      call('agent_planner', { message: 'x', extra: true }),
      ErrorCode.InvalidParams,
      'SCHEMA_VIOLATION',
    );
    await refusedWith(
      call('actor_notebook', { key: 'k', message: { text: 7 } }),
      ErrorCode.InvalidParams,
      'SCHEMA_VIOLATION',
    );
    await refusedWith(
      call('actor_notebook', { message: { text: 'x' } }),
      ErrorCode.InvalidParams,
      'SCHEMA_VIOLATION',
    );
    await refusedWith(
      call('actor_notebook', { key: 'not a key!', message: { text: 'x' } }),
      ErrorCode.InvalidParams,
      'INVALID_PARAMS',
    );
    // Nothing ran: no session run was made, no actor was.
    expect(await mcpRuns(s)).toEqual([]);
    expect((await s.api('GET', '/v1/agents')).body).toMatchObject({ agents: [] });
    // The session is fine: a good call runs.
    expect((await call('add', { a: 1, b: 1 })).structuredContent).toEqual({ sum: 2 });
  });
});
