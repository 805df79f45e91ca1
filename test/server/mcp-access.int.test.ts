/**
 * `/mcp` on axon serve behind the API's keys, and its options (issue 48 §1, docs/mcp.md),
 * with the MCP SDK's own client: no key is 401 (with `WWW-Authenticate`); a key without the
 * permission gets a JSON-RPC error and nothing runs; a session and its run are its user's;
 * `enabled: false` (no route), `maxSessions`, `sessionIdleMs`, `budgets`, the server's
 * `maxStepsPerRun` as a session's calls in flight, and a draining server refusing calls.
 */
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { EXAMPLE_DURABLE_AGENTS } from '../../examples/index.js';
import { createServer } from '../../src/server/create-server.js';
import { MCP_REFUSED } from '../../src/server/mcp/mcp-refusal.js';
import {
  callTool,
  rawList,
  rawSession,
  refusedWith,
  stepOf,
  textOf,
  useMcpClients,
} from '../support/mcp-client.js';
import { expectApiError, POLL, useTestServers, type TestServer } from '../support/server.js';

const servers = useTestServers('mcp-access');
const connect = useMcpClients();

const ALICE = 'alice-key-0123456789';
const BOB = 'bob-key-0123456789ab';
const READER = 'reader-key-012345678';
const SCRAPER = 'scraper-key-01234567';
const KEYS = [
  { key: ALICE, user_id: 'alice' },
  { key: BOB, user_id: 'bob' },
  { key: READER, user_id: 'alice', permissions: ['read' as const] },
  { key: SCRAPER, user_id: 'prometheus', permissions: ['metrics' as const] },
];

const auth = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });

async function mcpRuns(s: TestServer, key: string): Promise<{ run_id: string }[]> {
  const res = await s.api('GET', '/v1/runs?entry=mcp', undefined, auth(key));
  expect(res.status).toBe(200);
  return res.body as { run_id: string }[];
}

