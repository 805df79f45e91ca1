import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../src/context/clock.js';
import { CancelledError } from '../../../src/errors/cancelled-error.js';
import type { Runtime } from '../../../src/runtime/runtime.js';
import { HttpError } from '../../../src/server/http-errors.js';
import {
  contextFromRequest,
  correlationIdOf,
  createRequestContexts,
  headerLookup,
} from '../../../src/server/contrib/request-context.js';
import { quietRuntime } from '../../support/runtime.js';

const KEY = { key: 'a-key-of-sixteen-chars', user_id: 'ops' };
/** What a bridge must say to let callers that name nobody in. */
const ANON = { anonymous: 'allow' } as const;

describe('createRequestContexts options', () => {
  const runtime = { createContext: () => quietRuntime().createContext() };

  it('refuses keys and identify together, naming both', () => {
    expect(() =>
      createRequestContexts(runtime, { keys: [KEY], identify: () => ({ userId: 'u' }) }),
    ).toThrow(/keys or identify, not both/);
  });

  it('refuses a malformed key with a TypeError naming keys', () => {
    expect(() =>
      createRequestContexts(runtime, { keys: [{ key: 'short', user_id: 'u' }] }),
    ).toThrow(TypeError);
    expect(() =>
      createRequestContexts(runtime, { keys: [{ key: 'short', user_id: 'u' }] }),
    ).toThrow(/keys/);
  });

  it('refuses deadlines that are not whole numbers > 0, naming the option', () => {
    for (const bad of [0, -1, 1.5, Number.POSITIVE_INFINITY]) {
      expect(() => createRequestContexts(runtime, { ...ANON, maxTimeoutMs: bad })).toThrow(
        new RangeError(
          `createRequestContexts: maxTimeoutMs must be a whole number > 0, got ${bad}`,
        ),
      );
    }
    expect(() => createRequestContexts(runtime, { ...ANON, defaultTimeoutMs: 0 })).toThrow(
      /defaultTimeoutMs/,
    );
    expect(() =>
      createRequestContexts(runtime, {
        ...ANON,
        defaultTimeoutMs: 2_000,
        maxTimeoutMs: 1_000,
      }),
    ).toThrow(/defaultTimeoutMs \(2000\) is past maxTimeoutMs \(1000\)/);
  });

  it('refuses a bridge that can name no caller unless it allows anonymous ones by name', () => {
    for (const options of [{}, { keys: [] }, { anonymous: 'refuse' as const }]) {
      expect(() => createRequestContexts(runtime, options)).toThrow(
        new TypeError(
          "createRequestContexts: give keys or identify to say who calls, or anonymous: 'allow' to let every caller in as anonymous (read and write)",
        ),
      );
    }
    expect(() =>
      createRequestContexts(runtime, { anonymous: 'yes' as unknown as 'allow' }),
    ).toThrow(/anonymous must be 'allow' or 'refuse', got "yes"/);
  });

  it('refuses a timeout header name that is not a lower-case header name', () => {
    expect(() => createRequestContexts(runtime, { ...ANON, timeoutHeader: 'X-Timeout' })).toThrow(
      /timeoutHeader/,
    );
  });
});

