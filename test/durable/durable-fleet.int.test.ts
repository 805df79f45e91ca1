/**
 * Durable agents on a fleet, in one process (issue 46): an API runtime with `fleet` queues an
 * actor's messages on a pool, whose replicas (`FleetWorker`) run the actor — one activation
 * across the fleet (its lease), in order — and ring the clock at due times (BullMQ delayed
 * jobs); a replica that stops mid-message hands the actor to another.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../src/actors/define-agent.js';
import { useInProcessFleets } from '../support/fleet-inprocess.js';
import { followUp, notebook, until } from './durable-fixtures.js';

const { prefix: fleetPrefix, replica, api } = useInProcessFleets('durable-fleet');

/** A durable agent that records which replica handled each message. */
function where(replicaOf: () => string) {
  return defineAgent({
    name: 'where',
    input: z.object({ n: z.number() }),
    durable: {
      state: z.object({ seen: z.array(z.tuple([z.number(), z.string()])) }),
      initial: { seen: [] },
      version: 1,
    },
    handler: async (message, actor) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return {
        state: { seen: [...actor.state.seen, [message.n, replicaOf()] as [number, string]] },
        output: message.n,
      };
    },
  });
}

describe('durable agents on a fleet', () => {
  it("handles an actor's messages on the replicas, one at a time, in the order accepted", async () => {
    const prefix = fleetPrefix();
    const agents = [notebook, followUp];
    await replica(prefix, 'main', { runtime: { agents } });
    await replica(prefix, 'main', { runtime: { agents } });
    const rt = await api(prefix, { agents });
    const notes = rt.actor('notebook', 'k');
    const receipts = [];
    for (let i = 0; i < 20; i++) receipts.push(await notes.send({ text: `m${i}` }));
    expect(new Set(receipts.map((r) => r.run_id)).size).toBe(1);
    await until(
      async () =>
        (await notes.state())?.mailbox_depth === 0 && (await notes.state())?.status !== 'busy',
    );
    expect((await notes.state())?.state).toEqual({
      notes: Array.from({ length: 20 }, (_, i) => `m${i}`),
    });
    expect(await notes.ask({ text: 'last' })).toEqual({ count: 21 });
  });

  it("fires a sleeping message's wake through the fleet's delayed jobs", async () => {
    const prefix = fleetPrefix();
    const agents = [notebook, followUp];
    await replica(prefix, 'main', { runtime: { agents } });
    const rt = await api(prefix, { agents });
    const f = rt.actor('follow-up', 'sleeper');
    const answer = f.ask({ text: 'later', after_ms: 300 });
    expect(await answer).toEqual({ logged: 'later' });
    expect((await f.state())?.state).toEqual({ log: ['later'] });
  });

  it('goes on with an actor on another replica when the one handling it stops', async () => {
    const prefix = fleetPrefix();
    let here = '';
    const first = await replica(prefix, 'main', { runtime: { agents: [where(() => here)] } });
    here = first.replicaId;
    const rt = await api(prefix, { agents: [where(() => 'api')] });
    const a = rt.actor('where', 'k');
    for (let i = 0; i < 5; i++) await a.send({ n: i });
    await until(async () => ((await a.state())?.state as { seen: unknown[] }).seen.length >= 2);
    await first.stop(0);
    const second = await replica(prefix, 'main', { runtime: { agents: [where(() => here)] } });
    here = second.replicaId;
    await until(
      async () => ((await a.state())?.state as { seen: unknown[] }).seen.length === 5,
      20_000,
    );
    const seen = ((await a.state())?.state as { seen: [number, string][] }).seen;
    expect(seen.map(([n]) => n)).toEqual([0, 1, 2, 3, 4]);
  });

  it('an API process whose pool table is older than a worker still hands the worker its messages', async () => {
    const prefix = fleetPrefix();
    const agents = [notebook, followUp];
    // Its pools read at its start (none yet), and not again for an hour by itself.
    const rt = await api(prefix, { agents, fleet: { refreshMs: 3_600_000 } });
    await replica(prefix, 'main', { runtime: { agents } });
    const notes = rt.actor('notebook', 'late');
    for (let i = 0; i < 3; i++) await notes.send({ text: `m${i}` });
    // Its mailbox empty and its last message ended (taken from the mailbox is not ended).
    await until(async () => {
      const view = await notes.state();
      return view?.mailbox_depth === 0 && view.status !== 'busy';
    }, 10_000);
    expect((await notes.state())?.state).toEqual({ notes: ['m0', 'm1', 'm2'] });
  });
});
