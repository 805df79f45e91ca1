import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createContext } from '../../src/context/create-context.js';
import { SchemaViolationError } from '../../src/errors/schema-violation-error.js';
import { TimeoutError } from '../../src/errors/timeout-error.js';
import { ToolError } from '../../src/errors/tool-error.js';
import {
  createMcpToolManager,
  truncateResult,
  type McpToolManager,
  type McpToolManagerOptions,
} from '../../src/tools/mcp-tool-manager.js';

const require = createRequire(import.meta.url);
const everything = require.resolve('@modelcontextprotocol/server-everything/dist/index.js');
const filesystem = require.resolve('@modelcontextprotocol/server-filesystem/dist/index.js');
const probeServer = fileURLToPath(new URL('../fixtures/mcp-probe-server.mjs', import.meta.url));

const managers: McpToolManager[] = [];
function manager(options: McpToolManagerOptions): McpToolManager {
  const m = createMcpToolManager(options);
  managers.push(m);
  return m;
}
const probe = (options: Partial<McpToolManagerOptions> = {}): McpToolManager =>
  manager({ name: 'probe', command: process.execPath, args: [probeServer], ...options });

afterEach(async () => {
  await Promise.all(managers.splice(0).map((m) => m.close()));
});

function textOf(output: unknown): string {
  const content = (output as { content: { text?: string }[] }).content;
  return content.map((c) => c.text ?? '').join('');
}

describe('MCP tools: @modelcontextprotocol/server-everything over stdio', () => {
  it('discovers echo and get-sum with their JSON Schemas and calls them', async () => {
    const m = manager({
      name: 'everything',
      command: process.execPath,
      args: [everything, 'stdio'],
    });
    const ctx = createContext();

    const tools = await m.discover(ctx);
    const sum = tools.find((t) => t.name === 'get-sum');
    expect(tools.find((t) => t.name === 'echo')).toBeDefined();
    expect(sum?.parameters).toMatchObject({
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
    });

    const echoed = await m.call('echo', { message: 'hello axon' }, ctx);
    expect(echoed.status).toBe('success');
    expect(textOf(echoed.output)).toContain('hello axon');

    const added = await m.call('get-sum', { a: 2, b: 40 }, ctx);
    expect(added.status).toBe('success');
    expect(textOf(added.output)).toContain('42');
    expect(added.output?.truncated).toBe(false);

    const bad = await m.call('get-sum', { a: 'two', b: 40 }, ctx);
    expect(bad.status).toBe('error');
    expect(bad.error).toBeInstanceOf(SchemaViolationError);
    expect((bad.error as SchemaViolationError).issues.map((i) => i.path)).toEqual([['a']]);

    expect((await m.call('no-such-tool', {}, ctx)).status).toBe('not_found');
  });
});

