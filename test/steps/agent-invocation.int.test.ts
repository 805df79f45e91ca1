/**
 * A worker-placed and a container-placed agent's calls back to the host take the host's
 * path (issue 45): a malformed delegation is INVALID_PARAMS naming the field, an unknown
 * agent and an unknown tool are NOT_FOUND, each thrown in the handler as a typed error
 * that crossed the thread or the container, and left uncaught ending its step with that
 * code, not INTERNAL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../src/actors/define-agent.js';
import type { AgentDefinition } from '../../src/actors/agent-runtime.js';
import type { Runtime, RuntimeOptions } from '../../src/runtime/runtime.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { quietRuntime } from '../support/runtime.js';

const image = process.env['AXON_TEST_IMAGE'] ?? 'localhost/axon-node:test';
const workerModule = new URL('../fixtures/refused-call-agents.ts', import.meta.url).href;
const containerModule = new URL('../fixtures/refused-call-agents.mjs', import.meta.url).href;

const runtimes: Runtime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((rt) => rt.close()));
});

let leafRuns = 0;
const leaf = defineAgent({
  name: 'leaf',
  handler: (input) => {
    leafRuns++;
    return input.message;
  },
});
const add = defineTool({
  name: 'add',
  description: 'Adds two numbers',
  input: z.strictObject({ a: z.number(), b: z.number() }),
  handler: ({ a, b }) => a + b,
});

const placements: readonly (readonly [
  string,
  (name: string) => AgentDefinition,
  RuntimeOptions,
])[] = [
  [
    'worker',
    (name) => defineAgent({ name, placement: 'worker', module: workerModule, export: name }),
    { workers: { maxThreads: 1 } },
  ],
  [
    'container',
    (name) => defineAgent({ name, placement: 'container', module: containerModule, export: name }),
    { container: { image } },
  ],
];

describe.each(placements)('an agent placed on a %s', (_placement, placed, options) => {
  function runtime(): Runtime {
    const rt = quietRuntime({
      agents: [leaf, placed('refusedCalls'), placed('malformedDelegation'), placed('unknownTool')],
      tools: [add],
      ...options,
    });
    runtimes.push(rt);
    return rt;
  }

  it('is refused a malformed delegation with INVALID_PARAMS, an unknown agent or tool with NOT_FOUND', async () => {
    const rt = runtime();
    leafRuns = 0;

    const r = await rt.invoke('refusedCalls', 'go');

    expect(r.status).toBe('success');
    expect(r.output).toEqual({
      input: { code: 'INVALID_PARAMS', param: 'input', id: null },
      narrowing: { code: 'INVALID_PARAMS', param: 'narrowing.budgets.maxTokensOut', id: null },
      agent: { code: 'NOT_FOUND', param: null, id: 'nobody' },
      tool: { code: 'NOT_FOUND', param: null, id: 'ad' },
    });
    expect(leafRuns).toBe(0);
    expect((await rt.listSteps(r.runId)).map((s) => s.name)).toEqual(['refusedCalls']);
  });

  it('left uncaught, the refusal ends its step with that code, not INTERNAL', async () => {
    const rt = runtime();

    const malformed = await rt.invoke('malformedDelegation', 'go');
    const unknown = await rt.invoke('unknownTool', 'go');

    expect(malformed).toMatchObject({
      status: 'error',
      error: { code: 'INVALID_PARAMS', details: { param: 'input.text' } },
    });
    expect(malformed.error?.message).toMatch(/unknown field "text"/);
    expect(unknown).toMatchObject({
      status: 'error',
      error: { code: 'NOT_FOUND', details: { kind: 'tool', id: 'ad' } },
    });
    expect((await rt.getStep(malformed.stepId))?.error).toMatchObject({ code: 'INVALID_PARAMS' });
    expect((await rt.getStep(unknown.stepId))?.error).toMatchObject({ code: 'NOT_FOUND' });
  });
});
