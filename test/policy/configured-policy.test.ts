import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../src/context/clock.js';
import { createContext } from '../../src/context/create-context.js';
import { adaptivePolicy } from '../../src/policy/adaptive-policy.js';
import { configuredPolicy, yamlPolicy } from '../../src/policy/configured-policy.js';
import { loadPolicyYaml, PolicyConfigError } from '../../src/policy/policy-config.js';
import {
  noopPolicy,
  type PolicyAction,
  type PolicyEngine,
} from '../../src/policy/policy-engine.js';

const clock = (): SimulatedClock => new SimulatedClock(1_000_000);
const ctx = (c = clock(), userId = 'u1') => createContext({ clock: c, userId });
const act = (
  kind: PolicyAction['kind'],
  target: string,
  subject = 'u1',
  metadata?: object,
): PolicyAction => ({
  kind,
  target,
  subject,
  ...(metadata ? { metadata: metadata as Record<string, unknown> } : {}),
});

describe('yamlPolicy: the file (REFERENCE.md keys)', () => {
  it('reads every section', () => {
    const policy = yamlPolicy(`
rate_limits:
  per_user: { requests_per_minute: 2, on_exceed: queue }
budgets:
  per_agent:
    default: { tokens_per_hour: 100 }
    planner: { cost_per_day: 1.5, on_exceed: pause }
approvals:
  agents: { deployer: [alice, bob] }
  tools: { delete_file: [ops] }
execution: { max_depth: 3, max_tool_calls_per_invocation: 5, timeout_seconds: 30 }
tools: { allow: null, deny: [rm] }
`);
    expect(policy.config).toMatchObject({
      rate_limits: { per_user: { requests_per_minute: 2, on_exceed: 'queue' } },
      budgets: { per_agent: { default: { on_exceed: 'block' }, planner: { on_exceed: 'pause' } } },
      approvals: { agents: { deployer: ['alice', 'bob'] } },
      execution: { max_depth: 3 },
      tools: { allow: null, deny: ['rm'] },
    });
  });

  it.each([
    [
      'an unknown key',
      'execution:\n  max_depht: 4\n',
      2,
      'execution.max_depht',
      /unknown key "max_depht"/,
    ],
    ['an unknown section', 'rate_limits: {}\nbudget: {}\n', 2, 'budget', /unknown key "budget"/],
    [
      'a bad value',
      'rate_limits:\n  per_user:\n    requests_per_minute: 10\n    on_exceed: explode\n',
      4,
      'rate_limits.per_user.on_exceed',
      /Invalid option/,
    ],
    ['a negative limit', 'execution:\n  max_depth: -1\n', 2, 'execution.max_depth', /Too small/],
  ])('refuses %s, naming the line and the key', (_what, text, line, key, message) => {
    let err: unknown;
    try {
      yamlPolicy(text);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(PolicyConfigError);
    const e = err as PolicyConfigError;
    expect(e.code).toBe('INVALID_PARAMS');
    expect(e.problems[0]).toMatchObject({ line, key });
    expect(e.problems[0]?.message).toMatch(message);
    expect(e.message).toContain(`line ${line}: ${key}`);
  });

  it('refuses YAML that does not parse, with its line', () => {
    expect(() => yamlPolicy('tools:\n  deny: [a, b\nexecution: {}\n')).toThrow(/line \d+/);
    expect(() => yamlPolicy('tools:\n  deny: [a, b\n')).toThrow(PolicyConfigError);
  });

  it('takes the same keys as an object, checked alike', () => {
    expect(() => configuredPolicy({ execution: { max_depth: 0 } })).toThrow(PolicyConfigError);
    expect(() => configuredPolicy({ nope: 1 } as never)).toThrow(/unknown key "nope"/);
  });
});

describe('configuredPolicy decisions', () => {
  it('rate limits per user in a sliding minute: reject, with the retry-after', async () => {
    const c = clock();
    const policy = configuredPolicy(
      { rate_limits: { per_user: { requests_per_minute: 2 } } },
      { clock: c },
    );
    const x = ctx(c);
    expect((await policy.evaluate(act('route', 'a'), x)).allowed).toBe(true);
    c.advance(10_000);
    expect((await policy.evaluate(act('route', 'a'), x)).allowed).toBe(true);
    const third = await policy.evaluate(act('route', 'a'), x);
    expect(third).toMatchObject({ allowed: false, denial: 'rate_limit', retryAfterMs: 50_000 });
    // Another user has a window of their own.
    expect((await policy.evaluate(act('route', 'a', 'u2'), x)).allowed).toBe(true);
    c.advance(50_000);
    expect((await policy.evaluate(act('route', 'a'), x)).allowed).toBe(true);
  });

  it("an execution section without keys gets Nerva's limits: depth 10, 50 tool calls, 30 s", () => {
    expect(loadPolicyYaml('execution: {}').execution).toEqual({
      max_depth: 10,
      max_tool_calls_per_invocation: 50,
      timeout_seconds: 30,
    });
    expect(loadPolicyYaml('execution: { max_depth: 3 }').execution?.max_depth).toBe(3);
    expect(loadPolicyYaml('tools: { deny: [rm] }').execution).toBeUndefined();
  });

  it('on_exceed queue waits for room; warn lets it through with a reason', async () => {
    const c = clock();
    const queue = configuredPolicy(
      { rate_limits: { per_user: { requests_per_minute: 1, on_exceed: 'queue' } } },
      { clock: c },
    );
    await queue.evaluate(act('route', 'a'), ctx(c));
    expect(await queue.evaluate(act('route', 'a'), ctx(c))).toMatchObject({
      allowed: true,
      delayMs: 60_000,
    });
    // Each queued request takes its own later slot: they do not all go when the first can.
    const delays = await Promise.all(
      [1, 2, 3].map(() => queue.evaluate(act('route', 'a'), ctx(c))),
    );
    expect(delays.map((d) => d.delayMs)).toEqual([120_000, 180_000, 240_000]);
    const warn = configuredPolicy(
      { rate_limits: { per_user: { requests_per_minute: 1, on_exceed: 'warn' } } },
      { clock: c },
    );
    await warn.evaluate(act('route', 'a'), ctx(c));
    const second = await warn.evaluate(act('route', 'a'), ctx(c));
    expect(second.allowed).toBe(true);
    expect(second.reason).toMatch(/past 1 requests per minute/);
  });

  it('per-agent token budgets per hour: block, pause, warn and degrade', async () => {
    const c = clock();
    const x = ctx(c);
    const used = act('engine_call', 'scripted', 'u1', {
      agent: 'planner',
      tokens: 100,
      cost_usd: 0,
    });
    const call = act('engine_call', 'scripted', 'u1', { agent: 'planner' });
    const make = (on_exceed: 'block' | 'pause' | 'warn' | 'degrade') =>
      configuredPolicy(
        {
          budgets: {
            per_agent: { planner: { tokens_per_hour: 100, on_exceed, degrade_max_tokens: 8 } },
          },
        },
        { clock: c },
      );
    let paused: PolicyEngine | null = null;
    for (const mode of ['block', 'pause', 'warn', 'degrade'] as const) {
      const policy = make(mode);
      expect((await policy.evaluate(call, x)).allowed).toBe(true);
      await policy.record(used, { allowed: true } as never, x);
      const over = await policy.evaluate(call, x);
      if (mode === 'block')
        expect(over).toMatchObject({ allowed: false, denial: 'budget', retryAfterMs: 3_600_000 });
      if (mode === 'pause') {
        expect(over).toMatchObject({ allowed: false, rule: 'budgets.per_agent.tokens_per_hour' });
        // Paused: the agent's invocations are refused too, until the window frees.
        expect((await policy.evaluate(act('invoke_agent', 'planner'), x)).allowed).toBe(false);
        paused = policy;
      }
      if (mode === 'warn')
        expect(over).toMatchObject({
          allowed: true,
          reason: expect.stringMatching(/tokens_per_hour/) as string,
        });
      if (mode === 'degrade') expect(over).toMatchObject({ allowed: true, maxTokens: 8 });
      // Other agents are not charged for the planner's use.
      expect(
        (await policy.evaluate(act('engine_call', 'scripted', 'u1', { agent: 'other' }), x))
          .allowed,
      ).toBe(true);
    }
    // The same paused engine: still paused a moment before the hour is over, free after it.
    const same = paused;
    if (!same) throw new Error('the pause mode ran');
    c.advance(3_599_999);
    expect((await same.evaluate(call, x)).allowed).toBe(false);
    expect((await same.evaluate(act('invoke_agent', 'planner'), x)).allowed).toBe(false);
    c.advance(2);
    expect((await same.evaluate(call, x)).allowed).toBe(true);
    expect((await same.evaluate(act('invoke_agent', 'planner'), x)).allowed).toBe(true);
  });

  it('cost per day, for agents without their own budget through `default`', async () => {
    const c = clock();
    const x = ctx(c);
    const policy = configuredPolicy(
      { budgets: { per_agent: { default: { cost_per_day: 1 } } } },
      { clock: c },
    );
    await policy.record(
      act('engine_call', 'e', 'u1', { agent: 'a', tokens: 1, cost_usd: 0.6 }),
      { allowed: true } as never,
      x,
    );
    const first = await policy.evaluate(act('engine_call', 'e', 'u1', { agent: 'a' }), x);
    expect(first.allowed).toBe(true);
    // What is left of the day's cost budget, the tighter of it and the context's ledger.
    expect(first.budgetRemaining?.costUsd).toBeCloseTo(0.4, 10);
    const tight = createContext({ clock: c, userId: 'u1', budgets: { maxCostUsd: 0.25 } });
    expect(
      (await policy.evaluate(act('engine_call', 'e', 'u1', { agent: 'a' }), tight)).budgetRemaining,
    ).toEqual({ tokensIn: null, tokensOut: null, costUsd: 0.25 });
    await policy.record(
      act('engine_call', 'e', 'u1', { agent: 'a', tokens: 1, cost_usd: 0.5 }),
      { allowed: true } as never,
      x,
    );
    expect(await policy.evaluate(act('engine_call', 'e', 'u1', { agent: 'a' }), x)).toMatchObject({
      allowed: false,
      rule: 'budgets.per_agent.cost_per_day',
    });
  });

  it('execution limits, the tool lists and approvals', async () => {
    const c = clock();
    const policy = configuredPolicy(
      {
        execution: { max_depth: 2, max_tool_calls_per_invocation: 2, timeout_seconds: 1.5 },
        tools: { allow: ['add', 'rm'], deny: ['rm'] },
        approvals: { agents: { deployer: ['alice'] }, tools: { add: ['ops', 'bob'] } },
      },
      { clock: c },
    );
    const root = ctx(c);
    const deep = root.child('a').child('b');
    expect(await policy.evaluate(act('invoke_agent', 'x'), root)).toMatchObject({
      allowed: true,
      timeoutMs: 1500,
    });
    expect(await policy.evaluate(act('delegate', 'x'), deep)).toMatchObject({
      allowed: false,
      rule: 'execution.max_depth',
    });
    expect(await policy.evaluate(act('invoke_agent', 'deployer'), root)).toMatchObject({
      allowed: true,
      requireApproval: true,
      approvers: ['alice'],
    });
    expect(await policy.evaluate(act('call_tool', 'rm'), root)).toMatchObject({
      allowed: false,
      rule: 'tools.deny',
    });
    expect(await policy.evaluate(act('call_tool', 'ls'), root)).toMatchObject({
      allowed: false,
      rule: 'tools.allow',
    });
    const caller = root.child('agent');
    expect(await policy.evaluate(act('call_tool', 'add'), caller)).toMatchObject({
      allowed: true,
      approvers: ['ops', 'bob'],
    });
    expect((await policy.evaluate(act('call_tool', 'add'), caller)).allowed).toBe(true);
    expect(await policy.evaluate(act('call_tool', 'add'), caller)).toMatchObject({
      allowed: false,
      rule: 'execution.max_tool_calls_per_invocation',
    });
    // Another invocation counts its own calls.
    expect((await policy.evaluate(act('call_tool', 'add'), root.child('agent'))).allowed).toBe(
      true,
    );
  });
});

describe('adaptivePolicy', () => {
  it('throttles past the first threshold and pauses past the second, then lets go as the window moves', async () => {
    const c = clock();
    const x = ctx(c);
    const policy = adaptivePolicy({
      throttleAtUsd: 1,
      pauseAtUsd: 2,
      windowMs: 60_000,
      throttleDelayMs: 250,
      clock: c,
      inner: noopPolicy,
    });
    const call = act('engine_call', 'e');
    const spend = (cost: number) =>
      policy.record(
        act('engine_call', 'e', 'u1', { cost_usd: cost }),
        { allowed: true } as never,
        x,
      );
    expect(await policy.evaluate(call, x)).toMatchObject({ allowed: true });
    await spend(1.2);
    expect(await policy.evaluate(call, x)).toMatchObject({
      allowed: true,
      delayMs: 250,
      rule: 'adaptive.throttle',
    });
    c.advance(30_000);
    await spend(1);
    expect(await policy.evaluate(act('call_tool', 't'), x)).toMatchObject({
      allowed: false,
      rule: 'adaptive.pause',
      retryAfterMs: 30_000,
    });
    // Routing is not what it gates: a request may still arrive and be told.
    expect((await policy.evaluate(act('route', 'a'), x)).allowed).toBe(true);
    c.advance(30_001);
    expect(await policy.evaluate(call, x)).toMatchObject({ allowed: true, delayMs: 250 });
    c.advance(30_000);
    expect((await policy.evaluate(call, x)).delayMs).toBeUndefined();
    expect(() => adaptivePolicy({ throttleAtUsd: 3, pauseAtUsd: 2 })).toThrow(RangeError);
  });

  it('lets its inner engine decide below the thresholds', async () => {
    const inner = configuredPolicy({ tools: { deny: ['rm'] } });
    const policy = adaptivePolicy({ throttleAtUsd: 1, pauseAtUsd: 2, inner });
    expect((await policy.evaluate(act('call_tool', 'rm'), ctx())).allowed).toBe(false);
  });
});

describe('PolicyDecision.budgetRemaining', () => {
  it('is what the context may still spend, from its ledger, for every policy', async () => {
    const c = clock();
    const parent = createContext({ clock: c, budgets: { maxTokensOut: 50, maxCostUsd: 2 } });
    const child = parent.child('planner', { budgets: { maxTokensOut: 20 } });
    child.ledger.reserve({ tokensIn: 0, tokensOut: 5, costUsd: 0.5 }).commit({
      tokensIn: 0,
      tokensOut: 5,
      costUsd: 0.5,
    });
    const expected = { tokensIn: null, tokensOut: 15, costUsd: 1.5 };
    const policies = [
      noopPolicy,
      configuredPolicy({ tools: { deny: ['rm'] } }, { clock: c }),
      adaptivePolicy({ throttleAtUsd: 10, pauseAtUsd: 20, clock: c }),
    ];
    for (const policy of policies) {
      for (const kind of ['route', 'call_tool', 'engine_call'] as const) {
        const decision = await policy.evaluate(act(kind, 'x'), child);
        expect(decision.budgetRemaining, `${policy.name} ${kind}`).toEqual(expected);
      }
    }
    // A refusal says what is left too.
    const refused = await policies[1]?.evaluate(act('call_tool', 'rm'), child);
    expect(refused).toMatchObject({ allowed: false, budgetRemaining: expected });
  });
});
