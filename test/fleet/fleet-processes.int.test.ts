/**
 * The fleet as an operator runs it: `axon serve --redis` and three `axon worker` processes on
 * loopback, two pools of different tags. Steps of mixed placement (auto, pin, affinity —
 * PLACE-5001) each run exactly once on a pool their run allows, with a complete log; a
 * replica killed with SIGKILL mid-step leaves its step to another replica after BullMQ's
 * stall check, and the client's SSE stream goes on with every `seq` once (STREAM-2001); a
 * replica asked to stop hands its step back. All of it on one Redis and again on a Redis
 * Cluster of three masters.
 */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { StepEvent } from '../../src/streams/events.js';
import { FAST_REPLICA_FLAGS, useTestFleet, type WorkerProcess } from '../support/fleet.js';
import { sql } from '../support/postgres.js';
import { redisUrl } from '../support/redis.js';
import { parseSse } from '../support/server.js';

/** The keys of the tests' Redis that match `pattern`. */
async function redisKeys(pattern: string): Promise<string[]> {
  const redis = new Redis(redisUrl());
  try {
    return await redis.keys(pattern);
  } finally {
    redis.disconnect();
  }
}

/** The events of an SSE text: each frame's data with its type (the frame's `event`). */
function eventsOf(text: string): StepEvent[] {
  return parseSse(text).frames.map((f) => ({ ...f.data, type: f.event }) as unknown as StepEvent);
}

const FAST = FAST_REPLICA_FLAGS;

interface Api {
  readonly url: string;
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }>;
}

async function apiOf(url: string): Promise<Api> {
  return {
    url,
    async call(method, path, body) {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      return { status: res.status, body: text === '' ? null : (JSON.parse(text) as unknown) };
    },
  };
}

const llm = (
  tokens: number,
  token: string | null = null,
  content = 'hi',
): Record<string, unknown> => ({
  type: 'llm_call',
  ...(token === null ? {} : { client_token: token }),
  input: { messages: [{ role: 'user', content }], params: { max_tokens: tokens } },
});

async function newRun(api: Api, flowId: string, placement: unknown, seed = 7): Promise<string> {
  const res = await api.call('POST', `/v1/flows/${flowId}/runs`, {
    seed,
    pool_policy: { placement },
  });
  expect(res.status).toBe(201);
  return (res.body as { run_id: string }).run_id;
}

/** The whole log of a step over SSE (it has ended once this resolves). */
async function streamed(api: Api, stepId: string): Promise<StepEvent[]> {
  const res = await fetch(`${api.url}/v1/steps/${stepId}/stream`);
  return eventsOf(await res.text());
}

/**
 * Follows a step's SSE stream to its end, telling `seen` the events so far after each chunk;
 * resolves with them all.
 */
async function follow(
  api: Api,
  stepId: string,
  seen: (events: StepEvent[]) => void,
): Promise<StepEvent[]> {
  const stream = await fetch(`${api.url}/v1/steps/${stepId}/stream`);
  const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return eventsOf(text);
    text += decoder.decode(value, { stream: true });
    seen(eventsOf(text));
  }
}

/** A step's log is whole: seq 1..n once each, one `started` first, one `end` last. */
function expectWholeLog(events: readonly StepEvent[], tokens: number): void {
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  expect(events.filter((e) => e.type === 'started')).toHaveLength(1);
  expect(events[0]?.type).toBe('started');
  expect(events.at(-1)?.type).toBe('end');
  const indexes = events.flatMap((e) => (e.type === 'token' ? [e.i] : []));
  expect(indexes).toEqual([...Array(tokens).keys()]);
}

const poolOf = (events: readonly StepEvent[]): string =>
  (events[0] as { pool_id?: string }).pool_id ?? '';
const replicaOf = (events: readonly StepEvent[]): string =>
  (events[0] as { provenance: { replica_id: string } }).provenance.replica_id;
const textOf = (events: readonly StepEvent[]): string =>
  events.flatMap((e) => (e.type === 'token' ? [e.t] : [])).join('');

/**
 * A run's `budget_usage.tokens_out`, once it is `expected` or 5 s have passed: a step's use
 * enters its run's just after its log ends (the replica that ran it adds it).
 */
