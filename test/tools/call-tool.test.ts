import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../src/actors/define-agent.js';
import { createRuntime, type RuntimeOptions } from '../../src/runtime/runtime.js';
import { SimulatedClock } from '../../src/context/clock.js';
import { ConflictError } from '../../src/errors/conflict-error.js';
import { NotFoundError } from '../../src/errors/not-found-error.js';
import { PermissionDeniedError } from '../../src/errors/permission-denied-error.js';
import { SchemaViolationError } from '../../src/errors/schema-violation-error.js';
import { TimeoutError } from '../../src/errors/timeout-error.js';
import { createLogger } from '../../src/observability/logger.js';
import { defineTool } from '../../src/tools/define-tool.js';

const silent = createLogger({ level: 'silent' });

function runtimeWith(options: RuntimeOptions) {
  return createRuntime({ logger: silent, ...options });
}

/** A tool that records every call it receives. */
function addTool(calls: unknown[] = [], options: { requiredRoles?: readonly string[] } = {}) {
  return defineTool({
    name: 'add',
    description: 'Adds two numbers',
    input: z.object({ a: z.number(), b: z.number() }).strict(),
    handler: (args) => {
      calls.push(args);
      return { sum: args.a + args.b };
    },
    ...options,
  });
}

async function turns(n = 10): Promise<void> {
  for (let i = 0; i < n; i++) {
    await new Promise<void>((resolve) => {
      setImmediate(resolve);
    });
  }
}

