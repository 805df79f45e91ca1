/**
 * docs/durable-agents.md's example (issue 46), as the page tells it: a support agent per
 * customer drafts a reply, waits for a human's approval, replies and follows up three days
 * later — holding nothing in memory in between — on a simulated clock.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { supportAgent } from '../../examples/support-desk/index.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { advance, durableRuntime, until } from '../durable/durable-fixtures.js';

const DAY = 24 * 3600 * 1000;
let runtime: Runtime | null = null;
afterEach(async () => {
  await runtime?.close();
  runtime = null;
});

describe('the support desk of docs/durable-agents.md', () => {
  it('drafts, waits for approval, replies, sleeps three days and follows up', async () => {
    const made = durableRuntime([supportAgent]);
    runtime = made.runtime;
    const { clock } = made;
    const support = runtime.actor('support', 'customer-42');
    const stream = support.stream({ kind: 'ticket', ticket: 't-1', text: 'My order is late' });
    await until(async () => (await support.state())?.status === 'waiting');
    expect(runtime.durable.awake).toBe(0);
    // A note waits its turn behind the ticket.
    await support.send({ kind: 'note', text: 'called twice' });
    // Someone else's approval, or one of another ticket, wakes nothing.
    expect(
      (await runtime.signal('approval', { ticket: 't-9', approved: true, by: 'x' })).woken,
    ).toBe(0);
    expect(
      (await runtime.signal('approval', { ticket: 't-1', approved: true, by: 'dana' })).woken,
    ).toBe(1);
    await until(async () => (await support.state())?.next_timer_at !== null);
    expect((await support.state())?.next_timer_at).toBe(
      new Date(clock.now() + 3 * DAY).toISOString(),
    );
    await advance(clock, 3 * DAY);
    const tokens: string[] = [];
    for await (const ev of stream) if (ev.type === 'token') tokens.push(ev.t);
    expect(await stream.result).toEqual({ ticket: 't-1', sent: true, followed_up: true });
    await until(
      async () =>
        (await support.state())?.mailbox_depth === 0 && (await support.state())?.status !== 'busy',
    );
    const history = ((await support.state())?.state as { history: string[] }).history;
    expect(history).toHaveLength(2);
    const draft = /^t-1: sent "(.+)" \(approved by dana\), followed up$/.exec(
      history[0] ?? '',
    )?.[1];
    expect(draft).toBeDefined();
    expect(history[1]).toBe('note: called twice');
    // The model's draft streamed once — not again when the handler ran on past each wait.
    expect(tokens.join('')).toBe(
      `${draft ?? ''}drafted a reply to t-1\nsent the reply to t-1\nfollowed up on t-1\n`,
    );
  });

  it('gives up after two days without a decision', async () => {
    const made = durableRuntime([supportAgent]);
    runtime = made.runtime;
    const support = runtime.actor('support', 'customer-7');
    const answer = support.ask({ kind: 'ticket', ticket: 't-2', text: 'Refund please' });
    await until(async () => (await support.state())?.status === 'waiting');
    await advance(made.clock, 2 * DAY);
    expect(await answer).toEqual({ ticket: 't-2', sent: false });
    expect((await support.state())?.state).toEqual({
      history: ['t-2: not sent (no decision in two days)'],
    });
  });
});