/** What the client's connect fails with. */
async function connectError(url: string, key?: string): Promise<StreamableHTTPError> {
  const err = await connect(url, key).then(
    () => new Error('connected'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StreamableHTTPError);
  return err as StreamableHTTPError;
}

describe('/mcp behind the API keys', () => {
  it('no key, or a key that is not valid: 401 with WWW-Authenticate, before anything MCP', async () => {
    const s = await servers.start({ server: { keys: KEYS } });
    expect((await connectError(s.url)).code).toBe(401);
    expect((await connectError(s.url, 'not-a-valid-key-at-all')).code).toBe(401);
    const res = await fetch(`${s.url}/mcp`, { method: 'POST' });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="axon"');
    await res.text();
  });

  it('a key without write may list but not call; one without read may not list: JSON-RPC errors, nothing run', async () => {
    const s = await servers.start({ server: { keys: KEYS } });
    const reader = (await connect(s.url, READER)).client;
    expect((await reader.listTools()).tools.map((t) => t.name)).toContain('add');
    const data = await refusedWith(
      callTool(reader, 'add', { a: 1, b: 2 }),
      MCP_REFUSED,
      'FORBIDDEN',
    );
    expect(data['permission']).toBe('write');
    // A refusal about permission comes first: an unknown tool is refused the same way.
    await refusedWith(callTool(reader, 'nope', {}), MCP_REFUSED, 'FORBIDDEN');
    const scraper = (await connect(s.url, SCRAPER)).client;
    const read = await refusedWith(scraper.listTools(), MCP_REFUSED, 'FORBIDDEN');
    expect(read['permission']).toBe('read');
    // Nothing ran: alice (the reader's user) has no MCP run.
    expect(await mcpRuns(s, ALICE)).toEqual([]);
  });

  it("a session and its run are its user's: another user's key gets 404 for the session id and does not see the run", async () => {
    const s = await servers.start({
      server: { keys: KEYS },
      runtime: { agents: [...EXAMPLE_DURABLE_AGENTS] },
    });
    const { client, transport } = await connect(s.url, ALICE);
    const sum = await callTool(client, 'add', { a: 1, b: 2 });
    expect(sum.structuredContent).toEqual({ sum: 3 });
    const session = transport.sessionId ?? '';
    expect((await rawList(s.url, session, BOB)).status).toBe(404);
    expect((await rawList(s.url, session, ALICE)).status).toBe(200);
    expect((await mcpRuns(s, ALICE)).map((r) => r.run_id)).toEqual([stepOf(sum).run_id]);
    expect(await mcpRuns(s, BOB)).toEqual([]);
    // The actors it messages are alice's too.
    await callTool(client, 'actor_notebook', { key: 'k', message: { text: 'mine' } });
    expect((await s.api('GET', '/v1/agents/notebook/k', undefined, auth(ALICE))).status).toBe(200);
    expect((await s.api('GET', '/v1/agents/notebook/k', undefined, auth(BOB))).status).toBe(404);
  });
});

describe('/mcp options', () => {
  it('enabled: false serves no /mcp (404, as any path the server does not have)', async () => {
    const s = await servers.start({ server: { mcp: { enabled: false } } });
    expectApiError(
      await s.api('POST', '/mcp', { jsonrpc: '2.0', id: 1, method: 'ping' }),
      404,
      'NOT_FOUND',
    );
    expect((await connectError(s.url)).code).toBe(404);
  });

  it('maxSessions: a session past the bound is refused 429 until one closes', async () => {
    const s = await servers.start({ server: { mcp: { maxSessions: 1 } } });
    const first = await connect(s.url);
    const refused = await connectError(s.url);
    expect(refused.code).toBe(429);
    expect(refused.message).toContain('RATE_LIMITED');
    await first.transport.terminateSession();
    const second = await connect(s.url);
    expect((await second.client.listTools()).tools.length).toBeGreaterThan(0);
  });

  it('sessionIdleMs: a session with no request for that long is closed (404), and its run completed', async () => {
    const s = await servers.start({ server: { mcp: { sessionIdleMs: 200 } } });
    const session = await rawSession(s.url);
    expect((await rawList(s.url, session)).status).toBe(200);
    // Each request keeps it: it is closed only once none has come for sessionIdleMs.
    await new Promise((r) => setTimeout(r, 600));
    expect((await rawList(s.url, session)).status).toBe(404);
    // A session the SDK's client holds open (its GET stream) is not idle.
    const { client } = await connect(s.url);
    const sum = await callTool(client, 'add', { a: 2, b: 2 });
    await new Promise((r) => setTimeout(r, 600));
    expect((await callTool(client, 'add', { a: 3, b: 3 })).structuredContent).toEqual({ sum: 6 });
    // Once the client goes (no DELETE), the session idles out and its run is completed.
    await client.close();
    const run = async () => (await s.api('GET', `/v1/runs/${stepOf(sum).run_id}`)).body;
    await expect.poll(run, POLL).toMatchObject({ status: 'completed' });
  });

  it("budgets: each session's run has them; a call past them ends BUDGET_EXCEEDED (isError)", async () => {
    const s = await servers.start({ server: { mcp: { budgets: { max_tokens_out: 5 } } } });
    const { client } = await connect(s.url);
    const plan = await callTool(client, 'agent_planner', { message: 'Paris on Friday' });
    expect(plan.isError).toBe(true);
    expect(stepOf(plan)).toMatchObject({ status: 'failed', error: { code: 'BUDGET_EXCEEDED' } });
    expect(textOf(plan)).toMatch(/^BUDGET_EXCEEDED: /);
    const run = await s.api('GET', `/v1/runs/${stepOf(plan).run_id}`);
    expect(run.body).toMatchObject({ budgets: { max_tokens_out: 5 } });
  });

  it("the server's maxStepsPerRun bounds a session's calls in flight (QUEUE_FULL); draining refuses calls (POOL_UNAVAILABLE)", async () => {
    const s = await servers.start({ tokenDelayMs: 20, server: { maxStepsPerRun: 1 } });
    const { client } = await connect(s.url);
    const started = new Promise<void>((resolve) => {
      void callTool(
        client,
        'agent_planner',
        { message: 'Rome on Monday' },
        {
          onprogress: () => {
            resolve();
          },
        },
      ).catch(() => undefined);
    });
    await started;
    const full = await refusedWith(
      callTool(client, 'add', { a: 1, b: 1 }),
      MCP_REFUSED,
      'QUEUE_FULL',
    );
    expect(full['max_calls']).toBe(1);
    const other = (await connect(s.url)).client;
    const closing = s.close();
    await refusedWith(callTool(other, 'add', { a: 1, b: 1 }), MCP_REFUSED, 'POOL_UNAVAILABLE');
    await closing;
  });

  it('an option out of range is refused, naming it', async () => {
    const runtime = servers.runtime();
    try {
      for (const [mcp, message] of [
        [{ maxSessions: 0 }, /mcp\.maxSessions must be a whole number > 0, got 0/],
        [{ sessionIdleMs: 1.5 }, /mcp\.sessionIdleMs must be a whole number > 0, got 1\.5/],
        [{ budgets: { max_tokens_out: -1 } }, /mcp\.budgets is not valid/],
      ] as const) {
        await expect(createServer(runtime, { port: 0, mcp })).rejects.toThrow(message);
      }
    } finally {
      await runtime.close();
    }
  });
});

describe('/mcp: invalid params stay -32602 behind keys', () => {
  it('a writer key gets the schema refusal', async () => {
    const s = await servers.start({ server: { keys: KEYS } });
    const { client } = await connect(s.url, ALICE);
    await refusedWith(
      callTool(client, 'add', { a: 1 }),
      ErrorCode.InvalidParams,
      'SCHEMA_VIOLATION',
    );
  });
});