describe('runtime.callTool', () => {
  it('runs the handler and returns its output as a success', async () => {
    const calls: unknown[] = [];
    const runtime = runtimeWith({ tools: [addTool(calls)] });
    const ctx = runtime.createContext();

    const result = await runtime.callTool('add', { a: 2, b: 3 }, ctx);

    expect(result).toMatchObject({
      status: 'success',
      tool: 'add',
      output: { sum: 5 },
      error: null,
    });
    expect(calls).toEqual([{ a: 2, b: 3 }]);
    expect(result.stepId).not.toBeNull();
    const step = await runtime.store.getStep(result.stepId ?? '');
    expect(step).toMatchObject({
      type: 'tool_call',
      name: 'add',
      status: 'succeeded',
      output: { sum: 5 },
    });
    const events = await runtime.store.readEvents(result.stepId ?? '');
    expect(events.map((e) => e.type)).toEqual(['started', 'end']);
  });

  it('refuses arguments that violate the schema, listing every bad field, without calling the handler', async () => {
    let calls = 0;
    const book = defineTool({
      name: 'book_trip',
      description: 'Books a trip',
      input: z
        .object({
          city: z.string(),
          nights: z.number().int().positive(),
          travellers: z.array(z.object({ name: z.string() }).strict()),
        })
        .strict(),
      handler: () => {
        calls += 1;
        return 'booked';
      },
    });
    const runtime = runtimeWith({ tools: [book] });

    const result = await runtime.callTool(
      'book_trip',
      { city: 7, nights: -2, travellers: [{ name: 'ann' }, { name: 3 }] },
      runtime.createContext(),
    );

    expect(result.status).toBe('error');
    expect(result.output).toBeNull();
    expect(calls).toBe(0);
    const error = result.error;
    expect(error).toBeInstanceOf(SchemaViolationError);
    expect(error?.code).toBe('SCHEMA_VIOLATION');
    const issues = error instanceof SchemaViolationError ? error.issues : [];
    expect(issues.map((i) => i.path)).toEqual(
      expect.arrayContaining([['city'], ['nights'], ['travellers', 1, 'name']]),
    );
    expect(issues).toHaveLength(3);
  });

  it('reports a missing field and an unknown field by path', async () => {
    let calls = 0;
    const tool = defineTool({
      name: 'strict_add',
      description: 'Adds',
      input: z.object({ a: z.number(), b: z.number() }).strict(),
      handler: () => {
        calls += 1;
        return 0;
      },
    });
    const runtime = runtimeWith({ tools: [tool] });

    const result = await runtime.callTool(
      'strict_add',
      { a: 1, extra: true },
      runtime.createContext(),
    );

    expect(calls).toBe(0);
    expect(result.error).toBeInstanceOf(SchemaViolationError);
    const issues = result.error instanceof SchemaViolationError ? result.error.issues : [];
    expect(issues.map((i) => i.path)).toEqual(expect.arrayContaining([['b']]));
    expect(issues.some((i) => i.message.includes('extra'))).toBe(true);
  });

  it('ends the tool_call step log with a SCHEMA_VIOLATION error event (NERVE-4011)', async () => {
    const runtime = runtimeWith({ tools: [addTool()] });

    const result = await runtime.callTool('add', { a: 'one', b: 2 }, runtime.createContext());

    const stepId = result.stepId;
    expect(stepId).not.toBeNull();
    const events = await runtime.store.readEvents(stepId ?? '');
    expect(events[0]?.type).toBe('started');
    expect(events.at(-1)).toMatchObject({
      type: 'error',
      code: 'SCHEMA_VIOLATION',
      seq: events.length,
    });
    const step = await runtime.store.getStep(stepId ?? '');
    expect(step).toMatchObject({
      type: 'tool_call',
      status: 'failed',
      error: { code: 'SCHEMA_VIOLATION' },
    });
  });

  it('rejects an unknown tool with NOT_FOUND, as delegate does an unknown agent, and records no step', async () => {
    const runtime = runtimeWith({ tools: [addTool()] });
    const runId = `run_${randomUUID()}`;
    const ctx = runtime.createContext({ runId });

    const err = await runtime.callTool('multiply', { a: 1, b: 2 }, ctx).catch((e: unknown) => e);

    expect(err).toBeInstanceOf(NotFoundError);
    expect(err).toMatchObject({ code: 'NOT_FOUND', details: { kind: 'tool', id: 'multiply' } });
    expect(await runtime.store.getRun(runId)).toBeNull();
    expect(await runtime.store.listSteps(runId)).toEqual([]);
  });

  it('refuses a tool the context is not allowed, without running it', async () => {
    const calls: unknown[] = [];
    const runtime = runtimeWith({ tools: [addTool(calls)] });
    const runId = `run_${randomUUID()}`;
    const ctx = runtime.createContext({ runId, permissions: { allowedTools: ['search'] } });

    const err = await runtime.callTool('add', { a: 1, b: 2 }, ctx).catch((e: unknown) => e);

    expect(err).toBeInstanceOf(PermissionDeniedError);
    expect(err).toMatchObject({ code: 'POLICY_DENIED' });
    expect(calls).toEqual([]);
    expect(await runtime.store.getRun(runId)).toBeNull();
  });

  it('refuses a tool whose required roles the context lacks, and runs it for one that has them', async () => {
    const calls: unknown[] = [];
    const runtime = runtimeWith({
      tools: [addTool(calls, { requiredRoles: ['admin', 'billing'] })],
    });

    const denied = await runtime
      .callTool('add', { a: 1, b: 2 }, runtime.createContext({ permissions: { roles: ['admin'] } }))
      .catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(PermissionDeniedError);
    expect(calls).toEqual([]);

    const allowed = await runtime.callTool(
      'add',
      { a: 1, b: 2 },
      runtime.createContext({ permissions: { roles: ['admin', 'billing'] } }),
    );
    expect(allowed.status).toBe('success');
    expect(calls).toHaveLength(1);
  });

  it('turns a throwing handler into an INTERNAL error carrying its message', async () => {
    const tool = defineTool({
      name: 'flaky',
      description: 'Fails',
      input: z.object({}).strict(),
      handler: () => {
        throw new Error('upstream refused the request');
      },
    });
    const runtime = runtimeWith({ tools: [tool] });

    const result = await runtime.callTool('flaky', {}, runtime.createContext());

    expect(result.status).toBe('error');
    expect(result.output).toBeNull();
    expect(result.error?.code).toBe('INTERNAL');
    expect(result.error?.message).toContain('upstream refused the request');
    const events = await runtime.store.readEvents(result.stepId ?? '');
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'INTERNAL' });
  });

  it('times out a handler slower than its timeoutMs, at exactly that time', async () => {
    const clock = new SimulatedClock(1_000_000);
    let started = 0;
    let seenSignal: AbortSignal | null = null;
    const slow = defineTool({
      name: 'slow',
      description: 'Never answers',
      input: z.object({}).strict(),
      timeoutMs: 500,
      handler: (_args, ctx) => {
        started += 1;
        seenSignal = ctx.signal;
        return new Promise<never>(() => undefined);
      },
    });
    const runtime = runtimeWith({ tools: [slow], clock });
    let settled = false;
    const pending = runtime.callTool('slow', {}, runtime.createContext()).finally(() => {
      settled = true;
    });

    for (let i = 0; i < 50 && started === 0; i++) await turns(1);
    expect(started).toBe(1);
    clock.advance(499);
    await turns();
    expect(settled).toBe(false);

    clock.advance(1);
    const result = await pending;

    expect(result.status).toBe('timeout');
    expect(result.error).toBeInstanceOf(TimeoutError);
    expect(result.error?.code).toBe('TIMEOUT');
    expect(result.error instanceof TimeoutError ? result.error.timeoutMs : null).toBe(500);
    expect(result.durationMs).toBe(500);
    expect((seenSignal as AbortSignal | null)?.aborted).toBe(true);
    const step = await runtime.store.getStep(result.stepId ?? '');
    expect(step).toMatchObject({ status: 'failed', error: { code: 'TIMEOUT' } });
  });

  it('runs a tool called from an agent as a child tool_call step of that agent', async () => {
    const agent = defineAgent({
      name: 'calculator',
      handler: async (_input, ctx, rt) => (await rt.callTool('add', { a: 4, b: 5 }, ctx)).stepId,
    });
    const runtime = runtimeWith({ tools: [addTool()], agents: [agent] });

    const result = await runtime.invoke<string>('calculator', 'go');

    expect(result.status).toBe('success');
    const toolStep = await runtime.store.getStep(result.output ?? '');
    expect(toolStep).toMatchObject({
      type: 'tool_call',
      name: 'add',
      run_id: result.runId,
      parent_step_id: result.stepId,
      actor_path: ['calculator', 'add'],
      status: 'succeeded',
    });
    const steps = await runtime.store.listSteps(result.runId);
    expect(steps.map((s) => s.step_id)).toEqual([result.stepId, toolStep?.step_id]);
  });

  it('refuses a second tool with the same name', () => {
    const runtime = runtimeWith({ tools: [addTool()] });
    expect(() => runtime.registerTool(addTool())).toThrow(ConflictError);
  });
});

