/**
 * @module The one conformance suite of the bridges (`axon/express`, `axon/fastify`,
 * `axon/hono`): each integration test serves its framework on a real port with the two
 * routes below and runs this suite against it with a real HTTP client (fetch).
 *
 * Routes every bridge's app serves:
 * - `POST /invoke/:agent` — awaits `runtime.invoke(agent, 'hi', axon.ctx)` and answers
 *   {@link InvokeReply}.
 * - `POST /start/:agent` — starts the same invocation without waiting, hands its promise to
 *   `background`, and answers 202 at once.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AgentResult } from '../../../src/actors/agent-result.js';
import { defineAgent } from '../../../src/actors/define-agent.js';
import { SimulatedClock } from '../../../src/context/clock.js';
import type { ExecContext } from '../../../src/context/exec-context.js';
import type { Runtime } from '../../../src/runtime/runtime.js';
import type { ApiKey } from '../../../src/server/auth.js';
import { HttpError } from '../../../src/server/http-errors.js';
import type {
  AxonRequest,
  HeaderLookup,
  Identity,
} from '../../../src/server/contrib/request-context.js';
import { useTestServers } from '../../support/server.js';

/** What `POST /invoke/:agent` answers. */
export interface InvokeReply {
  readonly status: string;
  readonly output: unknown;
  readonly error: string | null;
  readonly runId: string;
  readonly stepId: string;
  readonly correlationId: string;
  readonly caller: string;
}

/** The options a framework's app passes to its bridge (`identify` adapted to its request). */
export interface BridgeTestOptions {
  readonly keys?: readonly ApiKey[];
  /** The test's identify, over the request's headers; the app calls it from its own. */
  readonly identify?: (headers: HeaderLookup) => Identity | null;
  readonly maxTimeoutMs?: number;
  readonly anonymous?: 'allow' | 'refuse';
}

/** A framework's app listening on a real port. */
export interface BridgeServer {
  readonly url: string;
  close(): Promise<void>;
}

/** Serves a framework's app with its bridge over `runtime`; `background` gets `/start`'s work. */
export type StartBridge = (
  runtime: Runtime,
  options: BridgeTestOptions,
  background: (work: Promise<AgentResult>) => void,
) => Promise<BridgeServer>;

