import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../src/actors/define-agent.js';
import { SimulatedClock } from '../../src/context/clock.js';
import type { ExecContext } from '../../src/context/exec-context.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { BudgetExceededError } from '../../src/errors/budget-exceeded-error.js';
import { PolicyDeniedError } from '../../src/errors/policy-denied-error.js';
import { RateLimitedError } from '../../src/errors/rate-limited-error.js';
import { configuredPolicy } from '../../src/policy/configured-policy.js';
import type { PolicyConfigInput } from '../../src/policy/policy-config.js';
import type { PolicyAction, PolicyEngine } from '../../src/policy/policy-engine.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { quietRuntime, settle } from '../support/runtime.js';

/** A policy that lets `inner` decide and writes down every action it was asked about. */
function watching(inner: PolicyEngine): {
  policy: PolicyEngine;
  asked: PolicyAction[];
  recorded: PolicyAction[];
} {
  const asked: PolicyAction[] = [];
  const recorded: PolicyAction[] = [];
  return {
    asked,
    recorded,
    policy: {
      name: 'watching',
      evaluate: (action, ctx) => {
        asked.push(action);
        return inner.evaluate(action, ctx);
      },
      record: (action, decision, ctx) => {
        recorded.push(action);
        return inner.record(action, decision, ctx);
      },
    },
  };
}

function setup(config: PolicyConfigInput = {}, clock?: SimulatedClock) {
  let adds = 0;
  let handlerRuns = 0;
  const add = defineTool({
    name: 'add',
    description: 'Adds',
    input: z.strictObject({ a: z.number(), b: z.number() }),
    handler: ({ a, b }) => {
      adds++;
      return { sum: a + b };
    },
  });
  const rm = defineTool({
    name: 'rm',
    description: 'Removes',
    input: z.strictObject({}),
    handler: () => {
      adds++;
      return 'removed';
    },
  });
  const calendar = defineAgent({
    name: 'calendar',
    handler: async (input, ctx, runtime) => {
      handlerRuns++;
      const r = await runtime.chat(
        { messages: [{ role: 'user', content: input.message }], params: { max_tokens: 20 } },
        ctx,
      );
      return r.text;
    },
  });
  const planner = defineAgent({
    name: 'planner',
    handler: async (input, ctx, runtime) => {
      handlerRuns++;
      const cal = await runtime.delegate<string>('calendar', input, ctx);
      const sum = await runtime.callTool<{ sum: number }>('add', { a: 1, b: 2 }, ctx);
      return {
        cal: cal.output,
        sum: sum.output?.sum ?? null,
        tool: sum.status,
        toolError: sum.error?.code ?? null,
      };
    },
  });
  const watched = watching(configuredPolicy(config, clock ? { clock } : {}));
  const rt = quietRuntime({
    agents: [planner, calendar],
    tools: [add, rm],
    engines: [createScriptedEngine({ tokenDelayMs: 0 })],
    policy: watched.policy,
    ...(clock ? { clock } : {}),
  });
  return { rt, ...watched, adds: () => adds, handlerRuns: () => handlerRuns };
}

const kinds = (actions: PolicyAction[]): string[] => actions.map((a) => `${a.kind} ${a.target}`);

