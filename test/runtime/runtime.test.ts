import { describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import { STATS_BATCH_MS } from '../../src/actors/agent-stats-batch.js';
import { needsCredentials, needsData, wrongHandler } from '../../src/actors/agent-result.js';
import { SimulatedClock } from '../../src/context/clock.js';
import { CancelledError } from '../../src/errors/cancelled-error.js';
import { DepthLimitError } from '../../src/errors/depth-limit-error.js';
import { InternalError } from '../../src/errors/internal-error.js';
import { InvalidParamsError } from '../../src/errors/invalid-params-error.js';
import { NotFoundError } from '../../src/errors/not-found-error.js';
import { PermissionDeniedError } from '../../src/errors/permission-denied-error.js';
import { StreamClosedError } from '../../src/errors/stream-closed-error.js';
import { TimeoutError } from '../../src/errors/timeout-error.js';
import { WideningError } from '../../src/errors/widening-error.js';
import type { ExecContext } from '../../src/context/exec-context.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { createLogger } from '../../src/observability/logger.js';
import { quietRuntime, settle, until } from '../support/runtime.js';
import { watchUnexpectedErrors } from '../support/unexpected-errors.js';

const echo = defineAgent({ name: 'echo', handler: (input) => `echo: ${input.message}` });
const never = new Promise<never>(() => undefined);

describe('runtime.invoke', () => {
  it('runs a function handler and records a completed run with one step', async () => {
    const runtime = quietRuntime({ agents: [echo] });
    const result = await runtime.invoke('echo', 'hi');
    expect(result).toMatchObject({
      status: 'success',
      output: 'echo: hi',
      handler: 'echo',
      error: null,
    });
    const run = await runtime.getRun(result.runId);
    expect(run).toMatchObject({ status: 'completed', entry: 'echo' });
    const steps = await runtime.store.listSteps(result.runId);
    expect(steps).toHaveLength(1);
    expect(steps[0]).toMatchObject({
      type: 'agent',
      name: 'echo',
      status: 'succeeded',
      output: 'echo: hi',
    });
    const log = await runtime.store.readEvents(result.stepId);
    expect(log.map((e) => e.type)).toEqual(['started', 'end']);
    expect(log[1]).toMatchObject({ type: 'end', output: 'echo: hi' });
  });

  it('streams a generator handler as tokens and joins them as the output', async () => {
    const talker = defineAgent({
      name: 'talker',
      async *handler(input) {
        for (const w of input.message.split(' ')) yield `${w}.`;
      },
    });
    const runtime = quietRuntime({ agents: [talker] });
    const result = await runtime.invoke('talker', 'a b c');
    expect(result.output).toBe('a.b.c.');
    const tokens = (await runtime.store.readEvents(result.stepId)).flatMap((e) =>
      e.type === 'token' ? [e.t] : [],
    );
    expect(tokens).toEqual(['a.', 'b.', 'c.']);
  });

  it('a handler may push tokens through ctx.stream', async () => {
    const pusher = defineAgent({
      name: 'pusher',
      handler: (_input, ctx) => {
        ctx.stream.push('one');
        ctx.stream.emit({ type: 'narration', text: 'halfway' });
        ctx.stream.push('two');
        return 'ok';
      },
    });
    const runtime = quietRuntime({ agents: [pusher] });
    const result = await runtime.invoke('pusher', 'x');
    const types = (await runtime.store.readEvents(result.stepId)).map((e) => e.type);
    expect(types).toEqual(['started', 'token', 'narration', 'token', 'end']);
  });

  it('rejects an unknown agent with NotFoundError and runs nothing', async () => {
    const runtime = quietRuntime();
    await expect(runtime.invoke('nobody', 'x')).rejects.toBeInstanceOf(NotFoundError);
    expect(runtime.system.list('step')).toHaveLength(0);
  });

  it('reports the non-success statuses a handler returns', async () => {
    const runtime = quietRuntime({
      agents: [
        defineAgent({ name: 'nd', handler: () => needsData('which city?', { field: 'city' }) }),
        defineAgent({ name: 'nc', handler: () => needsCredentials('log in first') }),
        defineAgent({ name: 'wh', handler: () => wrongHandler() }),
      ],
    });
    await expect(runtime.invoke('nd', 'x')).resolves.toMatchObject({
      status: 'needs_data',
      output: 'which city?',
      data: { field: 'city' },
    });
    await expect(runtime.invoke('nc', 'x')).resolves.toMatchObject({ status: 'needs_credentials' });
    await expect(runtime.invoke('wh', 'x')).resolves.toMatchObject({ status: 'wrong_handler' });
  });
});

describe('failures stay contained', () => {
  const unexpected = watchUnexpectedErrors();

  it('a throwing handler ends its step with error; the parent gets a failure result; the runtime keeps running', async () => {
    const broken = defineAgent({
      name: 'broken',
      handler: () => {
        throw new Error('kaput');
      },
    });
    const parent = defineAgent({
      name: 'parent',
      handler: async (input, ctx, runtime) => {
        const r = await runtime.delegate('broken', input, ctx);
        return { childStatus: r.status, code: r.error?.code };
      },
    });
    const runtime = quietRuntime({ agents: [broken, parent, echo] });
    const result = await runtime.invoke('parent', 'go');
    expect(result.output).toEqual({ childStatus: 'error', code: 'INTERNAL' });
    const direct = await runtime.invoke('broken', 'go');
    expect(direct.status).toBe('error');
    expect(direct.error).toBeInstanceOf(InternalError);
    expect(direct.error?.message).toBe('kaput');
    const log = await runtime.store.readEvents(direct.stepId);
    expect(log.at(-1)).toMatchObject({ type: 'error', code: 'INTERNAL', message: 'kaput' });
    expect((await runtime.getRun(direct.runId))?.status).toBe('failed');
    await expect(runtime.invoke('echo', 'still alive')).resolves.toMatchObject({
      status: 'success',
    });
    await settle();
    expect(unexpected).toEqual([]);
  });

  it('a generator that throws mid-stream ends with error after its tokens', async () => {
    const flaky = defineAgent({
      name: 'flaky',
      async *handler() {
        yield 'a';
        await Promise.resolve();
        throw new Error('mid-stream');
      },
    });
    const runtime = quietRuntime({ agents: [flaky] });
    const result = await runtime.invoke('flaky', 'x');
    expect(result.status).toBe('error');
    const types = (await runtime.store.readEvents(result.stepId)).map((e) => e.type);
    expect(types).toEqual(['started', 'token', 'error']);
    await settle();
    expect(unexpected).toEqual([]);
  });

  it('a handler rejecting after its step timed out does not surface as an unhandled rejection', async () => {
    const clock = new SimulatedClock(0);
    let rejectLate: (err: Error) => void = () => undefined;
    const late = defineAgent({
      name: 'late',
      timeoutMs: 100,
      handler: () =>
        new Promise<string>((_resolve, reject) => {
          rejectLate = reject;
        }),
    });
    const runtime = quietRuntime({ agents: [late], clock });
    const pending = runtime.invoke('late', 'x');
    await until(() => runtime.system.list('step').length === 1);
    clock.advance(100);
    await expect(pending).resolves.toMatchObject({ status: 'timeout' });
    rejectLate(new Error('too late'));
    await settle();
    expect(unexpected).toEqual([]);
  });
});

describe('timeouts', () => {
  it('an agent past its timeoutMs ends with error TIMEOUT and its actor stops, even if it ignores the signal', async () => {
    const clock = new SimulatedClock(0);
    let pushAfterTimeout: unknown = null;
    let ctxSeen: ExecContext | null = null;
    const stuck = defineAgent({
      name: 'stuck',
      timeoutMs: 1_000,
      handler: async (_input, ctx) => {
        ctxSeen = ctx;
        await never;
      },
    });
    const runtime = quietRuntime({ agents: [stuck], clock });
    const pending = runtime.invoke('stuck', 'x');
    await until(() => runtime.system.list('step').length === 1);
    clock.advance(999);
    await settle();
    expect(runtime.system.list('step')).toHaveLength(1);
    clock.advance(1);
    const result = await pending;
    expect(result.status).toBe('timeout');
    expect(result.error).toBeInstanceOf(TimeoutError);
    expect(result.error?.code).toBe('TIMEOUT');
    expect(runtime.system.list('step')).toHaveLength(0);
    const stepCtx = ctxSeen as ExecContext | null;
    expect(stepCtx?.signal.aborted).toBe(true);
    try {
      stepCtx?.stream.push('ghost');
    } catch (err) {
      pushAfterTimeout = err;
    }
    expect(pushAfterTimeout).toBeInstanceOf(StreamClosedError);
    const log = await runtime.store.readEvents(result.stepId);
    expect(log.map((e) => e.type)).toEqual(['started', 'error']);
    expect(log[1]).toMatchObject({ code: 'TIMEOUT', retriable: true });
  });

  it("the context's deadline applies when it is earlier than the agent's timeout", async () => {
    const clock = new SimulatedClock(0);
    const slow = defineAgent({ name: 'slow', timeoutMs: 60_000, handler: () => never });
    const runtime = quietRuntime({ agents: [slow], clock });
    const pending = runtime.invoke('slow', 'x', runtime.createContext({ timeoutMs: 50 }));
    await until(() => runtime.system.list('step').length === 1);
    clock.advance(50);
    await expect(pending).resolves.toMatchObject({ status: 'timeout' });
  });
});

describe('an expired deadline', () => {
  it('ends the step with TIMEOUT at once, without running the handler, when the context is already past its deadline', async () => {
    const clock = new SimulatedClock(0);
    let ran = false;
    const quick = defineAgent({
      name: 'quick',
      handler: async () => {
        ran = true;
        await never;
      },
    });
    const runtime = quietRuntime({ agents: [quick], clock });
    const ctx = runtime.createContext({ timeoutMs: 10 });
    clock.advance(10);
    const result = await runtime.invoke('quick', 'x', ctx);
    expect(result.status).toBe('timeout');
    expect((await runtime.store.readEvents(result.stepId)).map((e) => e.type)).toEqual([
      'started',
      'error',
    ]);
    expect(ran).toBe(false);
  });
});

describe('cancel', () => {
  it('ctx.cancel() ends a streaming step with error CANCELLED and no token after it', async () => {
    let finalized = false;
    let produced = 0;
    const streamer = defineAgent({
      name: 'streamer',
      async *handler() {
        try {
          for (;;) {
            produced++;
            yield `t${produced} `;
            await new Promise<void>((resolve) => setImmediate(resolve));
          }
        } finally {
          finalized = true;
        }
      },
    });
    const runtime = quietRuntime({ agents: [streamer] });
    const ctx = runtime.createContext();
    const pending = runtime.invoke('streamer', 'x', ctx);
    await until(() => produced >= 5);
    ctx.cancel();
    const result = await pending;
    expect(result.status).toBe('error');
    expect(result.error).toBeInstanceOf(CancelledError);
    const log = await runtime.store.readEvents(result.stepId);
    const last = log.at(-1);
    expect(last).toMatchObject({ type: 'error', code: 'CANCELLED' });
    expect(log.slice(0, -1).every((e) => e.type === 'started' || e.type === 'token')).toBe(true);
    await settle();
    expect(finalized).toBe(true);
    expect((await runtime.store.readEvents(result.stepId)).length).toBe(log.length);
    expect((await runtime.getRun(result.runId))?.status).toBe('cancelled');
  });

  it('cancelling a parent cancels its delegated child; the child ends CANCELLED too', async () => {
    const ctxs: ExecContext[] = [];
    const child = defineAgent({
      name: 'child',
      handler: async (_i, ctx) => {
        ctxs.push(ctx);
        await never;
      },
    });
    const parent = defineAgent({
      name: 'parent',
      handler: async (input, ctx, runtime) => (await runtime.delegate('child', input, ctx)).status,
    });
    const runtime = quietRuntime({ agents: [parent, child] });
    const ctx = runtime.createContext();
    const pending = runtime.invoke('parent', 'x', ctx);
    await until(() => ctxs.length === 1);
    ctx.cancel();
    const result = await pending;
    expect(result.error?.code).toBe('CANCELLED');
    const steps = await runtime.store.listSteps(result.runId);
    expect(steps.map((s) => [s.name, s.status])).toEqual([
      ['parent', 'cancelled'],
      ['child', 'cancelled'],
    ]);
  });
});

describe('delegate', () => {
  it('without a parent context rejects with InvalidParamsError (it never throws synchronously)', async () => {
    const runtime = quietRuntime({ agents: [defineAgent({ name: 'leaf', handler: () => 'x' })] });
    const missing = undefined as unknown as ExecContext;
    let pending: Promise<unknown> | undefined;
    expect(() => {
      pending = runtime.delegate('leaf', 'x', missing);
    }).not.toThrow();
    await expect(pending).rejects.toBeInstanceOf(InvalidParamsError);
    await expect(runtime.invoke('nobody', 'x')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('spawns a child step with a child context: same trace, depth + 1, parent step id, path', async () => {
    const seen: Record<string, ExecContext> = {};
    const leaf = defineAgent({
      name: 'leaf',
      handler: (_i, ctx) => {
        seen['leaf'] = ctx;
        return 'leaf-out';
      },
    });
    const root = defineAgent({
      name: 'root',
      handler: async (input, ctx, runtime) => {
        seen['root'] = ctx;
        return (await runtime.delegate('leaf', input, ctx)).output;
      },
    });
    const runtime = quietRuntime({ agents: [root, leaf] });
    const result = await runtime.invoke('root', 'x');
    expect(result.output).toBe('leaf-out');
    const r = seen['root'];
    const l = seen['leaf'];
    expect(l?.traceId).toBe(r?.traceId);
    expect(l?.depth).toBe((r?.depth ?? 0) + 1);
    expect(l?.path).toEqual(['root', 'leaf']);
    expect(l?.requestId).not.toBe(r?.requestId);
    const steps = await runtime.store.listSteps(result.runId);
    expect(steps[1]).toMatchObject({
      name: 'leaf',
      parent_step_id: steps[0]?.step_id,
      actor_path: ['root', 'leaf'],
    });
  });

  it('stops at the default depth limit of 5 with DepthLimitError', async () => {
    const levels: number[] = [];
    const recurse = defineAgent({
      name: 'recurse',
      handler: async (input, ctx, runtime) => {
        levels.push(ctx.depth);
        const r = await runtime.delegate('recurse', input, ctx);
        return r.status;
      },
    });
    const runtime = quietRuntime({ agents: [recurse] });
    const result = await runtime.invoke('recurse', 'x');
    expect(levels).toEqual([1, 2, 3, 4, 5]);
    const steps = await runtime.store.listSteps(result.runId);
    expect(steps).toHaveLength(5);
    // The deepest step's delegate was refused; its handler threw, so it failed.
    const deepest = steps[4];
    expect(deepest?.error).toMatchObject({
      code: 'POLICY_DENIED',
      details: { max_depth: 5, depth: 6 },
    });
    // Its parent got a failure result and carried on; everything above succeeded.
    expect(steps[3]).toMatchObject({ status: 'succeeded', output: 'error' });
    expect(result).toMatchObject({ status: 'success', output: 'success' });
  });

  it('honours a configured maxDepth', async () => {
    let refusal: unknown = null;
    const recurse = defineAgent({
      name: 'r',
      handler: async (input, ctx, runtime) => {
        try {
          await runtime.delegate('r', input, ctx);
        } catch (err) {
          refusal = err;
        }
        return ctx.depth;
      },
    });
    const runtime = quietRuntime({ agents: [recurse], maxDepth: 2 });
    await runtime.invoke('r', 'x');
    expect(refusal).toBeInstanceOf(DepthLimitError);
    expect((refusal as DepthLimitError).maxDepth).toBe(2);
  });

  it('checks canUseAgent and runs nothing when it is refused', async () => {
    let refusal: unknown = null;
    const secret = defineAgent({ name: 'secret', handler: () => 'leaked' });
    const caller = defineAgent({
      name: 'caller',
      handler: async (input, ctx, runtime) => {
        try {
          await runtime.delegate('secret', input, ctx);
        } catch (err) {
          refusal = err;
        }
        return 'done';
      },
    });
    const runtime = quietRuntime({ agents: [caller, secret] });
    const ctx = runtime.createContext({ permissions: { allowedAgents: ['caller'] } });
    const result = await runtime.invoke('caller', 'x', ctx);
    expect(refusal).toBeInstanceOf(PermissionDeniedError);
    expect((refusal as PermissionDeniedError).code).toBe('POLICY_DENIED');
    expect((await runtime.store.listSteps(result.runId)).map((s) => s.name)).toEqual(['caller']);
    await expect(runtime.invoke('secret', 'x', ctx)).rejects.toBeInstanceOf(PermissionDeniedError);
  });

  it('narrows the child context and refuses a widening with WideningError', async () => {
    let narrowed: ExecContext | null = null;
    let widening: unknown = null;
    const leaf = defineAgent({
      name: 'leaf',
      handler: (_i, ctx) => {
        narrowed = ctx;
        return 'ok';
      },
    });
    const root = defineAgent({
      name: 'root',
      handler: async (input, ctx, runtime) => {
        await runtime.delegate('leaf', input, ctx, { permissions: { allowedTools: ['a'] } });
        try {
          await runtime.delegate('leaf', input, ctx, { permissions: { allowedTools: ['a', 'z'] } });
        } catch (err) {
          widening = err;
        }
        return 'ok';
      },
    });
    const runtime = quietRuntime({ agents: [root, leaf] });
    await runtime.invoke(
      'root',
      'x',
      runtime.createContext({ permissions: { allowedTools: ['a', 'b'] } }),
    );
    expect((narrowed as ExecContext | null)?.permissions.allowedTools).toEqual(['a']);
    expect(widening).toBeInstanceOf(WideningError);
  });

  it("adds a child's token usage into its parent's result", async () => {
    const spender = defineAgent({
      name: 'spender',
      handler: (_i, ctx) => {
        ctx.ledger.record({ tokensIn: 10, tokensOut: 5, costUsd: 0.01 });
        return 'spent';
      },
    });
    const boss = defineAgent({
      name: 'boss',
      handler: async (input, ctx, runtime) => {
        await runtime.delegate('spender', input, ctx);
        await runtime.delegate('spender', input, ctx);
        ctx.ledger.record({ tokensIn: 1, tokensOut: 1, costUsd: 0 });
        return 'done';
      },
    });
    const runtime = quietRuntime({ agents: [boss, spender] });
    const result = await runtime.invoke('boss', 'x');
    expect(result.usage).toMatchObject({ promptTokens: 21, completionTokens: 11, totalTokens: 32 });
    expect(result.usage.costUsd).toBeCloseTo(0.02);
    const steps = await runtime.store.listSteps(result.runId);
    expect(steps[0]?.budget_usage).toMatchObject({ tokens_in: 21, tokens_out: 11 });
    expect(steps[1]?.budget_usage).toMatchObject({ tokens_in: 10, tokens_out: 5 });
    expect((await runtime.getRun(result.runId))?.budget_usage).toMatchObject({
      tokens_in: 21,
      tokens_out: 11,
    });
  });
});

describe('invokeChain', () => {
  it('passes each output on as the next message, in one run', async () => {
    const upper = defineAgent({ name: 'upper', handler: (i) => i.message.toUpperCase() });
    const wrap = defineAgent({ name: 'wrap', handler: (i) => `[${i.message}]` });
    const runtime = quietRuntime({ agents: [upper, wrap] });
    const result = await runtime.invokeChain(['upper', 'wrap'], 'hi');
    expect(result).toMatchObject({ status: 'success', output: '[HI]', handler: 'wrap' });
    const steps = await runtime.store.listSteps(result.runId);
    expect(steps.map((s) => s.name)).toEqual(['upper', 'wrap']);
    expect((await runtime.getRun(result.runId))?.status).toBe('completed');
  });

  it('stops at the first result that is not a success', async () => {
    const ask = defineAgent({ name: 'ask', handler: () => needsData('more please') });
    const after = defineAgent({ name: 'after', handler: () => 'should not run' });
    const runtime = quietRuntime({ agents: [ask, after] });
    const result = await runtime.invokeChain(['ask', 'after'], 'hi');
    expect(result).toMatchObject({ status: 'needs_data', handler: 'ask' });
    expect((await runtime.store.listSteps(result.runId)).map((s) => s.name)).toEqual(['ask']);
  });
});

describe('run status', () => {
  it('a run whose agent answered needs_data ran to its end: completed', async () => {
    const runtime = quietRuntime({
      agents: [defineAgent({ name: 'ask', handler: () => needsData('which day?') })],
    });
    const result = await runtime.invoke('ask', 'x');
    expect((await runtime.getRun(result.runId))?.status).toBe('completed');
  });

  it('a chain cancelled in its second agent ends cancelled', async () => {
    let started = false;
    const first = defineAgent({ name: 'first', handler: () => 'go on' });
    const second = defineAgent({
      name: 'second',
      handler: async () => {
        started = true;
        await never;
      },
    });
    const runtime = quietRuntime({ agents: [first, second] });
    const ctx = runtime.createContext();
    const pending = runtime.invokeChain(['first', 'second'], 'x', ctx);
    await until(() => started);
    ctx.cancel();
    const result = await pending;
    expect(result.error?.code).toBe('CANCELLED');
    expect((await runtime.getRun(result.runId))?.status).toBe('cancelled');
  });

  it('a closed runtime refuses invocations, chains and tool calls', async () => {
    const runtime = quietRuntime({ agents: [echo] });
    await runtime.close();
    await expect(runtime.invoke('echo', 'x')).rejects.toThrow(/closed/);
    await expect(runtime.invokeChain(['echo'], 'x')).rejects.toThrow(/closed/);
    // Refused before any step, a tool call rejects as an invocation does.
    await expect(runtime.callTool('add', {}, runtime.createContext())).rejects.toMatchObject({
      code: 'INVALID_PARAMS',
      message: expect.stringMatching(/closed/) as string,
    });
  });
});

describe('agent actors', () => {
  it("keep Nerva's registry statistics and go idle after work", async () => {
    const clock = new SimulatedClock(10_000);
    let release: () => void = () => undefined;
    const gated = defineAgent({
      name: 'gated',
      handler: () =>
        new Promise<string>((resolve) => {
          release = () => {
            resolve('ok');
          };
        }),
    });
    const runtime = quietRuntime({ agents: [gated], clock });
    const pending = runtime.invoke('gated', 'x');
    await until(() => runtime.agentStats('gated').state === 'busy');
    expect(runtime.agentStats('gated')).toMatchObject({
      active: 1,
      totalCalls: 1,
      lastInvokedAt: 10_000,
    });
    clock.advance(40);
    release();
    await pending;
    expect(runtime.agentStats('gated')).toMatchObject({
      state: 'idle',
      successes: 1,
      failures: 0,
      avgDurationMs: 40,
    });
    expect(runtime.system.get('agent:gated')?.kind).toBe('agent');
  });

  it('receive invocations in batches: few messages, exact statistics on read, a flush after STATS_BATCH_MS', async () => {
    const clock = new SimulatedClock(0);
    const flaky = defineAgent({
      name: 'flaky',
      handler: (input) => {
        if (input.message === 'fail') throw new Error('no');
        return 'ok';
      },
    });
    const runtime = quietRuntime({ agents: [flaky], clock });
    const messages: string[] = [];
    runtime.system.inspect((e) => {
      if (e.type === 'actor.event' && e.actorId === 'agent:flaky') messages.push(e.event.type);
    });
    for (let i = 0; i < 10; i++) await runtime.invoke('flaky', i % 5 === 0 ? 'fail' : 'go');
    expect(messages).toEqual([]);
    clock.advance(STATS_BATCH_MS);
    expect(messages).toEqual(['INVOCATIONS']);
    await runtime.invoke('flaky', 'go');
    expect(runtime.agentStats('flaky')).toMatchObject({
      state: 'idle',
      totalCalls: 11,
      successes: 9,
      failures: 2,
      active: 0,
    });
    expect(messages).toEqual(['INVOCATIONS', 'INVOCATIONS']);
  });

  it('refuses a duplicate agent name', () => {
    const runtime = quietRuntime({ agents: [echo] });
    expect(() => runtime.registerAgent(echo)).toThrow(/already registered/);
  });

  it('refuses registrations that are not definitions, naming what it expected', () => {
    const runtime = quietRuntime();
    const notAnAgent = { name: 'x', handler: () => 'y' } as unknown as Parameters<
      typeof runtime.registerAgent
    >[0];
    const notATool = { name: 'x' } as unknown as Parameters<typeof runtime.registerTool>[0];
    expect(() => runtime.registerAgent(notAnAgent)).toThrow(TypeError);
    expect(() => runtime.registerAgent(notAnAgent)).toThrow(/defineAgent/);
    expect(() => runtime.registerTool(notATool)).toThrow(/defineTool/);
    expect(runtime.listAgents()).toEqual([]);
  });
});

describe('logging', () => {
  it('gives each actor a child logger bound to its path and ids, with secrets redacted', async () => {
    const lines: Record<string, unknown>[] = [];
    const destination = {
      write(line: string): void {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      },
    };
    const leaf = defineAgent({
      name: 'leaf',
      handler: (_i, ctx) => {
        ctx.logger.info(
          { request: { headers: { authorization: 'Bearer s3cret' } } },
          'calling out',
        );
        return 'ok';
      },
    });
    const root = defineAgent({
      name: 'root',
      handler: async (input, ctx, runtime) => (await runtime.delegate('leaf', input, ctx)).output,
    });
    const runtime = createRuntime({
      agents: [root, leaf],
      logger: createLogger({ level: 'info', destination }),
    });
    const result = await runtime.invoke('root', 'x');
    const steps = await runtime.store.listSteps(result.runId);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      msg: 'calling out',
      actor: 'root/leaf',
      run_id: result.runId,
      step_id: steps[1]?.step_id,
      request: { headers: { authorization: '[REDACTED]' } },
    });
    expect(JSON.stringify(lines)).not.toContain('s3cret');
  });
});