/** `POST /invoke/:agent`'s body, from what the bridge attached and what the agent returned. */
export function invokeReply(axon: AxonRequest, result: AgentResult): InvokeReply {
  return {
    status: result.status,
    output: result.output,
    error: result.error?.code ?? null,
    runId: result.runId,
    stepId: result.stepId,
    correlationId: axon.correlationId,
    caller: axon.caller.userId,
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

/** Runs the conformance suite against the bridge `start` serves. */
export function bridgeConformance(name: string, start: StartBridge): void {
  describe(`${name} bridge (conformance)`, () => {
    // Each runtime on the project's store (PostgreSQL under `http-on-postgres`).
    const stores = useTestServers(`bridge-${name}`);
    const cleanups: (() => Promise<void>)[] = [];
    afterEach(async () => {
      for (const fn of cleanups.splice(0).reverse()) await fn();
    });

    /** A runtime with the test agents, its app listening, and what the agents saw. */
    async function serve(
      options: BridgeTestOptions = { anonymous: 'allow' },
      clock?: SimulatedClock,
    ) {
      const seen: ExecContext[] = [];
      const background: Promise<AgentResult>[] = [];
      let release: () => void = () => undefined;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const whoami = defineAgent({
        name: 'whoami',
        handler: (_input, ctx) => {
          seen.push(ctx);
          return { userId: ctx.userId, correlationId: ctx.metadata['correlation_id'] };
        },
      });
      // Runs until its context is cancelled or times out.
      const slow = defineAgent({
        name: 'slow',
        timeoutMs: 600_000,
        handler: async (_input, ctx) => {
          seen.push(ctx);
          await new Promise((resolve) => {
            ctx.signal.addEventListener('abort', resolve);
          });
          return 'stopped';
        },
      });
      const gated = defineAgent({
        name: 'gated',
        handler: async (_input, ctx) => {
          seen.push(ctx);
          await gate;
          return 'done';
        },
      });
      const runtime = stores.runtime({
        agents: [whoami, slow, gated],
        ...(clock ? { clock } : {}),
      });
      const server = await start(runtime, options, (work) => {
        background.push(work);
      });
      cleanups.push(() => runtime.close());
      cleanups.push(() => server.close());
      const post = (path: string, headers: Record<string, string> = {}, signal?: AbortSignal) =>
        fetch(`${server.url}${path}`, { method: 'POST', headers, ...(signal ? { signal } : {}) });
      return { runtime, seen, background, release, post };
    }

    const key = (): ApiKey => ({ key: `k-${randomUUID()}`, user_id: `user-${randomUUID()}` });

    it("gives the agent the key's user id, and echoes the request's correlation id", async () => {
      const k = key();
      const { post, seen } = await serve({ keys: [k] });
      const res = await post('/invoke/whoami', {
        authorization: `Bearer ${k.key}`,
        'x-correlation-id': 'corr-42',
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-correlation-id')).toBe('corr-42');
      const body = (await res.json()) as InvokeReply;
      expect(body).toMatchObject({
        status: 'success',
        output: { userId: k.user_id, correlationId: 'corr-42' },
        caller: k.user_id,
        correlationId: 'corr-42',
      });
      expect(seen[0]?.userId).toBe(k.user_id);
    });

    it('makes a correlation id when the request has none, or a malformed one', async () => {
      const { post } = await serve();
      for (const headers of [{}, { 'x-correlation-id': 'has spaces and ; semicolons' }]) {
        const res = await post('/invoke/whoami', headers);
        const id = res.headers.get('x-correlation-id') ?? '';
        expect(id).toMatch(UUID);
        expect(((await res.json()) as InvokeReply).output).toMatchObject({ correlationId: id });
      }
    });

    it('gives the agent the user id identify returns', async () => {
      const { post } = await serve({
        identify: (headers) => {
          const user = headers('x-user');
          return user === undefined ? null : { userId: user };
        },
      });
      const res = await post('/invoke/whoami', { 'x-user': 'ada' });
      expect(res.status).toBe(200);
      expect((await res.json()) as InvokeReply).toMatchObject({
        output: { userId: 'ada' },
        caller: 'ada',
      });
    });

    it("is anonymous under anonymous: 'allow', and refused without it, keys or identify", async () => {
      const { post } = await serve();
      const body = (await (await post('/invoke/whoami')).json()) as InvokeReply;
      expect(body).toMatchObject({ status: 'success', output: { userId: 'anonymous' } });
      const bare = stores.runtime();
      cleanups.push(() => bare.close());
      await expect(start(bare, {}, () => undefined)).rejects.toThrow(
        /give keys or identify to say who calls, or anonymous: 'allow'/,
      );
    });

    it("answers a bad key, or none, with 401 and API.md's error body, running nothing", async () => {
      const { post, seen } = await serve({ keys: [key()] });
      for (const headers of [
        { authorization: 'Bearer not-a-configured-key', 'x-correlation-id': 'c-401' },
        { 'x-correlation-id': 'c-401' },
      ]) {
        const res = await post('/invoke/whoami', headers);
        expect(res.status).toBe(401);
        expect(res.headers.get('x-correlation-id')).toBe('c-401');
        expect(await res.json()).toEqual({
          error: { code: 'UNAUTHORIZED', message: expect.any(String) as string, details: {} },
          correlation_id: 'c-401',
        });
      }
      expect(seen).toHaveLength(0);
    });

    it('answers 401 when identify names nobody, and what identify throws as its error', async () => {
      const { post, seen } = await serve({
        identify: (headers) => {
          const user = headers('x-user');
          if (user === 'banned') throw new HttpError(403, 'FORBIDDEN', 'banned');
          if (user === 'buggy') throw new Error('a secret in a bug');
          return user === undefined ? null : { userId: user };
        },
      });
      const nobody = await post('/invoke/whoami');
      expect(nobody.status).toBe(401);
      expect(((await nobody.json()) as { error: { code: string } }).error.code).toBe(
        'UNAUTHORIZED',
      );
      const banned = await post('/invoke/whoami', { 'x-user': 'banned' });
      expect(banned.status).toBe(403);
      expect(await banned.json()).toMatchObject({
        error: { code: 'FORBIDDEN', message: 'banned' },
      });
      const buggy = await post('/invoke/whoami', { 'x-user': 'buggy' });
      expect(buggy.status).toBe(500);
      expect(await buggy.json()).toMatchObject({
        error: { code: 'INTERNAL', message: 'internal error' },
      });
      expect(seen).toHaveLength(0);
    });

    it('answers a malformed deadline header with 400 INVALID_PARAMS', async () => {
      const { post, seen } = await serve();
      for (const value of ['soon', '-5', '1.5', '0']) {
        const res = await post('/invoke/whoami', {
          'x-request-timeout-ms': value,
          'x-correlation-id': 'c-400',
        });
        expect(res.status).toBe(400);
        expect(await res.json()).toEqual({
          error: {
            code: 'INVALID_PARAMS',
            message: expect.any(String) as string,
            details: { header: 'x-request-timeout-ms' },
          },
          correlation_id: 'c-400',
        });
      }
      expect(seen).toHaveLength(0);
    });

    it('ends a slow agent with TIMEOUT at the deadline the header asks for', async () => {
      const clock = new SimulatedClock(0);
      const { post, seen } = await serve({ anonymous: 'allow' }, clock);
      const pending = post('/invoke/slow', { 'x-request-timeout-ms': '5000' });
      // The first request on a fresh store waits for its schema (PostgreSQL's takes seconds).
      await vi.waitFor(
        () => {
          expect(seen).toHaveLength(1);
        },
        { timeout: 20_000 },
      );
      expect(seen[0]?.deadline).toBe(5_000);
      clock.advance(5_000);
      const body = (await (await pending).json()) as InvokeReply;
      expect(body).toMatchObject({ status: 'timeout', error: 'TIMEOUT' });
    });

    it('cuts a deadline past maxTimeoutMs to it', async () => {
      const clock = new SimulatedClock(0);
      const { post, seen } = await serve({ anonymous: 'allow', maxTimeoutMs: 1_000 }, clock);
      const pending = post('/invoke/slow', { 'x-request-timeout-ms': '3600000' });
      // The first request on a fresh store waits for its schema (PostgreSQL's takes seconds).
      await vi.waitFor(
        () => {
          expect(seen).toHaveLength(1);
        },
        { timeout: 20_000 },
      );
      expect(seen[0]?.deadline).toBe(1_000);
      clock.advance(1_000);
      expect(((await (await pending).json()) as InvokeReply).error).toBe('TIMEOUT');
    });

    it('carries the trace id of a W3C traceparent into the context, and ignores a malformed one', async () => {
      const { post, seen, runtime } = await serve();
      const res = await post('/invoke/whoami', {
        traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01`,
      });
      const { runId } = (await res.json()) as InvokeReply;
      await post('/invoke/whoami', { traceparent: `00-${TRACE_ID}-bad-01` });
      expect(seen[0]?.traceId).toBe(TRACE_ID);
      expect((await runtime.getRun(runId))?.trace_id).toBe(TRACE_ID);
      expect(seen[1]?.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(seen[1]?.traceId).not.toBe(TRACE_ID);
    });

    it('cancels the running step when the client disconnects: its record ends cancelled', async () => {
      const { post, seen, runtime } = await serve();
      const client = new AbortController();
      const pending = post('/invoke/slow', {}, client.signal);
      // The first request on a fresh store waits for its schema (PostgreSQL's takes seconds).
      await vi.waitFor(
        () => {
          expect(seen).toHaveLength(1);
        },
        { timeout: 20_000 },
      );
      const stepId = seen[0]?.stepId ?? '';
      const runId = seen[0]?.runId ?? '';
      expect((await runtime.getStep(stepId))?.status).toBe('running');
      client.abort();
      await expect(pending).rejects.toThrow();
      await vi.waitFor(
        async () => {
          expect((await runtime.getStep(stepId))?.status).toBe('cancelled');
        },
        { timeout: 10_000 },
      );
      expect((await runtime.getStep(stepId))?.error?.code).toBe('CANCELLED');
      await vi.waitFor(async () => {
        expect((await runtime.getRun(runId))?.status).toBe('cancelled');
      });
    });

    it('does not cancel work a route leaves running once its response has finished', async () => {
      const { post, seen, background, release } = await serve();
      const res = await post('/start/gated');
      expect(res.status).toBe(202);
      await res.arrayBuffer();
      // The first request on a fresh store waits for its schema (PostgreSQL's takes seconds).
      await vi.waitFor(
        () => {
          expect(seen).toHaveLength(1);
        },
        { timeout: 20_000 },
      );
      release();
      const [work] = background;
      const result = await work;
      expect(result?.status).toBe('success');
      expect(result?.output).toBe('done');
    });
  });
}
