import { randomUUID } from 'node:crypto';
import { MessageChannel } from 'node:worker_threads';
import { trace, TraceFlags } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../src/context/clock.js';
import { ExecContext } from '../../src/context/exec-context.js';
import { createContext } from '../../src/context/create-context.js';
import { createSequentialIdSource } from '../../src/context/id-source.js';
import { formatTraceparent, parseTraceparent } from '../../src/context/traceparent.js';
import { wireContextSchema, type WireContext } from '../../src/context/wire-context.js';
import { BudgetExceededError } from '../../src/errors/budget-exceeded-error.js';
import { CancelledError } from '../../src/errors/cancelled-error.js';
import { InvalidWireContextError } from '../../src/errors/invalid-wire-context-error.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

/** A context three levels deep with every field set, and the clock it runs on. */
function sample() {
  const clock = new SimulatedClock(1_700_000_000_000);
  const root = createContext({
    name: 'api',
    clock,
    ids: createSequentialIdSource(),
    userId: `user-${randomUUID()}`,
    sessionId: 'sess-9',
    runId: 'run-7',
    memoryScope: 'user',
    permissions: { roles: ['planner'], allowedTools: ['search', 'add'], allowedAgents: null },
    budgets: { maxTokensIn: 1_000, maxTokensOut: 400 },
    timeoutMs: 30_000,
    metadata: { tenant: 'acme', nested: { tier: 2, tags: ['a', 'b'] }, flag: true, none: null },
  });
  const mid = root.child('planner', { metadata: { hop: 1 } });
  const ctx = mid.child(
    'calendar',
    { permissions: { allowedTools: ['search'], allowedAgents: ['mail'] }, timeoutMs: 10_000 },
    { stepId: 'step_42' },
  );
  return { clock, root, ctx };
}

function json(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value)) as unknown;
}

/** Runs `fn`, expecting InvalidWireContextError, and returns it. */
function rejectionOf(wire: unknown): InvalidWireContextError {
  try {
    ExecContext.fromWire(wire);
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidWireContextError);
    return err as InvalidWireContextError;
  }
  throw new Error('expected InvalidWireContextError, the wire context was accepted');
}

function expectSameContext(rebuilt: ExecContext, original: ExecContext): void {
  expect(rebuilt.name).toBe(original.name);
  expect(rebuilt.requestId).toBe(original.requestId);
  expect(rebuilt.traceId).toBe(original.traceId);
  expect(rebuilt.userId).toBe(original.userId);
  expect(rebuilt.sessionId).toBe(original.sessionId);
  expect(rebuilt.runId).toBe(original.runId);
  expect(rebuilt.stepId).toBe(original.stepId);
  expect(rebuilt.permissions).toEqual(original.permissions);
  expect(rebuilt.memoryScope).toBe(original.memoryScope);
  expect(rebuilt.deadline).toBe(original.deadline);
  expect(rebuilt.depth).toBe(original.depth);
  expect(rebuilt.path).toEqual(original.path);
  expect(rebuilt.metadata).toEqual(original.metadata);
}

