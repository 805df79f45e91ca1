/**
 * Invoking and delegating (issue 45, "a newcomer's first hour"): what a handler's input is,
 * malformed invocations and delegations refused with INVALID_PARAMS naming the field before
 * any step, and an unknown agent refused the way an unknown tool is (NOT_FOUND, rejected).
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AgentInput } from '../../src/actors/agent-result.js';
import type { AgentFunctionHandler } from '../../src/actors/agent-runtime.js';
import { defineAgent } from '../../src/actors/define-agent.js';
import type { ContextNarrowing } from '../../src/context/context-options.js';
import { InvalidParamsError } from '../../src/errors/invalid-params-error.js';
import { NotFoundError } from '../../src/errors/not-found-error.js';
import type { Runtime, RuntimeOptions } from '../../src/runtime/runtime.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { quietRuntime } from '../support/runtime.js';

const runtimes: Runtime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((rt) => rt.close()));
});

/** Counts its runs and answers with the message it was given. */
function leafAgent() {
  const seen: AgentInput[] = [];
  const agent = defineAgent({
    name: 'leaf',
    handler: (input) => {
      seen.push(input);
      return `leaf got ${input.message}`;
    },
  });
  return { agent, seen };
}

const add = defineTool({
  name: 'add',
  description: 'Adds two numbers',
  input: z.strictObject({ a: z.number(), b: z.number() }),
  handler: ({ a, b }) => ({ sum: a + b }),
});

function runtime(options: RuntimeOptions): Runtime {
  const rt = quietRuntime(options);
  runtimes.push(rt);
  return rt;
}

/** A runtime with `leaf`, `add`, and `caller`, whose handler is `handler`. */
function withCaller(handler: AgentFunctionHandler) {
  const leaf = leafAgent();
  const rt = runtime({
    agents: [leaf.agent, defineAgent({ name: 'caller', handler })],
    tools: [add],
  });
  return { rt, seen: leaf.seen };
}

const rejection = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => null,
    (e: unknown) => e,
  );

describe("an agent's input", () => {
  it('is the object { message } for a string, so a handler reads input.message', async () => {
    const messages: string[] = [];
    const echo = defineAgent({
      name: 'echo',
      handler: (input) => {
        messages.push(input.message);
        return input;
      },
    });
    const rt = runtime({ agents: [echo] });

    const r = await rt.invoke('echo', 'add things');

    expect(r.output).toEqual({ message: 'add things' });
    expect(messages).toEqual(['add things']);
  });

  it('keeps message and args as given', async () => {
    const { rt, seen } = withCaller(() => null);
    await rt.invoke('leaf', { message: 'm', args: { n: 1 }, tools: ['add'] });
    expect(seen).toEqual([{ message: 'm', args: { n: 1 }, tools: ['add'] }]);
  });
});

