import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../src/context/clock.js';
import { type ExecContext } from '../../src/context/exec-context.js';
import { createContext } from '../../src/context/create-context.js';
import { createSequentialIdSource } from '../../src/context/id-source.js';
import { CancelledError } from '../../src/errors/cancelled-error.js';
import { InvalidParamsError } from '../../src/errors/invalid-params-error.js';
import { StreamClosedError } from '../../src/errors/stream-closed-error.js';

function tree() {
  const clock = new SimulatedClock(10_000);
  const root = createContext({
    name: 'root',
    clock,
    ids: createSequentialIdSource(),
    userId: `user-${randomUUID()}`,
    sessionId: 'sess-1',
    runId: 'run-1',
    memoryScope: 'agent',
    timeoutMs: 5_000,
  });
  return { clock, root };
}

/** Records every abort of a context's signal, as seen by an `abort` listener. */
function watch(ctx: ExecContext): unknown[] {
  const seen: unknown[] = [];
  ctx.signal.addEventListener('abort', () => {
    seen.push(ctx.signal.reason);
  });
  return seen;
}

describe('createContext', () => {
  it('has sensible defaults: anonymous, open, session scope, no deadline, depth 0', () => {
    const ctx = createContext();
    expect(ctx.name).toBe('root');
    expect(ctx.userId).toBeNull();
    expect(ctx.sessionId).toBeNull();
    expect(ctx.runId).toBeNull();
    expect(ctx.stepId).toBeNull();
    expect(ctx.memoryScope).toBe('session');
    expect(ctx.canUseTool('anything')).toBe(true);
    expect(ctx.deadline).toBeNull();
    expect(ctx.remainingMs()).toBeNull();
    expect(ctx.isTimedOut()).toBe(false);
    expect(ctx.depth).toBe(0);
    expect(ctx.path).toEqual([]);
    expect(ctx.parent).toBeNull();
    expect(ctx.isCancelled()).toBe(false);
    expect(ctx.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(ctx.budgetRemaining()).toEqual({ tokensIn: null, tokensOut: null, costUsd: null });
  });

  it('takes ids from the injected IdSource', () => {
    const ctx = createContext({ ids: createSequentialIdSource() });
    expect(ctx.requestId).toBe('req_1');
    expect(ctx.traceId).toBe('00000000000000000000000000000002');
    const given = createContext({ traceId: 'ab'.repeat(16) });
    expect(given.traceId).toBe('ab'.repeat(16));
  });

  it('the earlier of timeoutMs and budgets.maxWallMs becomes the deadline', () => {
    const clock = new SimulatedClock(1_000);
    expect(createContext({ clock, timeoutMs: 500, budgets: { maxWallMs: 900 } }).deadline).toBe(
      1_500,
    );
    expect(createContext({ clock, timeoutMs: 900, budgets: { maxWallMs: 200 } }).deadline).toBe(
      1_200,
    );
    expect(createContext({ clock, budgets: { maxWallMs: 300 } }).deadline).toBe(1_300);
  });

  it.each([-1, Number.NaN, Number.POSITIVE_INFINITY])(
    'refuses timeoutMs %s with RangeError',
    (timeoutMs) => {
      expect(() => createContext({ timeoutMs })).toThrow(RangeError);
    },
  );

  it('refuses a negative budgets.maxWallMs with RangeError', () => {
    expect(() => createContext({ budgets: { maxWallMs: -5 } })).toThrow(RangeError);
  });

  it('a context outside a step has a detached stream that refuses tokens', () => {
    const ctx = createContext();
    expect(ctx.stream.closed).toBe(true);
    expect(() => {
      ctx.stream.push('hello');
    }).toThrow(StreamClosedError);
  });
});

describe('ExecContext.child identity', () => {
  it('gets a new request id, keeps the trace id, depth + 1 and extends the path', () => {
    const { root } = tree();
    const a = root.child('planner');
    const b = a.child('calendar');
    const sibling = root.child('critic');

    const requestIds = [root, a, b, sibling].map((c) => c.requestId);
    expect(new Set(requestIds).size).toBe(4);
    for (const c of [a, b, sibling]) expect(c.traceId).toBe(root.traceId);
    expect([root.depth, a.depth, b.depth, sibling.depth]).toEqual([0, 1, 2, 1]);
    expect(a.path).toEqual(['planner']);
    expect(b.path).toEqual(['planner', 'calendar']);
    expect(sibling.path).toEqual(['critic']);
    expect(b.parent).toBe(a);
    expect(a.name).toBe('planner');
  });

  it('inherits user, session, run, memory scope and permissions', () => {
    const { root } = tree();
    const child = root.child('worker').child('leaf');
    expect(child.userId).toBe(root.userId);
    expect(child.sessionId).toBe('sess-1');
    expect(child.runId).toBe('run-1');
    expect(child.memoryScope).toBe('agent');
    expect(child.permissions).toEqual(root.permissions);
  });

  it('merges metadata over the parent without changing the parent', () => {
    const root = createContext({ metadata: { tenant: 't1', locale: 'en' } });
    const child = root.child('c', { metadata: { locale: 'fr', extra: 1 } });
    expect(child.metadata).toEqual({ tenant: 't1', locale: 'fr', extra: 1 });
    expect(root.metadata).toEqual({ tenant: 't1', locale: 'en' });
    expect(root.child('d').metadata).toEqual({ tenant: 't1', locale: 'en' });
  });

  it('refuses an empty name with InvalidParamsError naming the param', () => {
    const { root } = tree();
    let caught: unknown;
    try {
      root.child('');
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InvalidParamsError);
    expect((caught as InvalidParamsError).param).toBe('name');
    expect((caught as InvalidParamsError).code).toBe('INVALID_PARAMS');
  });

  it.each([-1, Number.NaN, Number.POSITIVE_INFINITY])(
    'refuses a child timeoutMs of %s with RangeError',
    (timeoutMs) => {
      const { root } = tree();
      expect(() => root.child('c', { timeoutMs })).toThrow(RangeError);
    },
  );
});

describe('ExecContext.child deadline', () => {
  it("a child timeout longer than the parent's remaining time is clamped to the parent deadline", () => {
    const { clock, root } = tree();
    clock.advance(1_000);
    const child = root.child('slow', { timeoutMs: 60_000 });
    expect(child.deadline).toBe(root.deadline);
    expect(child.deadline).toBe(15_000);
    expect(child.remainingMs()).toBe(4_000);
  });

  it('a shorter child timeout is honoured, counted from when the child is made', () => {
    const { clock, root } = tree();
    clock.advance(1_000);
    const child = root.child('quick', { timeoutMs: 300 });
    expect(child.deadline).toBe(11_300);
    clock.advance(299);
    expect(child.isTimedOut()).toBe(false);
    expect(child.remainingMs()).toBe(1);
    clock.advance(1);
    expect(child.isTimedOut()).toBe(true);
    expect(child.remainingMs()).toBe(0);
    expect(root.isTimedOut()).toBe(false);
  });

  it('a child without a timeout keeps the parent deadline, and a grandchild cannot extend it', () => {
    const { root } = tree();
    const child = root.child('c', { timeoutMs: 2_000 });
    const grand = child.child('g', { timeoutMs: 4_000 });
    expect(root.child('plain').deadline).toBe(root.deadline);
    expect(grand.deadline).toBe(child.deadline);
    expect(grand.deadline).toBe(12_000);
  });

  it('a child of a context without a deadline gets its own timeout', () => {
    const clock = new SimulatedClock(0);
    const root = createContext({ clock });
    const child = root.child('c', { timeoutMs: 50 });
    expect(child.deadline).toBe(50);
    expect(root.deadline).toBeNull();
  });

  it('budgets.maxWallMs narrows the deadline like a timeout', () => {
    const { root } = tree();
    expect(root.child('c', { budgets: { maxWallMs: 1_000 } }).deadline).toBe(11_000);
    expect(root.child('c', { budgets: { maxWallMs: 1_000 }, timeoutMs: 400 }).deadline).toBe(
      10_400,
    );
  });

  it('isTimedOut() and remainingMs() follow the simulated clock, never going negative', () => {
    const { clock, root } = tree();
    expect(root.remainingMs()).toBe(5_000);
    clock.advance(4_999);
    expect(root.isTimedOut()).toBe(false);
    expect(root.remainingMs()).toBe(1);
    clock.advance(1);
    expect(root.isTimedOut()).toBe(true);
    expect(root.remainingMs()).toBe(0);
    clock.advance(10_000);
    expect(root.isTimedOut()).toBe(true);
    expect(root.remainingMs()).toBe(0);
  });

  // Regression: child() never validates budgets.maxWallMs. NaN passes the widening check
  // (NaN > left is false) and Math.min(deadline, NaN) makes the child's deadline NaN, so
  // the child never times out although its parent does. createContext refuses the same
  // value with RangeError.
  it('a NaN budgets.maxWallMs cannot free a child from its parent deadline', () => {
    const { clock, root } = tree();
    let child: ExecContext | undefined;
    try {
      child = root.child('c', { budgets: { maxWallMs: Number.NaN } });
    } catch (err) {
      expect(err).toBeInstanceOf(RangeError);
    }
    if (child) {
      expect(child.deadline).not.toBeNaN();
      clock.advance(6_000);
      expect(root.isTimedOut()).toBe(true);
      expect(child.isTimedOut()).toBe(true);
    }
  });

  // Regression: a negative budgets.maxWallMs is refused by createContext but accepted by
  // child(), which silently makes a child whose deadline is already past.
  it('a negative budgets.maxWallMs is refused with RangeError, as by createContext', () => {
    const { root } = tree();
    expect(() => root.child('c', { budgets: { maxWallMs: -100 } })).toThrow(RangeError);
  });
});

describe('ExecContext cancellation', () => {
  it('cancelling a parent aborts every descendant, three levels down, with a CancelledError', () => {
    const { root } = tree();
    const a = root.child('a');
    const b = a.child('b');
    const c = b.child('c');
    const a2 = root.child('a2');
    const seen = [a, b, c, a2].map(watch);

    root.cancel();

    for (const ctx of [root, a, b, c, a2]) {
      expect(ctx.isCancelled()).toBe(true);
      expect(ctx.signal.aborted).toBe(true);
      expect(ctx.signal.reason).toBeInstanceOf(CancelledError);
      expect((ctx.signal.reason as CancelledError).code).toBe('CANCELLED');
    }
    expect(c.signal.reason).toBe(root.signal.reason);
    for (const s of seen) expect(s).toEqual([root.signal.reason]);
  });

  it('a reason given to cancel() reaches the descendants', () => {
    const { root } = tree();
    const leaf = root.child('a').child('b');
    const reason = new CancelledError('user pressed stop');
    root.cancel(reason);
    expect(leaf.signal.reason).toBe(reason);
  });

  it('cancelling a child leaves the parent and siblings alone but reaches its own children', () => {
    const { root } = tree();
    const a = root.child('a');
    const b = root.child('b');
    const aa = a.child('aa');
    const bb = b.child('bb');
    a.cancel();
    expect(a.isCancelled()).toBe(true);
    expect(aa.isCancelled()).toBe(true);
    expect(root.isCancelled()).toBe(false);
    expect(b.isCancelled()).toBe(false);
    expect(bb.isCancelled()).toBe(false);
    // The parent can still make working children.
    expect(root.child('c').isCancelled()).toBe(false);
  });

  it('cancel() is idempotent: the first reason stays and listeners fire once', () => {
    const { root } = tree();
    const seen = watch(root);
    const first = new CancelledError('first');
    root.cancel(first);
    root.cancel(new CancelledError('second'));
    expect(root.signal.reason).toBe(first);
    expect(seen).toHaveLength(1);
  });

  it('a child created from an already-cancelled parent starts cancelled with its reason', () => {
    const { root } = tree();
    const reason = new CancelledError('too late');
    root.cancel(reason);
    const child = root.child('late');
    const grand = child.child('later');
    expect(child.isCancelled()).toBe(true);
    expect(child.signal.reason).toBe(reason);
    expect(grand.isCancelled()).toBe(true);
  });

  it('an outside AbortSignal cancels the context and its descendants', () => {
    const outer = new AbortController();
    const root = createContext({ signal: outer.signal });
    const leaf = root.child('a').child('b');
    expect(root.isCancelled()).toBe(false);
    const reason = new CancelledError('client went away');
    outer.abort(reason);
    expect(root.isCancelled()).toBe(true);
    expect(root.signal.reason).toBe(reason);
    expect(leaf.isCancelled()).toBe(true);
  });

  it('an outside signal that is already aborted makes a cancelled context', () => {
    const outer = new AbortController();
    outer.abort(new CancelledError('before start'));
    const root = createContext({ signal: outer.signal });
    expect(root.isCancelled()).toBe(true);
    expect(root.child('c').isCancelled()).toBe(true);
  });

  it('cancelling the context does not abort the outside signal', () => {
    const outer = new AbortController();
    const root = createContext({ signal: outer.signal });
    root.cancel();
    expect(outer.signal.aborted).toBe(false);
  });

  it('a disposed child is no longer cancelled by its parent', () => {
    const { root } = tree();
    const done = root.child('done');
    const running = root.child('running');
    done.dispose();
    root.cancel();
    expect(running.isCancelled()).toBe(true);
    expect(done.isCancelled()).toBe(false);
  });

  it('a disposed root is no longer cancelled by the outside signal', () => {
    const outer = new AbortController();
    const root = createContext({ signal: outer.signal });
    root.dispose();
    outer.abort();
    expect(root.isCancelled()).toBe(false);
  });
});