describe('policy at the three checkpoints of seed 000', () => {
  it('asks before routing, before each invocation and during execution, in that order', async () => {
    const { rt, asked, recorded } = setup();
    const r = await rt.invoke('planner', 'plan', rt.createContext({ userId: 'ann' }));
    expect(r.status).toBe('success');
    expect(kinds(asked)).toEqual([
      'route planner', // 1: before routing
      'invoke_agent planner', // 2: before invocation
      'delegate calendar', // 3: during the planner's execution
      'invoke_agent calendar', // 2, for the delegated agent
      'engine_call scripted', // 3: the calendar's engine call
      'call_tool add', // 3: the planner's tool call
    ]);
    expect(asked.every((a) => a.subject === 'ann')).toBe(true);
    // The engine call's use is recorded with it, charged to the calling agent.
    expect(recorded).toHaveLength(1);
    expect(recorded[0]?.metadata).toMatchObject({
      agent: 'calendar',
      tokens: expect.any(Number) as number,
    });
    await rt.close();
  });

  it('checkpoint 1: a user past the rate limit is refused RATE_LIMITED before anything runs', async () => {
    const clock = new SimulatedClock(1_000);
    const { rt, handlerRuns } = setup(
      { rate_limits: { per_user: { requests_per_minute: 1 } } },
      clock,
    );
    const ann = () => rt.createContext({ userId: 'ann' });
    expect((await rt.invoke('planner', 'x', ann())).status).toBe('success');
    const runs = handlerRuns();
    const err = await rt.invoke('planner', 'x', ann()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitedError);
    expect(err).toMatchObject({
      code: 'RATE_LIMITED',
      retryAfterMs: 60_000,
      details: { retry_after_ms: 60_000 },
    });
    expect(handlerRuns()).toBe(runs);
    // A chain is one request, routed as one: refused too.
    await expect(rt.invokeChain(['calendar', 'planner'], 'x', ann())).rejects.toBeInstanceOf(
      RateLimitedError,
    );
    expect(handlerRuns()).toBe(runs);
    // Submissions to a run are routed too.
    const { flow } = await rt.createFlow({ name: 'f' });
    const run = await rt.createRun(flow.flow_id);
    clock.advance(60_000);
    await (
      await rt.submitStep(run.run_id, { type: 'agent', input: { agent: 'calendar', message: 'x' } })
    ).done;
    await expect(
      rt.submitStep(run.run_id, { type: 'agent', input: { agent: 'calendar', message: 'x' } }),
    ).rejects.toBeInstanceOf(RateLimitedError);
    await rt.close();
  });

  it('checkpoint 1 with on_exceed queue: the request waits for room instead of failing', async () => {
    const clock = new SimulatedClock(1_000);
    const { rt } = setup(
      { rate_limits: { per_user: { requests_per_minute: 1, on_exceed: 'queue' } } },
      clock,
    );
    await rt.invoke('calendar', 'x');
    let done = false;
    const second = rt.invoke('calendar', 'x').then((r) => {
      done = true;
      return r;
    });
    await settle();
    expect(done).toBe(false);
    clock.advance(60_000);
    expect((await second).status).toBe('success');
    await rt.close();
  });

  it('checkpoint 2: a refused invocation is a step that ends POLICY_DENIED with an escalation; its handler never runs', async () => {
    let runs = 0;
    const guarded = defineAgent({
      name: 'guarded',
      handler: () => {
        runs++;
        return 'ran';
      },
    });
    const refuseGuarded: PolicyEngine = {
      name: 'refuse-guarded',
      evaluate: (action) =>
        Promise.resolve(
          action.kind === 'invoke_agent' && action.target === 'guarded'
            ? {
                allowed: false,
                reason: 'not today',
                requireApproval: false,
                approvers: [],
                budgetRemaining: null,
                rule: 'test',
              }
            : {
                allowed: true,
                reason: null,
                requireApproval: false,
                approvers: [],
                budgetRemaining: null,
              },
        ),
      record: () => Promise.resolve(),
    };
    const rt = quietRuntime({ agents: [guarded], policy: refuseGuarded });
    const events: string[] = [];
    const stream = rt.stream('guarded', 'x');
    for await (const { event } of stream) events.push(event.type);
    const r = await stream.result;
    expect(runs).toBe(0);
    expect(r.error).toMatchObject({
      code: 'POLICY_DENIED',
      rule: 'test',
      details: { reason: 'not today' },
    });
    expect(events).toEqual(['started', 'escalation', 'error']);
    const step = await rt.store.getStep(r.stepId);
    expect(step).toMatchObject({ status: 'failed', error: { code: 'POLICY_DENIED' } });
    await rt.close();
  });

  it("checkpoint 3: a delegation past the policy depth is refused during the caller's execution", async () => {
    const { rt, handlerRuns } = setup({ execution: { max_depth: 1 } });
    const events: string[] = [];
    const stream = rt.stream('planner', 'x');
    for await (const { path, event } of stream) events.push(`${path.join('/')} ${event.type}`);
    const r = await stream.result;
    // The planner ran (depth 1); its delegation (depth 2) was refused during its execution.
    expect(handlerRuns()).toBe(1);
    expect(r.status).toBe('error');
    expect(r.error).toBeInstanceOf(PolicyDeniedError);
    expect(r.error).toMatchObject({ code: 'POLICY_DENIED', rule: 'execution.max_depth' });
    expect(events).toContain('planner escalation');
    await rt.close();
  });

  it('checkpoint 3: a denied tool call ends its step POLICY_DENIED with an escalation, and the tool never runs', async () => {
    const { rt, adds } = setup({ tools: { deny: ['add'] } });
    const events: string[] = [];
    const stream = rt.stream('planner', 'x');
    for await (const { path, event } of stream) {
      if (event.type === 'escalation' || event.type === 'error')
        events.push(`${path.join('/')} ${event.type}`);
    }
    const r = await stream.result;
    expect(r.output).toMatchObject({ tool: 'error', toolError: 'POLICY_DENIED' });
    expect(adds()).toBe(0);
    expect(events).toEqual(['planner/add escalation', 'planner/add error']);
    await rt.close();
  });

  it('checkpoint 3: an agent past its token budget is refused BUDGET_EXCEEDED before the engine is called', async () => {
    const { rt } = setup({ budgets: { per_agent: { calendar: { tokens_per_hour: 10 } } } });
    expect((await rt.invoke('calendar', 'first')).status).toBe('success');
    const r = await rt.invoke('calendar', 'second');
    expect(r.status).toBe('error');
    expect(r.error).toBeInstanceOf(BudgetExceededError);
    expect(r.error).toMatchObject({
      limit: 'tokens_per_hour',
      ledger: 'agent calendar',
      details: { rule: 'budgets.per_agent.tokens_per_hour' },
    });
    // The error says why in words, and the step tells its supervisors (POLICY-3002).
    expect(r.error?.message).toMatch(/^budget exceeded: .*calendar/);
    const events = await rt.readStepEvents(r.stepId);
    expect(events.find((e) => e.type === 'escalation')).toMatchObject({
      target: 'engine_call:scripted',
    });
    expect(r.usage.completionTokens).toBe(0);
    await rt.close();
  });

  it('checkpoint 3 with on_exceed degrade: the call goes on, shortened', async () => {
    const { rt } = setup({
      budgets: {
        per_agent: {
          calendar: { tokens_per_hour: 10, on_exceed: 'degrade', degrade_max_tokens: 3 },
        },
      },
    });
    expect((await rt.invoke('calendar', 'first')).usage.completionTokens).toBe(20);
    const second = await rt.invoke('calendar', 'second');
    expect(second.status).toBe('success');
    expect(second.usage.completionTokens).toBe(3);
    await rt.close();
  });

  it('execution.timeout_seconds ends an invocation that runs past it with TIMEOUT', async () => {
    const clock = new SimulatedClock(0);
    const slow = defineAgent({
      name: 'slow',
      handler: (_i, ctx: ExecContext) =>
        new Promise((_r, reject) => {
          ctx.signal.addEventListener('abort', () => {
            reject(ctx.signal.reason as Error);
          });
        }),
    });
    const rt = quietRuntime({
      clock,
      agents: [slow],
      policy: configuredPolicy({ execution: { timeout_seconds: 2 } }, { clock }),
    });
    const pending = rt.invoke('slow', 'x');
    await settle();
    clock.advance(2_000);
    expect((await pending).error?.code).toBe('TIMEOUT');
    await rt.close();
  });
});

