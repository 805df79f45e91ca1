/**
 * `copyStore` carries durable agents over (issue 46): each actor with its state and run, its
 * open messages back in its mailbox (the one it was handling still taken), its wakes and the
 * schedules — so a runtime on the copy goes on where the source stopped.
 */
import { describe, expect, it } from 'vitest';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import { copyStore } from '../../src/store/store-copy.js';
import { advance, durableRuntime, followUp, notebook, until } from '../durable/durable-fixtures.js';

describe('copyStore with durable agents', () => {
  it('copies actors, mailboxes, wakes and schedules; a runtime on the copy goes on', async () => {
    const source = memoryStore();
    const { runtime } = durableRuntime([notebook, followUp], { store: source });
    await runtime.actor('notebook', 'n').ask({ text: 'kept' });
    const waiting = runtime.actor('follow-up', 'w');
    await waiting.send({ text: 'q', await: 'answer' });
    await until(async () => (await waiting.state())?.status === 'waiting');
    await waiting.send({ text: 'after', after_ms: 0 });
    const schedule = await runtime.schedule({
      cron: '0 9 * * *',
      agent: 'notebook',
      key: 'daily',
      message: { text: 'morning' },
    });
    await runtime.durable.close();
    const target = memoryStore();
    const counts = await copyStore(source, target);
    expect(counts).toMatchObject({ actors: 2, wakes: 1, schedules: 1 });
    const { runtime: copy, clock } = durableRuntime([notebook, followUp], { store: target });
    expect((await copy.actor('notebook', 'n').state())?.state).toEqual({ notes: ['kept'] });
    const w = copy.actor('follow-up', 'w');
    expect(await w.state()).toMatchObject({ status: 'waiting', mailbox_depth: 1 });
    expect((await copy.durable.schedules.get(schedule.schedule_id)).cron).toBe('0 9 * * *');
    expect((await copy.signal('answer', { answer: 'yes' })).woken).toBe(1);
    await until(async () => (await w.state())?.mailbox_depth === 0);
    // `after` sleeps 0 ms: its wake rings on the next move of the clock.
    await advance(clock, 0);
    await until(async () => ((await w.state())?.state as { log: string[] }).log.length === 2);
    expect((await w.state())?.state).toEqual({ log: ['q:yes', 'after'] });
    await copy.close();
    await runtime.close();
  });
});
