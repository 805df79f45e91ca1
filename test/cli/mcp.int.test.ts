/**
 * `axon mcp` (issue 48 §1, docs/mcp.md) as an MCP host runs it: a real child process from
 * source, spoken to by the MCP SDK's own `Client` over `StdioClientTransport` — the tools of
 * `axon serve` on the data dir (the config's durable agents too) with their schemas; calls
 * that are steps of the session's run, kept in the data dir (`axon trace` shows it, the run
 * completed when the host closes stdin); a durable agent's state kept across calls and
 * processes; tokens as progress; cancellation cancelling the step, read afterwards over the
 * HTTP API of an `axon serve` on that data dir; refusals with nothing run; what `axon mcp`
 * refuses before it serves (exit 2). And `/mcp` of a real `axon serve` process, with its keys
 * and `mcp:` config, over Streamable HTTP.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { helpText } from '../../src/cli/cli.js';
import { MCP_REFUSED } from '../../src/server/mcp/mcp-refusal.js';
import { runAxon, spawnAxon, type FleetProcess } from '../support/axon-process.js';
import { callTool, refusedWith, stepOf, textOf, useMcpClients } from '../support/mcp-client.js';
import { request } from '../support/server.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TELLER = fileURLToPath(new URL('../fixtures/mcp-teller.ts', import.meta.url));
/** axon.yaml's line loading the fixture's durable agent. */
const DURABLE = `durable_agents:\n  - { module: ${JSON.stringify(TELLER)}, export: teller }\n`;

const root = mkdtempSync(join(tmpdir(), 'axon-cli-mcp-'));
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});
let folders = 0;
/** A new folder, with an `axon.yaml` holding `yaml`; its data dir `<folder>/data`. */
function folder(yaml = ''): {
  readonly dir: string;
  readonly data: string;
  readonly config: string;
} {
  const dir = join(root, `f${++folders}`);
  mkdirSync(dir, { recursive: true });
  const config = join(dir, 'axon.yaml');
  writeFileSync(config, yaml);
  return { dir, data: join(dir, 'data'), config };
}

/** The environment of an `axon` child: the test's own, quiet, fast tokens unless given. */
function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  delete env['NODE_OPTIONS'];
  return { ...env, AXON_LOG_LEVEL: 'warn', AXON_SCRIPTED_TOKEN_MS: '1', ...extra };
}

const clients: Client[] = [];
const processes: FleetProcess[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  await Promise.allSettled(clients.splice(0).map((c) => c.close()));
  for (const p of processes.splice(0)) {
    if (p.child.exitCode === null && p.child.signalCode === null) {
      p.child.kill('SIGTERM');
      await p.exited;
    }
  }
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
});

