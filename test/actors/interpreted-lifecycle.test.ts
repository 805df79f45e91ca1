import { randomUUID } from 'node:crypto';
import type { InspectionEvent } from 'xstate';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import type { XStateInspect } from '../../src/actors/interpreted-lifecycle.js';
import { SimulatedClock } from '../../src/context/clock.js';
import { createSequentialIdSource } from '../../src/context/id-source.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { quietRuntime } from '../support/runtime.js';

const add = defineTool({
  name: 'add',
  description: 'Adds two numbers',
  input: z.strictObject({ a: z.number(), b: z.number() }),
  handler: ({ a, b }) => ({ sum: a + b }),
});
const writer = defineAgent({
  name: 'writer',
  async *handler(input, ctx, runtime) {
    yield { type: 'narration', text: 'writing' };
    const sum = await runtime.callTool<{ sum: number }>('add', { a: 2, b: 40 }, ctx);
    const answer = await runtime.chat(
      { messages: [{ role: 'user', content: `${input.message} ${String(sum.output?.sum)}` }] },
      ctx,
    );
    return answer.text;
  },
});
const planner = defineAgent({
  name: 'planner',
  handler: async (input, ctx, runtime) =>
    (await runtime.delegate('writer', input, ctx, { budgets: { maxTokensOut: 100 } })).output,
});

/** A runtime on a simulated clock and sequential ids, so two of them do the same things. */
function runtime(inspect?: XStateInspect): Runtime {
  return quietRuntime({
    clock: new SimulatedClock(1_000),
    ids: createSequentialIdSource(),
    agents: [planner, writer],
    tools: [add],
    engines: [createScriptedEngine({ tokenDelayMs: 0 })],
    ...(inspect ? { inspect } : {}),
  });
}

/** Runs a seeded run of two submitted steps; every step's log as JSON text, in creation order. */
async function logsOf(rt: Runtime): Promise<string[]> {
  const { flow } = await rt.createFlow({ name: 'inspected', ast: { v: 1 } });
  const run = await rt.createRun(flow.flow_id, { seed: 7 });
  for (const [token, message] of [
    ['one', 'plan a trip'],
    ['two', 'plan another'],
  ] as const) {
    const step = await rt.submitStep(run.run_id, {
      type: 'agent',
      client_token: token,
      input: { agent: 'planner', message },
    });
    await step.done;
  }
  const steps = await rt.listSteps(run.run_id);
  const logs = await Promise.all(steps.map((s) => rt.readStepEvents(s.step_id)));
  return logs.map((log) => JSON.stringify(log));
}

describe('createRuntime({ inspect }): every step on a real XState actor', () => {
  it('logs the same events byte for byte as the compiled lifecycle, and the callback sees every step', async () => {
    const compiled = runtime();
    const expected = await logsOf(compiled);
    await compiled.close();

    const seen: InspectionEvent[] = [];
    const inspected = runtime((e) => seen.push(e));
    const logs = await logsOf(inspected);
    expect(logs).toEqual(expected);
    // 2 submitted agent steps, each with a delegation, a tool call: 6 step actors.
    expect(logs).toHaveLength(6);
    expect(logs.join('')).toContain('"type":"token"');

    const steps = await inspected.listSteps(
      (await inspected.store.listRuns()).at(-1)?.run_id ?? randomUUID(),
    );
    const idOf = (e: InspectionEvent): string => (e.actorRef as unknown as { id: string }).id;
    const actors = new Set(seen.filter((e) => e.type === '@xstate.actor').map(idOf));
    for (const step of steps) expect(actors).toContain(step.step_id);
    const messages = seen
      .filter((e) => e.type === '@xstate.event')
      .map((e) => (e as { event: { type: string } }).event.type);
    for (const type of ['START', 'TOKENS', 'EMIT', 'END']) expect(messages).toContain(type);
    // Each step's actor reached its final state.
    const done = seen.filter(
      (e) => e.type === '@xstate.snapshot' && (e.snapshot as { status: string }).status === 'done',
    );
    expect(new Set(done.map(idOf))).toEqual(new Set(steps.map((s) => s.step_id)));
    await inspected.close();
  });

  it('refuses an inspect that is not a function', () => {
    expect(() => quietRuntime({ inspect: 'yes' as never })).toThrow(TypeError);
  });
});