describe('a malformed invocation', () => {
  const cases: readonly (readonly [string, unknown, string, RegExp])[] = [
    ['a number', 42, 'input', /got number 42/],
    ['null', null, 'input', /got null/],
    ['an array', ['hi'], 'input', /got an array/],
    ['an object without message', {}, 'input.message', /message must be a string, got undefined/],
    ['a message that is not a string', { message: 7 }, 'input.message', /got number 7/],
    ['a misspelt field', { message: 'm', arg: { n: 1 } }, 'input.arg', /unknown field "arg"/],
    ['args that are not an object', { message: 'm', args: 'n=1' }, 'input.args', /got a string/],
    ['tools that are not names', { message: 'm', tools: ['add', 3] }, 'input.tools', /at \[1\]/],
    ['a history that is not a list', { message: 'm', history: 'hi' }, 'input.history', /string/],
  ];

  it.each(cases)(
    'rejects %s with INVALID_PARAMS naming the field, storing no run and running nothing',
    async (_what, input, param, message) => {
      const { rt, seen } = withCaller(() => null);
      const runId = `run_${randomUUID()}`;

      const err = await rejection(
        rt.invoke('leaf', input as AgentInput, rt.createContext({ runId })),
      );

      expect(err).toBeInstanceOf(InvalidParamsError);
      expect(err).toMatchObject({ code: 'INVALID_PARAMS', details: { param, agent: 'leaf' } });
      expect((err as Error).message).toMatch(/^input of agent "leaf": /);
      expect((err as Error).message).toMatch(message);
      expect(await rt.getRun(runId)).toBeNull();
      expect(seen).toEqual([]);
    },
  );

  it('rejects a context that is not one (createContext options in its place), storing no run', async () => {
    const { rt, seen } = withCaller(() => null);
    const before = (await rt.store.listRuns()).length;

    const err = await rejection(rt.invoke('leaf', 'hi', { userId: 'ann' } as never));

    expect(err).toBeInstanceOf(InvalidParamsError);
    expect(err).toMatchObject({ code: 'INVALID_PARAMS', details: { param: 'ctx' } });
    expect(await rt.store.listRuns()).toHaveLength(before);
    expect(seen).toEqual([]);
  });

  it('is refused the same way by stream (from its iteration) and invokeChain (before its first agent runs)', async () => {
    const { rt, seen } = withCaller(() => null);

    const streamed = async (): Promise<void> => {
      for await (const _ of rt.stream('leaf', { text: 'hi' } as never)) {
        // no event comes
      }
    };
    await expect(streamed()).rejects.toMatchObject({
      code: 'INVALID_PARAMS',
      details: { param: 'input.text' },
    });
    await expect(rt.invokeChain(['leaf', 'leaf'], 5 as never)).rejects.toMatchObject({
      code: 'INVALID_PARAMS',
      details: { param: 'input' },
    });
    expect(seen).toEqual([]);
  });
});

describe('a malformed delegation', () => {
  it('fails the delegating step with INVALID_PARAMS naming the input (not INTERNAL), and the child never runs', async () => {
    const { rt, seen } = withCaller(async (_input, ctx, runtime) => {
      const r = await runtime.delegate('leaf', 42 as never, ctx);
      return r.output;
    });

    const r = await rt.invoke('caller', 'go');

    expect(r.status).toBe('error');
    expect(r.error).toBeInstanceOf(InvalidParamsError);
    expect(r.error).toMatchObject({ code: 'INVALID_PARAMS', details: { param: 'input' } });
    expect(r.error?.message).toBe(
      'input of agent "leaf": expected a string or { message: string, args?: object }, got number 42',
    );
    expect(seen).toEqual([]);
    const steps = await rt.listSteps(r.runId);
    expect(steps.map((s) => [s.name, s.status, s.error?.code])).toEqual([
      ['caller', 'failed', 'INVALID_PARAMS'],
    ]);
  });

  it('is caught by the handler as InvalidParamsError, which it may handle', async () => {
    const { rt } = withCaller(async (_input, ctx, runtime) => {
      try {
        await runtime.delegate('leaf', { message: 'x', args: [1] } as never, ctx);
        return 'delegated';
      } catch (err) {
        return err instanceof InvalidParamsError ? `refused: ${err.param ?? ''}` : 'other';
      }
    });
    expect((await rt.invoke('caller', 'go')).output).toBe('refused: input.args');
  });

  const narrowings: readonly (readonly [unknown, string])[] = [
    ['tools', 'narrowing'],
    [{ permissions: { allowedTools: 'add' } }, 'narrowing.permissions.allowedTools'],
    [{ permissions: { roles: null } }, 'narrowing.permissions.roles'],
    [{ permissions: { tools: ['add'] } }, 'narrowing.permissions.tools'],
    [{ budgets: { maxTokensOut: -1 } }, 'narrowing.budgets.maxTokensOut'],
    [{ budgets: { tokens: 5 } }, 'narrowing.budgets.tokens'],
    [{ timeoutMs: '5s' }, 'narrowing.timeoutMs'],
    [{ metadata: 'x' }, 'narrowing.metadata'],
    [{ allowedTools: ['add'] }, 'narrowing.allowedTools'],
  ];

  it.each(narrowings)(
    'with narrowing %j fails with INVALID_PARAMS naming %s, the child never run',
    async (narrowing, param) => {
      const { rt, seen } = withCaller(async (_input, ctx, runtime) => {
        const r = await runtime.delegate('leaf', 'x', ctx, narrowing as ContextNarrowing);
        return r.output;
      });
      const r = await rt.invoke('caller', 'go');
      expect(r.error).toMatchObject({ code: 'INVALID_PARAMS', details: { param } });
      expect(seen).toEqual([]);
    },
  );

  it('with a well-formed narrowing still runs, narrowed', async () => {
    const { rt, seen } = withCaller(async (input, ctx, runtime) => {
      const r = await runtime.delegate('leaf', input, ctx, {
        permissions: { allowedTools: ['add'], allowedAgents: null },
        budgets: { maxTokensOut: 500 },
        timeoutMs: 1_000,
        metadata: { why: 'test' },
      });
      return r.output;
    });
    expect((await rt.invoke('caller', 'go')).output).toBe('leaf got go');
    expect(seen).toEqual([{ message: 'go' }]);
  });

  it('without a context (undefined, or a narrowing in its place) rejects with INVALID_PARAMS naming parentCtx', async () => {
    const { rt, seen } = withCaller(() => null);
    for (const ctx of [undefined, { permissions: {} }]) {
      await expect(rt.delegate('leaf', 'x', ctx as never)).rejects.toMatchObject({
        code: 'INVALID_PARAMS',
        details: { param: 'parentCtx' },
      });
    }
    expect(seen).toEqual([]);
  });
});

