import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/runtime/runtime.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { createMcpToolManager, type McpToolManager } from '../../src/tools/mcp-tool-manager.js';
import { addTool as add } from '../../examples/tools/add.js';
import { quietRuntime } from '../support/runtime.js';

const probeServer = fileURLToPath(new URL('../fixtures/mcp-probe-server.mjs', import.meta.url));
const runtimes: Runtime[] = [];

afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((rt) => rt.close()));
});

function setup(options: { requiredRoles?: string[] } = {}): {
  rt: Runtime;
  mcp: McpToolManager;
} {
  const mcp = createMcpToolManager({
    name: 'probe',
    command: process.execPath,
    args: [probeServer],
    ...(options.requiredRoles ? { requiredRoles: options.requiredRoles } : {}),
  });
  const rt = quietRuntime({
    tools: [add],
    toolManagers: [mcp],
    engines: [
      createScriptedEngine({
        tokenDelayMs: 0,
        script: () => ({
          text: 'Doubling.',
          toolCalls: [
            { name: 'double', arguments: { n: 21 } },
            { name: 'double', arguments: { n: 'x' } },
          ],
        }),
      }),
    ],
  });
  runtimes.push(rt);
  return { rt, mcp };
}

const text = (output: unknown): string =>
  (output as { content: { text: string }[] }).content.map((c) => c.text).join('');

describe('a runtime with an MCP tool manager', () => {
  it('lists function and MCP tools together, and calls an MCP tool as a tool_call step', async () => {
    const { rt } = setup();
    const names = (await rt.listTools()).map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['add', 'double', 'calls', 'slow']));

    const r = await rt.callTool('double', { n: 21 }, rt.createContext());
    expect(r.status).toBe('success');
    expect(text(r.output)).toBe('42');
    expect(r.stepId).not.toBeNull();
    const step = await rt.store.getStep(r.stepId ?? '');
    expect(step).toMatchObject({ type: 'tool_call', name: 'double', status: 'succeeded' });
  });

  it('bad arguments fail the step with SCHEMA_VIOLATION and never reach the server', async () => {
    const { rt } = setup();
    const ctx = rt.createContext();
    const bad = await rt.callTool('double', { n: 'x' }, ctx);
    expect(bad.status).toBe('error');
    expect(bad.error?.code).toBe('SCHEMA_VIOLATION');
    const events = await rt.store.readEvents(bad.stepId ?? '');
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'SCHEMA_VIOLATION' });
    const counted = await rt.callTool('calls', {}, ctx);
    expect(JSON.parse(text(counted.output))).toMatchObject({ calls: 1 });
  });

  it('refuses unknown and forbidden MCP tools without a step', async () => {
    const { rt } = setup({ requiredRoles: ['ops'] });
    const missing = rt.callTool('nope', {}, rt.createContext());
    await expect(missing).rejects.toMatchObject({ code: 'NOT_FOUND', details: { id: 'nope' } });
    const denied = rt.callTool('double', { n: 1 }, rt.createContext());
    await expect(denied).rejects.toMatchObject({ code: 'POLICY_DENIED' });
    const ops = rt.createContext({ permissions: { roles: ['ops'] } });
    expect((await rt.callTool('double', { n: 1 }, ops)).status).toBe('success');
  });

  it('llm_plan checks suggestions for MCP tools against their JSON Schemas', async () => {
    const { rt } = setup();
    const plan = await rt.llmPlan({
      messages: [{ role: 'user', content: 'double 21' }],
      tools: ['double'],
    });
    expect(plan.status).toBe('succeeded');
    expect(plan.output?.suggestions).toEqual([{ tool: 'double', args: { n: 21 } }]);
    expect(plan.output?.rejected).toEqual([
      expect.objectContaining({
        tool: 'double',
        errors: [expect.objectContaining({ path: ['n'] })],
      }),
    ]);
    const counted = await rt.callTool('calls', {}, rt.createContext());
    expect(JSON.parse(text(counted.output))).toMatchObject({ calls: 1 });
  });

  it('closing the runtime stops the MCP server processes', async () => {
    const { rt, mcp } = setup();
    await rt.callTool('calls', {}, rt.createContext());
    expect(mcp.processes).toBe(1);
    await rt.close();
    expect(mcp.processes).toBe(0);
  });
});