/** `axon mcp --data-dir <data> --config <config>` started as an MCP host starts it, connected. */
async function mcp(
  where: { readonly data: string; readonly config: string },
  env: Record<string, string> = {},
): Promise<{ readonly client: Client; readonly stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: 'node',
    args: [
      '--import',
      'tsx',
      'src/cli/main.ts',
      'mcp',
      '--data-dir',
      where.data,
      '--config',
      where.config,
    ],
    cwd: ROOT,
    env: childEnv(env),
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const client = new Client({ name: 'axon-test-host', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return { client, stderr: () => stderr };
}

/** Closes `client` (the host closing stdin): the process ends, its run completed. */
async function closeHost(client: Client): Promise<void> {
  clients.splice(clients.indexOf(client), 1);
  await client.close();
}

/** `axon serve` on `where`'s data dir and config, with `env`; its URL. */
async function serve(
  where: { readonly data: string; readonly config: string },
  env: Record<string, string> = {},
): Promise<string> {
  const started = await spawnAxon(
    ['serve', '--port', '0', '--data-dir', where.data, '--config', where.config],
    { AXON_SCRIPTED_TOKEN_MS: '1', ...env },
    /listening on (http:\/\/\S+) /,
    processes,
  );
  return started.match[1] ?? '';
}

describe('axon mcp over stdio', () => {
  it("serves axon serve's agents, function tools and durable agents (the config's too) with their schemas", async () => {
    const where = folder(DURABLE);
    const { client, stderr } = await mcp(where);
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const name of [
      'add',
      'search_flights',
      'agent_planner',
      'agent_calendar',
      'agent_flights',
      'actor_notebook',
      'actor_follow-up',
      'actor_teller',
    ]) {
      expect(names).toContain(name);
    }
    expect(tools.find((t) => t.name === 'actor_teller')?.inputSchema).toMatchObject({
      properties: {
        message: { properties: { words: { type: 'integer' } }, required: ['words', 'ms'] },
      },
    });
    expect(stderr()).toBe('');
  });

  it('calls are steps of the session run in the data dir: axon trace shows them, completed once the host closes stdin; an actor keeps its state across processes', async () => {
    const where = folder(DURABLE);
    const first = await mcp(where);
    const sum = await callTool(first.client, 'add', { a: 20, b: 22 });
    expect(sum.structuredContent).toEqual({ sum: 42 });
    const tokens: string[] = [];
    const plan = await callTool(
      first.client,
      'agent_planner',
      { message: 'A trip to Lisbon on Tuesday' },
      { onprogress: (p) => tokens.push(p.message ?? '') },
    );
    expect(textOf(plan)).toMatch(/^Here is your plan for Lisbon\./);
    // In order, from the first: the SDK's client may drop the last ones when it reads them
    // with the result in one chunk (it hands notifications on a microtask later); the raw
    // test below shows every token is sent before the result.
    expect(tokens.length).toBeGreaterThan(0);
    expect(textOf(plan).startsWith(tokens.join(''))).toBe(true);
    const note = (c: Client, text: string) =>
      callTool(c, 'actor_notebook', { key: 'desk', message: { text } });
    expect((await note(first.client, 'one')).structuredContent).toEqual({ count: 1 });
    const told: string[] = [];
    const teller = await callTool(
      first.client,
      'actor_teller',
      { key: 'desk', message: { words: 2, ms: 1 } },
      { onprogress: (p) => told.push(p.message ?? '') },
    );
    expect(teller.structuredContent).toEqual({ told: 1 });
    expect(told).toEqual(['w0 ', 'w1 '].slice(0, told.length));
    await closeHost(first.client);

    const runId = stepOf(sum).run_id;
    expect(stepOf(plan).run_id).toBe(runId);
    const trace = await runAxon(['trace', runId, '--data-dir', where.data], childEnv(), children);
    expect(trace.stderr).toBe('');
    expect(trace.code).toBe(0);
    expect(trace.stdout).toMatch(new RegExp(`^run ${runId}: mcp, completed`));
    expect(trace.stdout).toMatch(/tool add +succeeded/);
    expect(trace.stdout).toMatch(/agent planner +succeeded/);

    // Another host, another process, the same data dir: the actor goes on from its state.
    const second = await mcp(where);
    expect((await note(second.client, 'two')).structuredContent).toEqual({ count: 2 });
  });

  it("cancellation cancels the step (an agent's, a durable message's): CANCELLED, read over an axon serve's HTTP API on the data dir", async () => {
    const where = folder(DURABLE);
    const { client } = await mcp(where, { AXON_SCRIPTED_TOKEN_MS: '20' });
    const cancelled = async (name: string, args: Record<string, unknown>): Promise<void> => {
      const stop = new AbortController();
      const call = callTool(client, name, args, {
        signal: stop.signal,
        onprogress: () => {
          stop.abort('enough');
        },
      });
      await expect(call).rejects.toThrow();
    };
    await cancelled('agent_planner', { message: 'A trip to Tokyo on Friday' });
    await cancelled('actor_teller', { key: 'c1', message: { words: 500, ms: 10 } });
    // The session goes on: a call after them runs.
    expect((await callTool(client, 'add', { a: 1, b: 1 })).structuredContent).toEqual({ sum: 2 });
    await closeHost(client);

    const url = await serve(where);
    const runs = await request(url, 'GET', '/v1/runs?entry=mcp');
    const [run] = runs.body as { run_id: string; status: string }[];
    expect(run?.status).toBe('completed');
    const steps = (await request(url, 'GET', `/v1/runs/${run?.run_id ?? ''}/steps`)).body as {
      name: string;
      status: string;
      parent_step_id: string | null;
      error: { code: string } | null;
    }[];
    const top = steps.filter((x) => x.parent_step_id === null);
    expect(top.map((x) => [x.name, x.status, x.error?.code ?? null])).toEqual([
      ['planner', 'cancelled', 'CANCELLED'],
      ['add', 'succeeded', null],
    ]);
    const actor = (await request(url, 'GET', '/v1/agents/teller/c1')).body as {
      run_id: string;
      state: unknown;
    };
    expect(actor.state).toEqual({ told: 0 });
    const messages = (await request(url, 'GET', `/v1/runs/${actor.run_id}/steps`)).body as {
      status: string;
    }[];
    expect(messages.map((m) => m.status)).toEqual(['cancelled']);
  });

  it('refuses an unknown tool and arguments failing the schema (-32602); nothing runs', async () => {
    const where = folder();
    const { client } = await mcp(where);
    await refusedWith(callTool(client, 'nope', {}), ErrorCode.InvalidParams, 'NOT_FOUND');
    await refusedWith(
      callTool(client, 'search_flights', { to: 'Paris', date: 'soon' }),
      ErrorCode.InvalidParams,
      'SCHEMA_VIOLATION',
    );
    await refusedWith(
      callTool(client, 'actor_notebook', { key: 'k', message: {} }),
      ErrorCode.InvalidParams,
      'SCHEMA_VIOLATION',
    );
    await closeHost(client);
    const runs = await runAxon(['runs', 'list', '--data-dir', where.data], childEnv(), children);
    expect(runs.code).toBe(0);
    expect(runs.stdout).not.toMatch(/ mcp /);
    expect(runs.stdout).not.toMatch(/actor:notebook/);
  });

  it("mcp.budgets of the config bound the session's run", async () => {
    const where = folder('mcp:\n  budgets: { max_tokens_out: 5 }\n');
    const { client } = await mcp(where);
    const plan = await callTool(client, 'agent_planner', { message: 'Rome on Monday' });
    expect(plan.isError).toBe(true);
    expect(stepOf(plan).error?.code, JSON.stringify(plan)).toBe('BUDGET_EXCEEDED');
  });
});

describe('axon mcp: the process', () => {
  it('sends every token of a call as a progress notification before its result (JSON lines on stdio)', async () => {
    const where = folder();
    const child = spawn(
      'node',
      [
        '--import',
        'tsx',
        'src/cli/main.ts',
        'mcp',
        '--data-dir',
        where.data,
        '--config',
        where.config,
      ],
      { cwd: ROOT, env: childEnv(), stdio: ['pipe', 'pipe', 'pipe'] },
    );
    children.push(child);
    const lines: Record<string, unknown>[] = [];
    let buffered = '';
    const answered = new Promise<void>((resolve) => {
      child.stdout.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('utf8');
        for (let at = buffered.indexOf('\n'); at >= 0; at = buffered.indexOf('\n')) {
          const message = JSON.parse(buffered.slice(0, at)) as Record<string, unknown>;
          buffered = buffered.slice(at + 1);
          lines.push(message);
          if (message['id'] === 2) resolve();
        }
      });
    });
    const send = (message: unknown): void => {
      child.stdin.write(`${JSON.stringify(message)}\n`);
    };
    send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'raw', version: '1' },
      },
    });
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: {
        name: 'agent_planner',
        arguments: { message: 'Rome on Monday' },
        _meta: { progressToken: 'p' },
      },
    });
    await answered;
    child.stdin.end();
    const progress = lines.filter((l) => l['method'] === 'notifications/progress');
    const result = lines.find((l) => l['id'] === 2) as { result: { content: { text: string }[] } };
    expect(lines.indexOf(result)).toBe(lines.length - 1);
    const params = progress.map(
      (l) => l['params'] as { progressToken: string; progress: number; message: string },
    );
    expect(params.map((p) => p.progressToken)).toEqual(params.map(() => 'p'));
    expect(params.map((p) => p.progress)).toEqual(params.map((_p, i) => i + 1));
    expect(params.map((p) => p.message).join('')).toBe(result.result.content[0]?.text);
    expect(await new Promise((resolve) => child.on('close', resolve))).toBe(0);
  });

  it('SIGTERM while it serves: the session ends, exit 0', async () => {
    const where = folder();
    const child = spawn(
      'node',
      [
        '--import',
        'tsx',
        'src/cli/main.ts',
        'mcp',
        '--data-dir',
        where.data,
        '--config',
        where.config,
      ],
      { cwd: ROOT, env: childEnv(), stdio: ['pipe', 'pipe', 'pipe'] },
    );
    children.push(child);
    const initialized = new Promise<string>((resolve) => {
      child.stdout.once('data', (c: Buffer) => {
        resolve(c.toString('utf8'));
      });
    });
    child.stdin.write(
      `${JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
        },
      })}\n`,
    );
    expect(JSON.parse(await initialized)).toMatchObject({
      id: 1,
      result: { serverInfo: { name: 'axon' } },
    });
    const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
    child.kill('SIGTERM');
    expect(await closed).toBe(0);
  });

  it('stdin closed at once: exit 0, nothing on stdout', async () => {
    const where = folder();
    const child = spawn(
      'node',
      [
        '--import',
        'tsx',
        'src/cli/main.ts',
        'mcp',
        '--data-dir',
        where.data,
        '--config',
        where.config,
      ],
      { cwd: ROOT, env: childEnv(), stdio: ['pipe', 'pipe', 'pipe'] },
    );
    children.push(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.stdin.end();
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect({ code, stdout, stderr }).toEqual({ code: 0, stdout: '', stderr: '' });
  });

  it('refuses, exit 2 with one line and nothing served: a data dir a running axon serve holds, a store elsewhere, a bad config', async () => {
    const held = folder();
    const url = await serve(held);
    const onServed = await runAxon(
      ['mcp', '--data-dir', held.data, '--config', held.config],
      childEnv(),
      children,
    );
    expect(onServed.code).toBe(2);
    expect(onServed.stdout).toBe('');
    expect(onServed.stderr).toMatch(
      new RegExp(
        `^axon mcp: axon serve \\(pid \\d+\\) is running on the data dir .*: point the MCP host at its ${url}/mcp instead \\(or stop it first\\)\\n$`,
      ),
    );
    const elsewhere = folder('store:\n  postgres: postgres://postgres@127.0.0.1:5432/postgres\n');
    const pg = await runAxon(['mcp', '--config', elsewhere.config], childEnv(), children);
    expect(pg.code).toBe(2);
    expect(pg.stderr).toMatch(
      /^axon mcp: the configuration keeps axon serve's store in PostgreSQL, not in a data dir/,
    );
    const bad = folder('mcp:\n  budgets: { tokens: 5 }\n');
    const refused = await runAxon(['mcp', '--config', bad.config], childEnv(), children);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /^axon mcp: .*axon\.yaml line 2: mcp\.budgets\.tokens: unknown key "tokens"\n$/,
    );
  });

  it('--help documents its flags', async () => {
    const help = await runAxon(['mcp', '--help'], childEnv(), children);
    expect(help.code).toBe(0);
    expect(help.stdout).toBe(helpText(['mcp']));
    expect(help.stdout).toMatch(/^ {2}--data-dir <dir> /m);
    expect(help.stdout).toMatch(/^ {2}--config <file> /m);
    expect(help.stdout).toContain('claude_desktop_config.json');
  });
});

describe('/mcp of a real axon serve process', () => {
  const connect = useMcpClients();
  const KEY = 'mcp-key-0123456789ab';
  const READER = 'mcp-reader-012345678';

  it("serves the same tools behind its keys (401 without one; a read key's call refused); mcp: enabled false turns it off", async () => {
    const where = folder(DURABLE);
    const url = await serve(where, { AXON_API_KEYS: `${KEY}:alice,${READER}:alice:read` });
    const err = await connect(url).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StreamableHTTPError);
    expect((err as StreamableHTTPError).code).toBe(401);
    const { client } = await connect(url, KEY);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('actor_teller');
    const note = await callTool(client, 'actor_notebook', { key: 'n', message: { text: 'hi' } });
    expect(note.structuredContent).toEqual({ count: 1 });
    const reader = (await connect(url, READER)).client;
    await refusedWith(callTool(reader, 'add', { a: 1, b: 2 }), MCP_REFUSED, 'FORBIDDEN');

    const off = folder('mcp:\n  enabled: false\n');
    const offUrl = await serve(off);
    const res = await request(offUrl, 'POST', '/mcp', { jsonrpc: '2.0', id: 1, method: 'ping' });
    expect(res.status).toBe(404);
  });
});