describe('an unknown agent and an unknown tool fail the same way', () => {
  it('from outside a step: invoke and callTool both reject with NOT_FOUND naming the kind and the name, storing nothing', async () => {
    const { rt } = withCaller(() => null);
    const runId = `run_${randomUUID()}`;
    const ctx = rt.createContext({ runId });

    const agent = await rejection(rt.invoke('lef', 'x', ctx));
    const tool = await rejection(rt.callTool('ad', { a: 1, b: 2 }, ctx));

    expect(agent).toBeInstanceOf(NotFoundError);
    expect(tool).toBeInstanceOf(NotFoundError);
    expect(agent).toMatchObject({ code: 'NOT_FOUND', details: { kind: 'agent', id: 'lef' } });
    expect(tool).toMatchObject({ code: 'NOT_FOUND', details: { kind: 'tool', id: 'ad' } });
    expect((agent as Error).message).toBe('agent "lef" not found');
    expect((tool as Error).message).toBe('tool "ad" not found');
    expect(await rt.getRun(runId)).toBeNull();
  });

  it('inside a handler: delegate and callTool both reject, and left uncaught both end the step NOT_FOUND', async () => {
    const toAgent = withCaller(async (_input, ctx, runtime) => {
      await runtime.delegate('lef', 'x', ctx);
      return 'not reached';
    });
    const toTool = withCaller(async (_input, ctx, runtime) => {
      await runtime.callTool('ad', { a: 1, b: 2 }, ctx);
      return 'not reached';
    });

    const a = await toAgent.rt.invoke('caller', 'go');
    const t = await toTool.rt.invoke('caller', 'go');

    expect([a.status, a.error?.code, a.error?.details]).toEqual([
      'error',
      'NOT_FOUND',
      { kind: 'agent', id: 'lef' },
    ]);
    expect([t.status, t.error?.code, t.error?.details]).toEqual([
      'error',
      'NOT_FOUND',
      { kind: 'tool', id: 'ad' },
    ]);
    // Neither made a child step.
    expect((await toAgent.rt.listSteps(a.runId)).map((s) => s.name)).toEqual(['caller']);
    expect((await toTool.rt.listSteps(t.runId)).map((s) => s.name)).toEqual(['caller']);
  });

  it('stream and invokeChain refuse an unknown agent before anything runs', async () => {
    const { rt, seen } = withCaller(() => null);
    const streamed = async (): Promise<void> => {
      for await (const _ of rt.stream('lef', 'x')) {
        // no event comes
      }
    };
    await expect(streamed()).rejects.toMatchObject({ code: 'NOT_FOUND', details: { id: 'lef' } });
    await expect(rt.invokeChain(['leaf', 'lef'], 'x')).rejects.toMatchObject({
      code: 'NOT_FOUND',
      details: { kind: 'agent', id: 'lef' },
    });
    expect(seen).toEqual([]);
  });
});
