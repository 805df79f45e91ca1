import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { createContext } from '../../src/context/create-context.js';
import { createCompositeToolManager } from '../../src/tools/composite-tool-manager.js';
import { defineJsonSchemaTool, defineTool } from '../../src/tools/define-tool.js';
import { createMcpToolManager } from '../../src/tools/mcp-tool-manager.js';
import { ToolRegistry } from '../../src/tools/tool-registry.js';
import { describe, expect, it } from 'vitest';
import { describeToolManager } from './tool-manager.conformance.js';

const probeServer = fileURLToPath(new URL('../fixtures/mcp-probe-server.mjs', import.meta.url));

/** The conformance tools as function tools, `double` declared by JSON Schema. */
function functionTools(): ToolRegistry {
  const registry = new ToolRegistry();
  registry.register(
    defineJsonSchemaTool<{ n: number }, number>({
      name: 'double',
      description: 'Doubles n',
      parameters: {
        type: 'object',
        properties: { n: { type: 'integer' } },
        required: ['n'],
        additionalProperties: false,
      },
      handler: ({ n }) => n * 2,
    }),
  );
  registry.register(
    defineTool({
      name: 'slow',
      description: 'Answers after ms milliseconds',
      input: z.object({ ms: z.number() }),
      handler: async ({ ms }) => {
        await sleep(ms);
        return ms;
      },
      timeoutMs: 2_000,
    }),
  );
  registry.register(
    defineTool({
      name: 'fails',
      description: 'Reports an error',
      input: z.object({}),
      handler: () => {
        throw new Error('the disk is on fire');
      },
    }),
  );
  return registry;
}

const mcpNumber = (output: unknown): number =>
  Number((output as { content: { text: string }[] }).content[0]?.text);

describeToolManager('function tools (ToolRegistry)', () => ({
  manager: functionTools(),
  number: (output) => output as number,
}));

describeToolManager('MCP over stdio (an SDK-built server)', () => ({
  manager: createMcpToolManager({
    name: 'probe',
    command: process.execPath,
    args: [probeServer],
    timeoutMs: 2_000,
  }),
  number: mcpNumber,
}));

describeToolManager('composite (MCP first, then function tools)', () => ({
  manager: createCompositeToolManager([
    createMcpToolManager({
      name: 'probe',
      command: process.execPath,
      args: [probeServer],
      timeoutMs: 2_000,
    }),
    functionTools(),
  ]),
  number: mcpNumber,
}));

describe('CompositeToolManager: the first registration of a name wins', () => {
  it('hides and reports a duplicate, and routes calls to the first owner', async () => {
    const seen: unknown[] = [];
    const composite = createCompositeToolManager(
      [
        functionTools(),
        createMcpToolManager({ name: 'probe', command: process.execPath, args: [probeServer] }),
      ],
      { onDuplicate: (d) => seen.push(d) },
    );
    try {
      const ctx = createContext();
      const names = (await composite.discover(ctx)).map((t) => t.name);
      expect(names.filter((n) => n === 'double')).toHaveLength(1);
      // Tools only the MCP server has come through as well.
      expect(names).toEqual(expect.arrayContaining(['calls', 'big', 'crash']));
      expect(seen).toEqual(
        expect.arrayContaining([{ tool: 'double', kept: 'functions', hidden: 'probe' }]),
      );
      expect(composite.duplicates).toEqual(seen);
      // The function tool answers (a number, not MCP content).
      expect((await composite.call('double', { n: 4 }, ctx)).output).toBe(8);
      const counted = await composite.call('calls', {}, ctx);
      expect(
        JSON.parse((counted.output as { content: { text: string }[] }).content[0]?.text ?? ''),
      ).toMatchObject({ calls: 1 });
      // Discovering again reports nothing new.
      await composite.discover(ctx);
      expect(seen.filter((d) => (d as { tool: string }).tool === 'double')).toHaveLength(1);
    } finally {
      await composite.close();
    }
  });
});