describe('runtime.discoverTools', () => {
  const tool = (name: string, requiredRoles: readonly string[] = []) =>
    defineTool({
      name,
      description: `the ${name} tool`,
      input: z.object({ q: z.string() }).strict(),
      handler: () => null,
      requiredRoles,
    });

  it('lists only the tools the context may call, with their JSON Schemas', () => {
    const runtime = runtimeWith({
      tools: [
        tool('search'),
        tool('refund', ['billing']),
        tool('weather'),
        tool('admin_panel', ['admin']),
      ],
    });
    const ctx = runtime.createContext({
      permissions: { allowedTools: ['search', 'refund', 'admin_panel'], roles: ['billing'] },
    });

    const menu = runtime.discoverTools(ctx);

    expect(menu.map((t) => t.name)).toEqual(['search', 'refund']);
    expect(menu[1]).toEqual({
      name: 'refund',
      description: 'the refund tool',
      parameters: {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        properties: { q: { type: 'string' } },
        required: ['q'],
        additionalProperties: false,
      },
      requiredPermissions: ['billing'],
    });
  });

  it('lists every tool without role requirements for an open context', () => {
    const runtime = runtimeWith({
      tools: [tool('search'), tool('refund', ['billing']), tool('weather')],
    });

    expect(runtime.discoverTools(runtime.createContext()).map((t) => t.name)).toEqual([
      'search',
      'weather',
    ]);
  });
});
