/**
 * Issue 46, §7: kill -9 `axon serve` holding 10 000 sleeping actors and 1 000 queued messages;
 * after it starts again on the same data dir, every timer fires once and every message the
 * server acknowledged (202) is handled once, in order. Real processes, real HTTP, the SQLite
 * data dir `axon serve` runs on, API.md's example agent `follow-up`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { spawnAxon, type FleetProcess } from '../support/axon-process.js';
import { pooled } from '../support/pooled.js';
import { request } from '../support/server.js';

const SLEEPERS = Number(process.env['AXON_TEST_SLEEPERS'] ?? '10000');
/** Actors with queued messages behind their sleep, and how many each. */
const BUSY = Number(process.env['AXON_TEST_BUSY'] ?? '100');
const QUEUED_EACH = 10;
/** Long enough for every message to be sent, and the kill and the restart, to fall inside it. */
const SLEEP_MS = Number(process.env['AXON_TEST_SLEEP_MS'] ?? '90000');

const root = mkdtempSync(join(tmpdir(), 'axon-durable-crash-'));
const spawned: FleetProcess[] = [];
afterEach(async () => {
  for (const p of spawned.splice(0)) {
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await p.exited;
  }
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

async function serve(dir: string): Promise<{ url: string; process: FleetProcess }> {
  const { process, match } = await spawnAxon(
    ['serve', '--port', '0', '--data-dir', dir],
    { AXON_LOG_LEVEL: 'warn' },
    /listening on (http:\/\/\S+) /,
    spawned,
  );
  return { url: match[1] ?? '', process };
}

describe('kill -9 axon serve with sleeping actors and queued messages', () => {
  it('fires every timer once and handles every acknowledged message once, in order, after the restart', async () => {
    const dir = join(root, 'data');
    const first = await serve(dir);
    const keys = Array.from({ length: SLEEPERS }, (_, i) => `s${i}`);
    // Every actor sleeps: its message waits in the store.
    await pooled(keys, 32, async (key) => {
      const res = await request(first.url, 'POST', `/v1/agents/follow-up/${key}/messages`, {
        message: { text: `slept-${key}`, after_ms: SLEEP_MS },
        client_token: `sleep-${key}`,
      });
      expect(res.status, res.text).toBe(202);
    });
    // Messages queued behind the sleeping ones, acknowledged one by one, in order per actor.
    const busy = keys.slice(0, BUSY);
    await pooled(busy, 16, async (key) => {
      for (let j = 0; j < QUEUED_EACH; j++) {
        const res = await request(first.url, 'POST', `/v1/agents/follow-up/${key}/messages`, {
          message: { text: `q${j}`, after_ms: 0 },
        });
        expect(res.status, res.text).toBe(202);
      }
    });
    const sample = await request(first.url, 'GET', `/v1/agents/follow-up/${busy[0] ?? ''}`);
    expect(sample.body).toMatchObject({ status: 'waiting', mailbox_depth: QUEUED_EACH });
    const sentAt = Date.now();
    first.process.child.kill('SIGKILL');
    await first.process.exited;

    const second = await serve(dir);
    // Every actor's timer fires once; the busy ones then handle their queue, in order.
    const expected = (key: string): string[] =>
      busy.includes(key)
        ? [`slept-${key}`, ...Array.from({ length: QUEUED_EACH }, (_, j) => `q${j}`)]
        : [`slept-${key}`];
    const pending = new Set(keys);
    const deadline = sentAt + SLEEP_MS + 90_000;
    while (pending.size > 0 && Date.now() < deadline) {
      await pooled([...pending], 32, async (key) => {
        const res = await request(second.url, 'GET', `/v1/agents/follow-up/${key}`);
        const body = res.body as {
          state: { log: string[] };
          mailbox_depth: number;
          status: string;
        };
        if (body.state.log.length >= expected(key).length && body.mailbox_depth === 0) {
          pending.delete(key);
        }
      });
      if (pending.size > 0) await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    expect(pending.size).toBe(0);
    // None before its time, none twice, none lost, in order.
    expect(Date.now()).toBeGreaterThanOrEqual(sentAt);
    await pooled(keys, 32, async (key) => {
      const res = await request(second.url, 'GET', `/v1/agents/follow-up/${key}`);
      expect((res.body as { state: { log: string[] } }).state.log).toEqual(expected(key));
    });
    // Each sleeping message's step ran once: one step per message in the actor's run.
    const run = (
      (await request(second.url, 'GET', `/v1/agents/follow-up/${busy[0] ?? ''}`)).body as {
        run_id: string;
      }
    ).run_id;
    const steps = (await request(second.url, 'GET', `/v1/runs/${run}/steps`)).body as {
      status: string;
    }[];
    expect(steps).toHaveLength(1 + QUEUED_EACH);
    expect(steps.every((s) => s.status === 'succeeded')).toBe(true);
  }, 360_000);
});