describe("a run's own policy narrows the runtime's, never widens it (API.md)", () => {
  async function runWith(rtPolicy: PolicyConfigInput, runPolicy: object) {
    const env = setup(rtPolicy);
    const { flow } = await env.rt.createFlow({ name: 'f' });
    const run = await env.rt.createRun(flow.flow_id, { policy: runPolicy });
    const submit = async (body: object) => {
      const s = await env.rt.submitStep(run.run_id, body);
      await s.done;
      return env.rt.store.getStep(s.step_id);
    };
    return { ...env, run, submit };
  }

  it('tools.deny and tools.allow of the run refuse tool calls POLICY_DENIED; the tool does not run', async () => {
    const { rt, submit, adds } = await runWith(
      {},
      { tools: { deny: ['rm'], allow: ['add', 'rm'] } },
    );
    expect(await submit({ type: 'tool_call', input: { tool: 'rm', args: {} } })).toMatchObject({
      status: 'failed',
      error: { code: 'POLICY_DENIED', details: { rule: 'run.policy.tools.deny' } },
    });
    expect(
      (await submit({ type: 'tool_call', input: { tool: 'add', args: { a: 1, b: 1 } } }))?.status,
    ).toBe('succeeded');
    expect(adds()).toBe(1);
    await rt.close();
  });

  it('a tool the runtime denies stays denied whatever the run allows', async () => {
    const { rt, submit, adds } = await runWith(
      { tools: { deny: ['rm'] } },
      { tools: { allow: ['rm'] } },
    );
    expect(await submit({ type: 'tool_call', input: { tool: 'rm', args: {} } })).toMatchObject({
      status: 'failed',
      error: { code: 'POLICY_DENIED', details: { rule: 'tools.deny' } },
    });
    expect(adds()).toBe(0);
    await rt.close();
  });

  it('max_depth of the run refuses a delegation past it', async () => {
    const { rt, submit } = await runWith({}, { max_depth: 1 });
    const step = await submit({ type: 'agent', input: { agent: 'planner', message: 'x' } });
    expect(step).toMatchObject({
      status: 'failed',
      error: { code: 'POLICY_DENIED', details: { rule: 'run.policy.max_depth' } },
    });
    await rt.close();
  });

  it('steps_per_minute: a submission past it is refused RATE_LIMITED with a retry-after', async () => {
    const { rt, run } = await runWith({}, { steps_per_minute: 2 });
    const body = { type: 'agent', input: { agent: 'calendar', message: 'x' } };
    await (
      await rt.submitStep(run.run_id, body)
    ).done;
    await (
      await rt.submitStep(run.run_id, body)
    ).done;
    const err = await rt.submitStep(run.run_id, body).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitedError);
    expect((err as RateLimitedError).retryAfterMs).toBeGreaterThan(0);
    await rt.close();
  });

  it('refuses a run policy with unknown keys or bad values at creation', async () => {
    const { rt } = setup();
    const { flow } = await rt.createFlow({ name: 'f' });
    await expect(
      rt.createRun(flow.flow_id, { policy: { tools: { allow: 'add' } } }),
    ).rejects.toThrow(/policy/);
    await expect(rt.createRun(flow.flow_id, { policy: { widen: true } })).rejects.toThrow(/widen/);
    await rt.close();
  });
});
