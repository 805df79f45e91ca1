/**
 * Issue 46, §7, on a fleet: `axon serve --redis` and an `axon worker` with 10 000 sleeping
 * actors and 1 000 queued messages; kill -9 the worker, start another: every timer fires once
 * (BullMQ's delayed jobs) and every message the API acknowledged (202) is handled once, in
 * order. Real processes, real HTTP, the fleet's Redis, API.md's example agent `follow-up`. The
 * same proof as `durable-crash.int.test.ts` (kill -9 of `axon serve` on its data dir).
 */
import { describe, expect, it } from 'vitest';
import { FAST_REPLICA_FLAGS, useTestFleet } from '../support/fleet.js';
import { pooled } from '../support/pooled.js';
import { request } from '../support/server.js';

const SLEEPERS = Number(process.env['AXON_TEST_SLEEPERS'] ?? '10000');
/** Actors with queued messages behind their sleep, and how many each. */
const BUSY = Number(process.env['AXON_TEST_BUSY'] ?? '100');
const QUEUED_EACH = 10;
/** Long enough for every message to be sent, and the kill and the new worker, to fall inside it. */
const SLEEP_MS = Number(process.env['AXON_TEST_SLEEP_MS'] ?? '90000');

const fleet = useTestFleet('durable-fleet-crash');

interface ActorView {
  readonly state: { readonly log: string[] } | null;
  readonly mailbox_depth: number;
  readonly status: string;
  readonly run_id: string;
}

describe('kill -9 a fleet replica with sleeping actors and queued messages', () => {
  it('fires every timer once and handles every acknowledged message once, in order, on the replica after it', async () => {
    const api = await fleet.api();
    const first = await fleet.worker('main', [], FAST_REPLICA_FLAGS);
    const keys = Array.from({ length: SLEEPERS }, (_, i) => `s${i}`);
    await pooled(keys, 32, async (key) => {
      const res = await request(api.url, 'POST', `/v1/agents/follow-up/${key}/messages`, {
        message: { text: `slept-${key}`, after_ms: SLEEP_MS },
        client_token: `sleep-${key}`,
      });
      expect(res.status, res.text).toBe(202);
    });
    const busy = keys.slice(0, BUSY);
    await pooled(busy, 16, async (key) => {
      for (let j = 0; j < QUEUED_EACH; j++) {
        const res = await request(api.url, 'POST', `/v1/agents/follow-up/${key}/messages`, {
          message: { text: `q${j}`, after_ms: 0 },
        });
        expect(res.status, res.text).toBe(202);
      }
    });
    // Every sleeper has begun its sleep before the kill (its message waits in the store).
    await expect
      .poll(
        async () =>
          (
            (await request(api.url, 'GET', `/v1/agents/follow-up/${keys.at(-1) ?? ''}`))
              .body as ActorView
          ).status,
        { timeout: 120_000, interval: 500 },
      )
      .toBe('waiting');
    const sample = await request(api.url, 'GET', `/v1/agents/follow-up/${busy[0] ?? ''}`);
    expect(sample.body).toMatchObject({ status: 'waiting', mailbox_depth: QUEUED_EACH });
    const sentAt = Date.now();
    first.child.kill('SIGKILL');
    await first.exited;
    await fleet.worker('main', [], FAST_REPLICA_FLAGS);

    const expected = (key: string): string[] =>
      busy.includes(key)
        ? [`slept-${key}`, ...Array.from({ length: QUEUED_EACH }, (_, j) => `q${j}`)]
        : [`slept-${key}`];
    const pending = new Set(keys);
    // A fleet under load wakes some hundreds a second: 10 000 timers may take minutes.
    const deadline = sentAt + SLEEP_MS + 360_000;
    while (pending.size > 0 && Date.now() < deadline) {
      await pooled([...pending], 32, async (key) => {
        const res = await request(api.url, 'GET', `/v1/agents/follow-up/${key}`);
        const body = res.body as ActorView;
        if ((body.state?.log.length ?? 0) >= expected(key).length && body.mailbox_depth === 0) {
          pending.delete(key);
        }
      });
      if (pending.size > 0) await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    expect(pending.size).toBe(0);
    // None twice, none lost, in order.
    await pooled(keys, 32, async (key) => {
      const res = await request(api.url, 'GET', `/v1/agents/follow-up/${key}`);
      expect((res.body as ActorView).state?.log).toEqual(expected(key));
    });
    // Each message's step ran once: one step per message in the actor's run.
    const run = (
      (await request(api.url, 'GET', `/v1/agents/follow-up/${busy[0] ?? ''}`)).body as ActorView
    ).run_id;
    const steps = (await request(api.url, 'GET', `/v1/runs/${run}/steps`)).body as {
      status: string;
    }[];
    expect(steps).toHaveLength(1 + QUEUED_EACH);
    expect(steps.every((s) => s.status === 'succeeded')).toBe(true);
  }, 720_000);
});