async function tokensOutOnceAdded(api: Api, runId: string, expected: number): Promise<number> {
  const read = async () =>
    ((await api.call('GET', `/v1/runs/${runId}`)).body as { budget_usage: { tokens_out: number } })
      .budget_usage.tokens_out;
  for (let i = 0; i < 100; i++) {
    if ((await read()) === expected) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return read();
}

async function waitForReplicas(api: Api, n: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const pools = (await api.call('GET', '/v1/pools')).body as { replicas: unknown[] }[];
    if (pools.reduce((k, p) => k + p.replicas.length, 0) === n) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the fleet never had ${n} replicas`);
}

// The same fleet on one Redis, on a Redis Cluster of three masters (redis.cluster), and on one
// Redis with its records in PostgreSQL (store.postgres: only the queues, streams, cancels and
// registry in Redis).
describe.each([
  ['one Redis', false, false],
  ['a Redis Cluster', true, false],
  ['one Redis, its records in PostgreSQL', false, true],
] as const)(
  'a fleet of processes on %s: axon serve and three axon workers',
  (_, cluster, postgres) => {
    const fleet = useTestFleet(
      cluster ? 'fleet-procs-cluster' : postgres ? 'fleet-procs-pg' : 'fleet-procs',
      '',
      { cluster, postgres },
    );
    let api: Api;
    let gpu1: WorkerProcess;
    let gpu2: WorkerProcess;
    let cpu: WorkerProcess;
    let flowId: string;

    it('starts, and GET /v1/pools shows two pools and three replicas', async () => {
      const env = { AXON_SCRIPTED_TOKEN_MS: '2' };
      const [server, a, b, c] = await Promise.all([
        fleet.api(),
        fleet.worker('gpu', ['gpu', 'a100'], [...FAST, '--concurrency', '8'], env),
        fleet.worker('gpu', ['gpu', 'a100'], [...FAST, '--concurrency', '8'], env),
        fleet.worker(
          'cpu',
          ['cpu'],
          [...FAST, '--concurrency', '8', '--vram-mb', '1024', '--features', 'avx2,fp16'],
          env,
        ),
      ]);
      api = await apiOf(server.url);
      [gpu1, gpu2, cpu] = [a, b, c];
      if (fleet.schema) {
        // Each process says where the records are.
        expect(server.output()).toMatch(
          new RegExp(`store in PostgreSQL at postgres://\\S+, schema ${fleet.schema}; fleet on `),
        );
        expect(a.output()).toContain(`records in PostgreSQL at `);
      }
      await waitForReplicas(api, 3);
      const pools = (await api.call('GET', '/v1/pools')).body as {
        pool_id: string;
        tags: string[];
        capabilities: Record<string, unknown>;
        replicas: { replica_id: string }[];
      }[];
      expect(pools.map((p) => [p.pool_id, p.tags, p.replicas.length])).toEqual([
        ['cpu', ['cpu'], 1],
        ['gpu', ['gpu', 'a100'], 2],
      ]);
      expect(pools[0]?.capabilities).toMatchObject({
        vram_mb: 1024,
        features: ['avx2', 'fp16'],
        arch: process.arch,
      });
      expect(pools[1]?.replicas.map((r) => r.replica_id).sort()).toEqual(
        [gpu1.replicaId, gpu2.replicaId].sort(),
      );
      const flow = await api.call('POST', '/v1/flows', { name: 'fleet' });
      flowId = (flow.body as { flow_id: string }).flow_id;
    });

    it('runs 200 steps of mixed placement, each exactly once on a pool its run allows, each log whole', async () => {
      const placements: [unknown, string[]][] = [
        ['auto', ['cpu', 'gpu']],
        [{ pin: 'gpu' }, ['gpu']],
        [{ pin: 'cpu' }, ['cpu']],
        [{ affinity: { tags: ['a100'] } }, ['gpu']],
        [{ affinity: { tags: ['cpu'] } }, ['cpu']],
      ];
      const runs = await Promise.all(placements.map(([p]) => newRun(api, flowId, p)));
      const submitted = await Promise.all(
        runs.flatMap((runId, r) =>
          Array.from({ length: 40 }, async (_, i) => {
            const res = await api.call('POST', `/v1/runs/${runId}/steps`, llm(3, `t${i}`, `m${i}`));
            expect(res.status).toBe(201);
            return { r, runId, token: `t${i}`, stepId: (res.body as { step_id: string }).step_id };
          }),
        ),
      );
      expect(new Set(submitted.map((s) => s.stepId)).size).toBe(200);
      const logs = await Promise.all(submitted.map((s) => streamed(api, s.stepId)));
      const replicas = new Set<string>();
      logs.forEach((events, k) => {
        const { r } = submitted[k] as { r: number };
        expectWholeLog(events, 3);
        expect((placements[r] as [unknown, string[]])[1]).toContain(poolOf(events));
        replicas.add(replicaOf(events));
      });
      // Both replicas of gpu took steps: the queue spreads them.
      expect(replicas).toEqual(new Set([gpu1.replicaId, gpu2.replicaId, cpu.replicaId]));
      // Each step's record ended once, succeeded, on the pool of its first event.
      const records = await Promise.all(
        submitted.map(async (s) => (await api.call('GET', `/v1/steps/${s.stepId}`)).body),
      );
      records.forEach((record, k) => {
        expect(record).toMatchObject({
          status: 'succeeded',
          placement_decision: { pool_id: poolOf(logs[k] as StepEvent[]) },
        });
      });
      if (fleet.schema) {
        // The records are in PostgreSQL, the same that every process read and wrote: each
        // step's log there, whole; nothing of them under the fleet's prefix in Redis.
        // Schema version 5: a step's first commit's events in its row (`log`), each later
        // commit's one chunk beside it.
        const rows = await sql<{ step_id: string; n: string }>(
          `SELECT s.step_id, COALESCE(json_array_length(s.log), 0) + COALESCE((SELECT
             sum(json_array_length(c.events)) FROM "${fleet.schema}".chunks c
             WHERE c.step_id = s.step_id), 0) AS n
           FROM "${fleet.schema}".steps s WHERE s.step_id = ANY($1)`,
          [submitted.map((s) => s.stepId)],
        );
        const streamedLength = new Map(submitted.map((s, k) => [s.stepId, logs[k]?.length]));
        expect(rows).toHaveLength(200);
        rows.forEach((row) => {
          expect(Number(row.n)).toBe(streamedLength.get(row.step_id));
        });
        expect(await redisKeys(`${fleet.prefix}step:*`)).toEqual([]);
      }
      // The same submissions again: found by their tokens, nothing runs (NERVE-4003).
      const again = await Promise.all(
        submitted
          .slice(0, 20)
          .map((s) => api.call('POST', `/v1/runs/${s.runId}/steps`, llm(3, s.token, 'm'))),
      );
      again.forEach((res, k) => {
        expect(res.status).toBe(200);
        expect((res.body as { step_id: string }).step_id).toBe(submitted[k]?.stepId);
      });
    });

    it('a replica killed mid-step: another replica goes on with it, and the stream has every seq once', async () => {
      const runId = await newRun(api, flowId, { pin: 'gpu' }, 99);
      const tokens = 400;
      const res = await api.call(
        'POST',
        `/v1/runs/${runId}/steps`,
        llm(tokens, 'long', 'a long one'),
      );
      const stepId = (res.body as { step_id: string }).step_id;
      // Read the stream as it comes; kill the replica running the step once tokens flow.
      let killed: WorkerProcess | null = null;
      const events = await follow(api, stepId, (so) => {
        if (killed !== null || so.filter((e) => e.type === 'token').length < 20) return;
        const replica = replicaOf(so);
        killed = [gpu1, gpu2].find((w) => w.replicaId === replica) ?? null;
        expect(killed).not.toBeNull();
        killed?.child.kill('SIGKILL');
      });
      expectWholeLog(events, tokens);
      // The same step in a run of the same seed, undisturbed: the same text, token for token.
      const reference = await newRun(api, flowId, { pin: 'gpu' }, 99);
      const ref = await api.call(
        'POST',
        `/v1/runs/${reference}/steps`,
        llm(tokens, 'long', 'a long one'),
      );
      const refEvents = await streamed(api, (ref.body as { step_id: string }).step_id);
      expect(textOf(events)).toBe(textOf(refEvents));
      const step = (await api.call('GET', `/v1/steps/${stepId}`)).body as { status: string };
      expect(step.status).toBe('succeeded');
      // The dead replica leaves the pool when its heartbeat runs out.
      await waitForReplicas(api, 2);
    });

    it('a replica asked to stop (SIGTERM) hands back the step it cannot finish in its grace, and another goes on with it', async () => {
      // A replica of its own, with a short grace, alone in a pool of two with a slow one.
      const env = { AXON_SCRIPTED_TOKEN_MS: '5' };
      const leaving = await fleet.worker('slow', ['slow'], [...FAST, '--grace-ms', '100'], env);
      await waitForReplicas(api, 3);
      const runId = await newRun(api, flowId, { pin: 'slow' }, 5);
      const tokens = 300;
      const res = await api.call('POST', `/v1/runs/${runId}/steps`, llm(tokens, 'handed', 'x'));
      const stepId = (res.body as { step_id: string }).step_id;
      // Once its tokens flow, the replica is asked to stop; a second replica joins.
      let asked = false;
      const following = follow(api, stepId, (so) => {
        if (asked || !so.some((e) => e.type === 'token')) return;
        asked = true;
        leaving.child.kill('SIGTERM');
      });
      const exit = await leaving.exited;
      expect(exit.code).toBe(0);
      expect(leaving.output()).toMatch(/stopped \(0 steps finished, 1 handed back\)/);
      const taker = await fleet.worker('slow', ['slow'], FAST, env);
      const events = await following;
      expectWholeLog(events, tokens);
      expect(replicaOf(events)).toBe(leaving.replicaId);
      const end = events.at(-1) as unknown as { provenance: { replica_id: string } };
      expect(end.provenance.replica_id).toBe(taker.replicaId);
    });

    it('two API processes given the same client token at once make one step, run once', async () => {
      const second = await apiOf((await fleet.api()).url);
      const runId = await newRun(api, flowId, 'auto', 11);
      const pairs = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          Promise.all([
            api.call('POST', `/v1/runs/${runId}/steps`, llm(2, `same-${i}`)),
            second.call('POST', `/v1/runs/${runId}/steps`, llm(2, `same-${i}`)),
          ]),
        ),
      );
      for (const [a, b] of pairs) {
        const ids = [a, b].map((r) => (r.body as { step_id: string }).step_id);
        expect(ids[0]).toBe(ids[1]);
        // One made it (201), the other found it (200).
        expect([a.status, b.status].sort()).toEqual([200, 201]);
        const events = await streamed(second, ids[0] as string);
        expectWholeLog(events, 2);
      }
    });
    it("budgets hold across processes (POLICY-3000): eight parallel steps of 40 tokens out, sent to two API processes and run on two pools, stream at most the run's 100", async () => {
      const second = await apiOf((await fleet.api()).url);
      const res = await api.call('POST', `/v1/flows/${flowId}/runs`, {
        seed: 3,
        budgets: { max_tokens_out: 100 },
      });
      const runId = (res.body as { run_id: string }).run_id;
      const posted = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          (i % 2 ? api : second).call('POST', `/v1/runs/${runId}/steps`, {
            ...llm(40),
            placement: { pin: i % 4 < 2 ? 'gpu' : 'cpu' },
          }),
        ),
      );
      const logs = await Promise.all(
        posted.map((r) => streamed(api, (r.body as { step_id: string }).step_id)),
      );
      const tokens = logs.flat().filter((e) => e.type === 'token').length;
      expect(tokens).toBeGreaterThanOrEqual(80);
      expect(tokens).toBeLessThanOrEqual(100);
      for (const events of logs) {
        const last = events.at(-1);
        if (last?.type !== 'end')
          expect(last).toMatchObject({ type: 'error', code: 'BUDGET_EXCEEDED' });
      }
      expect(new Set(logs.map(poolOf))).toEqual(new Set(['gpu', 'cpu']));
      expect(await tokensOutOnceAdded(second, runId, tokens)).toBe(tokens);
    });

    it("a replica killed holding a reservation: the replica that takes its step over reserves afresh, the dead one's is dropped, the run counts the step once", async () => {
      const env = { AXON_SCRIPTED_TOKEN_MS: '2' };
      const pair = await Promise.all([
        fleet.worker('budget', [], FAST, env),
        fleet.worker('budget', [], FAST, env),
      ]);
      for (let i = 0; ; i++) {
        const pools = (await api.call('GET', '/v1/pools')).body as {
          pool_id: string;
          replicas: unknown[];
        }[];
        if (pools.find((p) => p.pool_id === 'budget')?.replicas.length === 2) break;
        if (i > 100) throw new Error('the budget pool never had its two replicas');
        await new Promise((r) => setTimeout(r, 100));
      }
      const res = await api.call('POST', `/v1/flows/${flowId}/runs`, {
        seed: 4,
        budgets: { max_tokens_out: 500 },
        pool_policy: { placement: { pin: 'budget' } },
      });
      const runId = (res.body as { run_id: string }).run_id;
      // 400 of 500: a second reservation of it fits only once the first is gone.
      const posted = await api.call('POST', `/v1/runs/${runId}/steps`, llm(400));
      const stepId = (posted.body as { step_id: string }).step_id;
      let killed = false;
      const events = await follow(api, stepId, (so) => {
        if (killed || so.filter((e) => e.type === 'token').length < 20) return;
        killed = true;
        pair.find((w) => w.replicaId === replicaOf(so))?.child.kill('SIGKILL');
      });
      expect(killed).toBe(true);
      expectWholeLog(events, 400);
      expect(await tokensOutOnceAdded(api, runId, 400)).toBe(400);
    });
  },
);
