/**
 * `runtime.traceTree(runId)` (issue 45): a run's trace printed from code in one call, each
 * line tagged with the run's own trace id rather than the renderer's `t_trace` placeholder.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../src/actors/define-agent.js';
import { SimulatedClock } from '../../src/context/clock.js';
import { InvalidParamsError } from '../../src/errors/invalid-params-error.js';
import { NotFoundError } from '../../src/errors/not-found-error.js';
import type { Runtime, RuntimeOptions } from '../../src/runtime/runtime.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { quietRuntime } from '../support/runtime.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';

const runtimes: Runtime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((rt) => rt.close()));
});

/** The README tour's boss, calculator and add, on a clock that moves only when told. */
function tour(options: RuntimeOptions = {}) {
  const clock = new SimulatedClock(1_700_000_000_000);
  const add = defineTool({
    name: 'add',
    description: 'Adds two numbers',
    input: z.strictObject({ a: z.number(), b: z.number() }),
    handler: ({ a, b }) => {
      clock.advance(4);
      return { sum: a + b };
    },
  });
  const calculator = defineAgent({
    name: 'calculator',
    handler: async (_input, ctx, runtime) => {
      const r = await runtime.callTool<{ sum: number }>('add', { a: 2, b: 3 }, ctx);
      clock.advance(3);
      return `2 + 3 = ${r.output?.sum}`;
    },
  });
  const missing = defineAgent({
    name: 'missing',
    handler: async (input, ctx, runtime) => (await runtime.delegate('nobody', input, ctx)).output,
  });
  const boss = defineAgent({
    name: 'boss',
    handler: async (input, ctx, runtime) => {
      const child = await runtime.delegate('calculator', input, ctx);
      await runtime.delegate('missing', input, ctx);
      clock.advance(5);
      return child.output;
    },
  });
  const rt = quietRuntime({ agents: [boss, calculator, missing], tools: [add], clock, ...options });
  runtimes.push(rt);
  return { rt, clock };
}

describe('runtime.traceTree', () => {
  it("prints a run's steps nested under their callers, each line tagged with the run's trace id", async () => {
    const { rt } = tour();

    const r = await rt.invoke('boss', 'add things', rt.createContext({ traceId: TRACE }));

    expect(r.status).toBe('success');
    expect(await rt.traceTree(r.runId)).toBe(
      [
        '[t_4bf92f] agent boss (12ms)',
        '+-- [t_4bf92f.1] agent calculator (7ms)',
        '|   +-- [t_4bf92f.1.1] tool add (4ms)',
        '+-- [t_4bf92f.2] agent missing (0ms) !NOT_FOUND',
      ].join('\n'),
    );
  });

  it('takes the trace id from the run: a context made without one gets its own, never t_trace', async () => {
    const { rt } = tour();

    const r = await rt.invoke('boss', 'add things');
    const run = await rt.getRun(r.runId);
    const tree = await rt.traceTree(r.runId);

    const tag = `t_${run?.trace_id.slice(0, 6) ?? ''}`;
    expect(tag).toMatch(/^t_[0-9a-f]{6}$/);
    expect(tree.split('\n').map((line) => /\[(t_[^.\]]+)/.exec(line)?.[1])).toEqual([
      tag,
      tag,
      tag,
      tag,
    ]);
    expect(tree).not.toContain('t_trace');
  });

  it('shows a step still running as running', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow = defineAgent({
      name: 'slow',
      handler: async () => {
        await gate;
        return 'done';
      },
    });
    const rt = quietRuntime({ agents: [slow] });
    runtimes.push(rt);
    const runId = `run_${randomUUID()}`;
    const ctx = rt.createContext({ traceId: TRACE, runId });

    const pending = rt.invoke('slow', 'x', ctx);
    await expect
      .poll(() => rt.traceTree(runId).catch(() => ''))
      .toBe('[t_4bf92f] agent slow (running)');
    release();
    expect((await pending).status).toBe('success');
    expect(await rt.traceTree(runId)).toMatch(/^\[t_4bf92f\] agent slow \(\d+ms\)$/);
  });

  it('rejects an unknown run with NOT_FOUND, and a run id that is not a string with INVALID_PARAMS', async () => {
    const { rt } = tour();
    await expect(rt.traceTree('run_nope')).rejects.toBeInstanceOf(NotFoundError);
    await expect(rt.traceTree('run_nope')).rejects.toMatchObject({
      details: { kind: 'run', id: 'run_nope' },
    });
    await expect(rt.traceTree(undefined as never)).rejects.toBeInstanceOf(InvalidParamsError);
  });
});