describe('ExecContext wire form', () => {
  it('survives JSON and rebuilds with the same identity, permissions, scope and deadline', () => {
    const { clock, ctx } = sample();
    const rebuilt = ExecContext.fromWire(json(ctx.toWire()), { clock });
    expectSameContext(rebuilt, ctx);
    expect(rebuilt.requestId).toBe('req_4');
    expect(rebuilt.stepId).toBe('step_42');
    expect(rebuilt.depth).toBe(2);
    expect(rebuilt.path).toEqual(['planner', 'calendar']);
    expect(rebuilt.metadata).toEqual({
      tenant: 'acme',
      nested: { tier: 2, tags: ['a', 'b'] },
      flag: true,
      none: null,
      hop: 1,
    });
    expect(rebuilt.canUseTool('search')).toBe(true);
    expect(rebuilt.canUseTool('add')).toBe(false);
    expect(rebuilt.canUseAgent('mail')).toBe(true);
    expect(rebuilt.canUseAgent('bank')).toBe(false);
    expect(rebuilt.hasRole('planner')).toBe(true);
    expect(rebuilt.parent).toBeNull();
  });

  it('sends the deadline as an absolute time that the far side counts down on its clock', () => {
    const { clock, ctx } = sample();
    clock.advance(4_000);
    const wire = ctx.toWire();
    expect(wire.deadline).toBe(1_700_000_010_000);
    const farClock = new SimulatedClock(clock.now());
    const rebuilt = ExecContext.fromWire(json(wire), { clock: farClock });
    expect(rebuilt.remainingMs()).toBe(6_000);
    farClock.advance(6_000);
    expect(rebuilt.isTimedOut()).toBe(true);
  });

  it('turns the budget that is left into the rebuilt ledger limits', () => {
    const { root, ctx } = sample();
    root.ledger.record({ tokensIn: 100, tokensOut: 50, costUsd: 0 });
    ctx.ledger.reserve({ tokensIn: 200, tokensOut: 0, costUsd: 0 });
    const wire = ctx.toWire();
    expect(wire.budget_remaining).toEqual({ tokens_in: 700, tokens_out: 350, cost_usd: null });

    const rebuilt = ExecContext.fromWire(json(wire));
    expect(rebuilt.ledger.limits).toEqual({ maxTokensIn: 700, maxTokensOut: 350 });
    expect(rebuilt.budgetRemaining()).toEqual({ tokensIn: 700, tokensOut: 350, costUsd: null });
    const err = (() => {
      try {
        rebuilt.ledger.reserve({ tokensIn: 701, tokensOut: 0, costUsd: 0 });
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(err).toBeInstanceOf(BudgetExceededError);
    expect((err as BudgetExceededError).limit).toBe('max_tokens_in');
    // The far side starts with no usage of its own.
    expect(rebuilt.tokenUsage.totalTokens).toBe(0);
  });

  it('the wire object passes the schema and is plain data', () => {
    const { ctx } = sample();
    const wire = ctx.toWire();
    expect(wireContextSchema.safeParse(wire).success).toBe(true);
    expect(json(wire)).toEqual(wire);
    expect(wire.v).toBe(1);
    expect(wire.traceparent).toBeNull();
  });

  it('crosses a real MessageChannel and rebuilds on the other side', async () => {
    const { clock, ctx } = sample();
    const { port1, port2 } = new MessageChannel();
    try {
      const received = new Promise<unknown>((resolve) => {
        port2.once('message', resolve);
      });
      port1.postMessage(ctx.toWire());
      const rebuilt = ExecContext.fromWire(await received, { clock });
      expectSameContext(rebuilt, ctx);
      expect(rebuilt.budgetRemaining()).toEqual(ctx.budgetRemaining());
    } finally {
      port1.close();
      port2.close();
    }
  });

  it('rebuilds with a fresh signal, even from a cancelled context, that cancel() aborts', () => {
    const { ctx } = sample();
    ctx.cancel();
    const rebuilt = ExecContext.fromWire(json(ctx.toWire()));
    expect(rebuilt.isCancelled()).toBe(false);
    expect(rebuilt.signal.aborted).toBe(false);
    const child = rebuilt.child('far-child');
    rebuilt.cancel();
    expect(rebuilt.signal.aborted).toBe(true);
    expect(rebuilt.signal.reason).toBeInstanceOf(CancelledError);
    expect(child.isCancelled()).toBe(true);
  });

  it('a rebuilt context makes children that continue the depth, path and trace', () => {
    const { ctx } = sample();
    const rebuilt = ExecContext.fromWire(json(ctx.toWire()), { ids: createSequentialIdSource() });
    const child = rebuilt.child('mail');
    expect(child.depth).toBe(3);
    expect(child.path).toEqual(['planner', 'calendar', 'mail']);
    expect(child.traceId).toBe(ctx.traceId);
    expect(child.requestId).not.toBe(ctx.requestId);
  });

  it('carries the span as a traceparent and restores it on the far side', () => {
    const span = trace.wrapSpanContext({
      traceId: TRACE,
      spanId: SPAN,
      traceFlags: TraceFlags.SAMPLED,
    });
    const root = createContext({ traceId: TRACE });
    const ctx = root.child('step', undefined, { span });
    const wire = ctx.toWire();
    expect(wire.traceparent).toBe(`00-${TRACE}-${SPAN}-01`);

    const rebuilt = ExecContext.fromWire(json(wire));
    const sc = rebuilt.span?.spanContext();
    expect(sc).toMatchObject({ traceId: TRACE, spanId: SPAN, traceFlags: TraceFlags.SAMPLED });
    expect(sc?.isRemote).toBe(true);
    expect(rebuilt.toWire().traceparent).toBe(wire.traceparent);
  });

  // Regression: a commit may overrun its reservation, which makes remaining() negative;
  // toWire() then sends a negative budget_remaining that fromWire() (nonnegative) refuses,
  // so an over-budget context cannot be handed to a worker at all.
  it('a context that overran its budget still crosses the wire', () => {
    const ctx = createContext({ budgets: { maxTokensOut: 100 } });
    ctx.ledger.reserve({ tokensIn: 0, tokensOut: 10, costUsd: 0 }).commit({
      tokensIn: 0,
      tokensOut: 150,
      costUsd: 0,
    });
    const rebuilt = ExecContext.fromWire(json(ctx.toWire()));
    expect(rebuilt.budgetRemaining().tokensOut).toBe(0);
  });

  // Regression: timeoutMs may be fractional (checkTimeout allows any finite ms >= 0), so the
  // deadline may be fractional, but the wire schema requires an integer deadline.
  it('a context with a fractional timeout still crosses the wire', () => {
    const clock = new SimulatedClock(1_000);
    const ctx = createContext({ clock, timeoutMs: 2.5 });
    const rebuilt = ExecContext.fromWire(json(ctx.toWire()), { clock });
    // Rounding on the wire is fine; losing the context is not.
    expect(Math.abs((rebuilt.deadline ?? Number.NaN) - 1_002.5)).toBeLessThanOrEqual(1);
  });
});

describe('ExecContext.fromWire rejects malformed wire contexts', () => {
  function base(): Record<string, unknown> {
    const { ctx } = sample();
    return json(ctx.toWire()) as Record<string, unknown>;
  }

  function without(key: keyof WireContext): Record<string, unknown> {
    const w = base();
    // eslint-disable-next-line @typescript-eslint/no-dynamic-delete -- the point is a missing field
    delete w[key];
    return w;
  }

  it.each<[string, () => unknown, readonly (string | number)[]]>([
    ['a missing request_id', () => without('request_id'), ['request_id']],
    ['a missing permissions', () => without('permissions'), ['permissions']],
    ['a depth sent as a string', () => ({ ...base(), depth: '2' }), ['depth']],
    ['a negative depth', () => ({ ...base(), depth: -1 }), ['depth']],
    ['a fractional depth', () => ({ ...base(), depth: 1.5 }), ['depth']],
    ['an uppercase trace id', () => ({ ...base(), trace_id: TRACE.toUpperCase() }), ['trace_id']],
    ['a short trace id', () => ({ ...base(), trace_id: 'abc123' }), ['trace_id']],
    [
      'a traceparent with an all-zero span',
      () => ({ ...base(), traceparent: `00-${TRACE}-${'0'.repeat(16)}-01` }),
      ['traceparent'],
    ],
    ['a garbage traceparent', () => ({ ...base(), traceparent: 'not-a-header' }), ['traceparent']],
    ['an unknown memory scope', () => ({ ...base(), memory_scope: 'planet' }), ['memory_scope']],
    ['an unknown version', () => ({ ...base(), v: 2 }), ['v']],
    ['a path that is not strings', () => ({ ...base(), path: ['a', 3] }), ['path', 1]],
    [
      'a tool list of numbers',
      () => ({ ...base(), permissions: { roles: [], allowed_tools: [1], allowed_agents: null } }),
      ['permissions', 'allowed_tools', 0],
    ],
    [
      'a negative budget',
      () => ({
        ...base(),
        budget_remaining: { tokens_in: -1, tokens_out: null, cost_usd: null },
      }),
      ['budget_remaining', 'tokens_in'],
    ],
    ['an empty name', () => ({ ...base(), name: '' }), ['name']],
  ])('%s is rejected naming the path', (_what, make, path) => {
    const err = rejectionOf(make());
    expect(err.code).toBe('INVALID_PARAMS');
    expect(err.issues.map((i) => i.path)).toContainEqual(path);
  });

  it('an unknown extra field is rejected and named', () => {
    const err = rejectionOf({ ...base(), is_admin: true });
    expect(err.code).toBe('INVALID_PARAMS');
    expect(err.issues).toHaveLength(1);
    expect(err.issues[0]?.path).toEqual([]);
    expect(err.issues[0]?.message).toContain('is_admin');
  });

  it('an unknown field inside permissions is rejected at that path', () => {
    const w = base();
    const err = rejectionOf({
      ...w,
      permissions: { roles: [], allowed_tools: null, allowed_agents: null, sudo: true },
    });
    expect(err.issues.map((i) => i.path)).toContainEqual(['permissions']);
    expect(err.issues.map((i) => i.message).join(' ')).toContain('sudo');
  });

  it('lists every problem, not only the first', () => {
    const err = rejectionOf({ ...base(), depth: -3, trace_id: 'nope', name: 7 });
    const paths = err.issues.map((i) => i.path.join('.'));
    expect(paths).toEqual(expect.arrayContaining(['depth', 'trace_id', 'name']));
    expect(err.details).toMatchObject({ issues: err.issues });
  });

  it.each([null, undefined, 'ctx', 42, []])('a non-object (%s) is rejected', (wire) => {
    expect(rejectionOf(wire).code).toBe('INVALID_PARAMS');
  });

  // Regression: W3C trace context says an all-zero trace id is invalid (and parseTraceparent
  // refuses it), but the wire schema's regex accepts thirty-two zeros.
  it('an all-zero trace id is rejected', () => {
    const err = rejectionOf({ ...base(), trace_id: '0'.repeat(32) });
    expect(err.issues.map((i) => i.path)).toContainEqual(['trace_id']);
  });
});

describe('traceparent', () => {
  it('formats and parses back the same parts', () => {
    for (const sampled of [true, false]) {
      const tp = { traceId: TRACE, spanId: SPAN, sampled };
      const header = formatTraceparent(tp);
      expect(header).toBe(`00-${TRACE}-${SPAN}-${sampled ? '01' : '00'}`);
      expect(parseTraceparent(header)).toEqual(tp);
    }
  });

  it('reads the sampled bit from the flags', () => {
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-03`)?.sampled).toBe(true);
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-02`)?.sampled).toBe(false);
  });

  it.each([
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['an all-zero span id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['an empty string', ''],
    ['uppercase hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['a short trace id', `00-${TRACE.slice(1)}-${SPAN}-01`],
    ['a short span id', `00-${TRACE}-${SPAN.slice(1)}-01`],
    ['another version', `01-${TRACE}-${SPAN}-01`],
    ['one-digit flags', `00-${TRACE}-${SPAN}-1`],
    ['trailing data', `00-${TRACE}-${SPAN}-01-extra`],
    ['non-hex digits', `00-${TRACE.replace('4', 'g')}-${SPAN}-01`],
  ])('returns null for %s', (_what, header) => {
    expect(parseTraceparent(header)).toBeNull();
  });
});
