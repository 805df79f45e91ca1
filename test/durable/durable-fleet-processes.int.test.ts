/**
 * Durable agents on a fleet of real processes (issue 46, §5 and §7): `axon serve --redis` and
 * `axon worker`s, the actors' module loaded by `axon.yaml`'s `durable_agents:`. Kill -9 the
 * replica holding an actor mid-message: another goes on with its messages, in order, none
 * twice. Freeze it (SIGSTOP) past its lease instead: another takes the actor over, and the
 * thawed replica writes nothing for it.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { FAST_REPLICA_FLAGS, useTestFleet } from '../support/fleet.js';
import { request } from '../support/server.js';

const fixture = fileURLToPath(new URL('../fixtures/durable-slow.ts', import.meta.url));
const fleet = useTestFleet(
  'durable-processes',
  `durable_agents:\n  - { module: ${JSON.stringify(fixture)}, export: slow }\n`,
);

const MESSAGES = 30;

async function seen(url: string, key: string): Promise<number[]> {
  const res = await request(url, 'GET', `/v1/agents/slow/${key}`);
  return res.status === 200 ? (res.body as { state: { seen: number[] } }).state.seen : [];
}

async function sendAll(url: string, key: string): Promise<void> {
  for (let n = 0; n < MESSAGES; n++) {
    const res = await request(url, 'POST', `/v1/agents/slow/${key}/messages`, {
      message: { n, ms: 150 },
    });
    expect(res.status, res.text).toBe(202);
  }
}

const all = Array.from({ length: MESSAGES }, (_, n) => n);

describe('durable agents on a fleet of processes', () => {
  it('goes on with an actor on another replica after kill -9 of the one holding it: in order, none twice', async () => {
    const api = await fleet.api();
    const first = await fleet.worker('main', [], FAST_REPLICA_FLAGS);
    await sendAll(api.url, 'killed');
    await expect
      .poll(async () => (await seen(api.url, 'killed')).length, { timeout: 60_000 })
      .toBeGreaterThanOrEqual(3);
    await fleet.worker('main', [], FAST_REPLICA_FLAGS);
    first.child.kill('SIGKILL');
    await first.exited;
    await expect
      .poll(async () => (await seen(api.url, 'killed')).length, { timeout: 90_000, interval: 500 })
      .toBe(MESSAGES);
    expect(await seen(api.url, 'killed')).toEqual(all);
  }, 200_000);

  it('a frozen replica (SIGSTOP) thawed after another took its actor over writes nothing for it', async () => {
    const api = await fleet.api();
    const frozen = await fleet.worker('main', [], FAST_REPLICA_FLAGS);
    await sendAll(api.url, 'frozen');
    await expect
      .poll(async () => (await seen(api.url, 'frozen')).length, { timeout: 60_000 })
      .toBeGreaterThanOrEqual(3);
    await fleet.worker('main', [], FAST_REPLICA_FLAGS);
    frozen.child.kill('SIGSTOP');
    await expect
      .poll(async () => (await seen(api.url, 'frozen')).length, { timeout: 90_000, interval: 500 })
      .toBe(MESSAGES);
    frozen.child.kill('SIGCONT');
    // What it was handling when it froze ends now, there: its writes are refused.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await seen(api.url, 'frozen')).toEqual(all);
    const view = (await request(api.url, 'GET', '/v1/agents/slow/frozen')).body as {
      run_id: string;
      mailbox_depth: number;
    };
    expect(view.mailbox_depth).toBe(0);
    const steps = (await request(api.url, 'GET', `/v1/runs/${view.run_id}/steps`)).body as {
      step_id: string;
      status: string;
      error?: unknown;
    }[];
    expect(steps).toHaveLength(MESSAGES);
    expect(steps.filter((s) => s.status !== 'succeeded')).toEqual([]);
  }, 200_000);
});