describe('MCP tools: @modelcontextprotocol/server-filesystem in a temporary directory', () => {
  it('writes and reads files inside its root, and reports a path outside it as an error', async () => {
    const root = await mkdtemp(join(tmpdir(), 'axon-mcp-fs-'));
    try {
      const m = manager({ name: 'fs', command: process.execPath, args: [filesystem, root] });
      const ctx = createContext();
      const file = join(root, 'notes.md');

      const written = await m.call('write_file', { path: file, content: '# axon\n' }, ctx);
      expect(written.status).toBe('success');
      expect(await readFile(file, 'utf8')).toBe('# axon\n');

      await writeFile(join(root, 'b.txt'), 'bee');
      const listed = await m.call('list_directory', { path: root }, ctx);
      expect(textOf(listed.output)).toMatch(/notes\.md[\s\S]*b\.txt|b\.txt[\s\S]*notes\.md/);

      const read = await m.call('read_text_file', { path: file }, ctx);
      expect(textOf(read.output)).toBe('# axon\n');

      const outside = await m.call('read_text_file', { path: '/etc/hostname' }, ctx);
      expect(outside.status).toBe('error');
      expect(outside.error).toBeInstanceOf(ToolError);
      expect(outside.error).toMatchObject({ failure: 'tool_error', retriable: false });
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('MCP tool manager: limits and failures (a probe server built with the SDK)', () => {
  it('checks arguments before the server sees them', async () => {
    const m = probe();
    const ctx = createContext();
    const bad = await m.call('double', { n: 1.5 }, ctx);
    expect(bad.status).toBe('error');
    expect(bad.error?.code).toBe('SCHEMA_VIOLATION');
    const counted = await m.call('calls', {}, ctx);
    // The bad call never reached the server: this is its first.
    expect(JSON.parse(textOf(counted.output))).toMatchObject({ calls: 1 });
  });

  it('a call past its timeout is `timeout`, and the server goes on serving', async () => {
    const m = probe({ timeoutMs: 2_000 });
    const ctx = createContext();
    const slow = await m.call('slow', { ms: 5_000 }, ctx);
    expect(slow.status).toBe('timeout');
    expect(slow.error).toBeInstanceOf(TimeoutError);
    expect((await m.call('double', { n: 21 }, ctx)).output?.content).toEqual([
      { type: 'text', text: '42' },
    ]);
  });

  it('a tool that reports an error is an `error` with its message', async () => {
    const failed = await probe().call('fails', {}, createContext());
    expect(failed.status).toBe('error');
    expect(failed.error?.message).toContain('the disk is on fire');
  });

  it('truncates results past maxResultBytes and says so', async () => {
    const m = probe({ maxResultBytes: 1024 });
    const ctx = createContext();
    const small = await m.call('big', { n: 100 }, ctx);
    expect(small.output?.truncated).toBe(false);
    const big = await m.call('big', { n: 100_000 }, ctx);
    expect(big.status).toBe('success');
    expect(big.output?.truncated).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(big.output))).toBeLessThanOrEqual(1024);
    expect(textOf(big.output)).toMatch(/^x{900,}$/);
  });

  it('a server that dies fails only its call; the next call starts a new one', async () => {
    const m = probe();
    const ctx = createContext();
    const before = JSON.parse(textOf((await m.call('calls', {}, ctx)).output)) as { pid: number };

    const crashed = await m.call('crash', {}, ctx);
    expect(crashed.status).toBe('error');
    expect(crashed.error).toBeInstanceOf(ToolError);
    expect(crashed.error).toMatchObject({ failure: 'server_exited', retriable: true });
    expect(crashed.error?.message).toContain('exiting on request');

    const after = JSON.parse(textOf((await m.call('calls', {}, ctx)).output)) as {
      pid: number;
      calls: number;
    };
    expect(after.pid).not.toBe(before.pid);
    expect(after.calls).toBe(1);
  });

  it('runs concurrent calls on up to poolSize servers', async () => {
    const m = probe({ poolSize: 2 });
    const ctx = createContext();
    const results = await Promise.all([
      m.call('slow', { ms: 300 }, ctx),
      m.call('slow', { ms: 300 }, ctx),
      m.call('slow', { ms: 300 }, ctx),
    ]);
    const pids = new Set(results.map((r) => (JSON.parse(textOf(r.output)) as { pid: number }).pid));
    expect(results.every((r) => r.status === 'success')).toBe(true);
    expect(pids.size).toBe(2);
    expect(m.processes).toBe(2);
  });

  it('applies both permission layers: the context allow-list and the server-wide roles', async () => {
    const m = probe({ requiredRoles: ['ops'] });
    const plain = createContext();
    expect((await m.discover(plain)).map((t) => t.name)).toEqual([]);
    expect((await m.call('calls', {}, plain)).status).toBe('permission_denied');
    const ops = createContext({ permissions: { roles: ['ops'], allowedTools: ['calls'] } });
    expect((await m.discover(ops)).map((t) => t.name)).toEqual(['calls']);
    expect((await m.call('calls', {}, ops)).status).toBe('success');
    expect((await m.call('double', { n: 1 }, ops)).status).toBe('permission_denied');
  });

  it('a command that does not exist fails the call with server_unavailable', async () => {
    const m = manager({ command: '/nonexistent/mcp-server', startTimeoutMs: 5_000 });
    const r = await m.call('anything', {}, createContext());
    expect(r.status).toBe('error');
    expect(r.error).toMatchObject({ failure: 'server_unavailable', retriable: true });
  });
});

describe('truncateResult', () => {
  it('keeps a result that fits and cuts text on a character boundary', () => {
    const fits = truncateResult([{ type: 'text', text: 'ok' }], null, 1000);
    expect(fits).toEqual({
      content: [{ type: 'text', text: 'ok' }],
      structured: null,
      truncated: false,
    });
    const cut = truncateResult([{ type: 'text', text: 'é'.repeat(1000) }], { big: true }, 200);
    expect(cut.truncated).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(cut))).toBeLessThanOrEqual(200);
    expect(textOf(cut)).toMatch(/^é+$/);
  });
});