describe('contextFromRequest', () => {
  let runtime: Runtime | null = null;
  const open = (clock = new SimulatedClock(1_000)): Runtime => (runtime = quietRuntime({ clock }));
  afterEach(async () => {
    await runtime?.close();
  });

  it('reads Node headers (first of a list) and fetch Headers alike', () => {
    expect(headerLookup({ 'x-a': ['1', '2'], 'x-b': 'b' })('x-a')).toBe('1');
    expect(headerLookup(new Headers({ 'X-B': 'b' }))('x-b')).toBe('b');
    expect(headerLookup({})('x-c')).toBeUndefined();
  });

  it('keeps a well-formed correlation id, trimmed, and replaces anything else', () => {
    expect(correlationIdOf(headerLookup({ 'x-correlation-id': ' req-1 ' }))).toBe('req-1');
    expect(correlationIdOf(headerLookup({ 'x-correlation-id': 'x'.repeat(129) }))).toHaveLength(36);
  });

  it('sets the deadline from the header, cut to maxTimeoutMs, else defaultTimeoutMs', async () => {
    const rt = open();
    const asked = await contextFromRequest(rt, { 'x-request-timeout-ms': '250' }, ANON);
    expect(asked.ctx.deadline).toBe(1_250);
    const cut = await contextFromRequest(
      rt,
      { 'x-request-timeout-ms': '90000' },
      { ...ANON, maxTimeoutMs: 5_000 },
    );
    expect(cut.ctx.deadline).toBe(6_000);
    const fallback = await contextFromRequest(rt, {}, { ...ANON, defaultTimeoutMs: 700 });
    expect(fallback.ctx.deadline).toBe(1_700);
    expect((await contextFromRequest(rt, {}, ANON)).ctx.deadline).toBeNull();
  });

  it('reads the deadline from a header of another name', async () => {
    const rt = open();
    const { ctx } = await contextFromRequest(
      rt,
      { 'x-budget-ms': '40', 'x-request-timeout-ms': 'ignored' },
      { ...ANON, timeoutHeader: 'x-budget-ms' },
    );
    expect(ctx.deadline).toBe(1_040);
  });

  it('refuses a malformed deadline before asking who calls', async () => {
    const rt = open();
    let asked = false;
    const pending = contextFromRequest(
      rt,
      { 'x-request-timeout-ms': '12ms' },
      {
        identify: () => {
          asked = true;
          return { userId: 'u' };
        },
      },
    );
    await expect(pending).rejects.toMatchObject({ status: 400, code: 'INVALID_PARAMS' });
    expect(asked).toBe(false);
  });

  it('takes the caller from a key: its user id and permissions', async () => {
    const rt = open();
    const { ctx, caller } = await contextFromRequest(
      rt,
      { authorization: `Bearer ${KEY.key}` },
      { keys: [{ ...KEY, permissions: ['read'] }] },
    );
    expect(ctx.userId).toBe('ops');
    expect([...caller.permissions]).toEqual(['read']);
    await expect(
      contextFromRequest(rt, { authorization: 'Bearer wrong' }, { keys: [KEY] }),
    ).rejects.toBeInstanceOf(HttpError);
  });

  it("lets an anonymous caller in only under anonymous: 'allow', and then with read and write, never admin", async () => {
    const rt = open();
    const anon = await contextFromRequest(rt, {}, ANON);
    expect(anon.caller.userId).toBe('anonymous');
    expect([...anon.caller.permissions].sort()).toEqual(['read', 'write']);
    // identify names nobody: 401, unless anonymous callers are allowed.
    const nobody = { identify: () => null };
    await expect(contextFromRequest(rt, {}, nobody)).rejects.toMatchObject({
      status: 401,
      code: 'UNAUTHORIZED',
    });
    const allowed = await contextFromRequest(rt, {}, { ...nobody, ...ANON });
    expect([...allowed.caller.permissions].sort()).toEqual(['read', 'write']);
    // With keys: no Authorization is anonymous when allowed; a wrong key is 401 all the same.
    const keyed = { keys: [KEY], ...ANON };
    expect((await contextFromRequest(rt, {}, keyed)).caller.userId).toBe('anonymous');
    await expect(contextFromRequest(rt, {}, { keys: [KEY] })).rejects.toMatchObject({
      status: 401,
    });
    await expect(
      contextFromRequest(rt, { authorization: 'Bearer wrong-key-000000000' }, keyed),
    ).rejects.toMatchObject({ status: 401 });
  });

  it('gives an identified caller read and write by default, and refuses an empty user id', async () => {
    const rt = open();
    const { caller } = await contextFromRequest(rt, {}, { identify: () => ({ userId: 'ada' }) });
    expect([...caller.permissions].sort()).toEqual(['read', 'write']);
    await expect(
      contextFromRequest(rt, {}, { identify: () => ({ userId: '' }) }),
    ).rejects.toBeInstanceOf(TypeError);
  });

  it('adds what contextOptions gives, keeping the correlation id in the metadata', async () => {
    const rt = open();
    const { ctx } = await contextFromRequest(
      rt,
      { 'x-correlation-id': 'c-1' },
      {
        ...ANON,
        contextOptions: (caller) => ({
          sessionId: `s-${caller.userId}`,
          permissions: { allowedAgents: ['planner'] },
          metadata: { team: 'trips', correlation_id: 'not-this' },
        }),
      },
    );
    expect(ctx.sessionId).toBe('s-anonymous');
    expect(ctx.canUseAgent('planner')).toBe(true);
    expect(ctx.canUseAgent('other')).toBe(false);
    expect(ctx.metadata).toEqual({ team: 'trips', correlation_id: 'c-1' });
  });

  it('cancels the context when the signal aborts, unless cancelOnDisconnect is false', async () => {
    const rt = open();
    const gone = new AbortController();
    const linked = await contextFromRequest(rt, {}, { ...ANON, signal: gone.signal });
    const unlinked = await contextFromRequest(
      rt,
      {},
      { ...ANON, signal: gone.signal, cancelOnDisconnect: false },
    );
    gone.abort(new CancelledError('client gone'));
    expect(linked.ctx.isCancelled()).toBe(true);
    expect(linked.ctx.cancelReason).toBeInstanceOf(CancelledError);
    expect(unlinked.ctx.isCancelled()).toBe(false);
  });

  it('rejects rather than throws on bad options', async () => {
    const rt = open();
    let pending: Promise<unknown> | undefined;
    expect(() => {
      pending = contextFromRequest(rt, {}, { ...ANON, maxTimeoutMs: -1 });
    }).not.toThrow();
    await expect(pending).rejects.toBeInstanceOf(RangeError);
  });
});
