/**
 * @module Test helpers for axon as an MCP server (issue 48): the MCP SDK's own `Client` over
 * Streamable HTTP against a server's `/mcp` (closed after each test), a call's step as its
 * result's `_meta` names it, a refusal's JSON-RPC error, and a raw session opened with
 * `fetch` (no standing GET stream, as a client that went away leaves it).
 */
import { afterEach, expect } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';

/** A connected client and its transport. */
export interface McpConnection {
  readonly client: Client;
  readonly transport: StreamableHTTPClientTransport;
}

/** A `tools/call` result, as a test reads it. */
export interface CallResult {
  readonly content: readonly { readonly type: string; readonly text?: string }[];
  readonly structuredContent?: Record<string, unknown>;
  readonly isError?: boolean;
  readonly _meta?: Record<string, unknown>;
}

/** What a call's result says of its step (`_meta['axon/step']`). */
export interface ResultStep {
  readonly step_id: string;
  readonly run_id: string;
  readonly status: string;
  readonly message_id?: string;
  readonly error?: { readonly code: string; readonly message: string };
}

/**
 * Registers the file's teardown (every client connected is closed after its test, before
 * the servers are) and returns how to connect one to `url`'s `/mcp`, with `key` as its
 * Bearer key when given.
 */
export function useMcpClients(): (url: string, key?: string) => Promise<McpConnection> {
  const open: Client[] = [];
  afterEach(async () => {
    await Promise.allSettled(open.splice(0).map((c) => c.close()));
  });
  return async (url, key) => {
    const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
      ...(key === undefined
        ? {}
        : { requestInit: { headers: { authorization: `Bearer ${key}` } } }),
    });
    const client = new Client({ name: 'axon-test', version: '1.0.0' });
    await client.connect(transport);
    open.push(client);
    return { client, transport };
  };
}

/**
 * The result of `tools/call` `name` with `args` (the SDK's own `callTool`, whose type also
 * has the protocol's old `toolResult` form, which axon never answers).
 */
export async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  options?: RequestOptions,
): Promise<CallResult> {
  return (await client.callTool({ name, arguments: args }, undefined, options)) as CallResult;
}

/** The step a result names. */
export function stepOf(result: CallResult): ResultStep {
  const step = result._meta?.['axon/step'] as ResultStep | undefined;
  expect(step, JSON.stringify(result)).toBeDefined();
  return step as ResultStep;
}

/** The text of a result's one text block. */
export function textOf(result: CallResult): string {
  const [block] = result.content;
  expect(block?.type).toBe('text');
  return block?.text ?? '';
}

/**
 * Expects `call` to be refused with JSON-RPC error `rpcCode` whose `data.code` is `code`;
 * resolves the error's data.
 */
export async function refusedWith(
  call: Promise<unknown>,
  rpcCode: number,
  code: string,
): Promise<Record<string, unknown>> {
  const err = await call.then(
    (r) => {
      throw new Error(`expected a refusal, got ${JSON.stringify(r)}`);
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(McpError);
  const e = err as McpError;
  expect(e.code, e.message).toBe(rpcCode);
  const data = e.data as Record<string, unknown>;
  expect(data['code'], e.message).toBe(code);
  return data;
}

/** The headers of a raw MCP request (`mcp-session-id` when `session` is given). */
function rawHeaders(session: string | null, key?: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-06-18',
    ...(session === null ? {} : { 'mcp-session-id': session }),
    ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
  };
}

/** Opens a session with a bare `initialize` over `fetch`; resolves its id. */
export async function rawSession(url: string, key?: string): Promise<string> {
  const res = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: rawHeaders(null, key),
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'raw', version: '1' },
      },
    }),
  });
  await res.text();
  expect(res.status).toBe(200);
  const id = res.headers.get('mcp-session-id');
  expect(id).toBeTruthy();
  return id as string;
}

/** A `tools/list` over `fetch` in session `session`: the response's status and text. */
export async function rawList(
  url: string,
  session: string,
  key?: string,
): Promise<{ readonly status: number; readonly text: string }> {
  const res = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: rawHeaders(session, key),
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }),
  });
  return { status: res.status, text: await res.text() };
}
