/**
 * @module docs/durable-agents.md's complete example (issue 46): a support agent per customer —
 * the actor `support/<customer>` — that drafts a reply to each ticket with a model, waits for a
 * human's approval of it (an event, for up to two days), sends it once approved, and follows up
 * three days later. Between those moments the actor holds nothing in memory and no pool slot:
 * its message waits in the store, and a restart in between loses nothing.
 */
import { z } from 'zod';
import { defineAgent } from '../../src/actors/define-agent.js';
import type { ActorTurn } from '../../src/actors/durable-agent.js';

const DAY = 24 * 3600 * 1000;

/** What a `ticket` message ends with (a `note` ends with no output). */
export interface TicketOutcome {
  readonly ticket: string;
  readonly sent: boolean;
  readonly followed_up?: boolean;
}

/** A human's decision on a drafted reply: `POST /v1/events { name: "approval", data }`. */
export const approvalSchema = z.object({
  ticket: z.string(),
  approved: z.boolean(),
  by: z.string(),
});

/**
 * `support`: one actor per customer. A `ticket` message drafts a reply (the scripted engine
 * by default), waits for the `approval` event of its ticket, sends the reply when approved,
 * sleeps three days and follows up; a `note` message adds to the customer's history. Messages
 * to one customer wait their turn (mailbox `queue`, at most 100).
 *
 * @example
 * const support = runtime.actor('support', 'customer-42');
 * await support.send({ kind: 'ticket', ticket: 't-1', text: 'My order is late' });
 * await runtime.signal('approval', { ticket: 't-1', approved: true, by: 'dana' });
 */
export const supportAgent = defineAgent({
  name: 'support',
  description: 'A support agent per customer: drafts, waits for approval, replies, follows up',
  input: z.discriminatedUnion('kind', [
    z.strictObject({ kind: z.literal('ticket'), ticket: z.string(), text: z.string() }),
    z.strictObject({ kind: z.literal('note'), text: z.string() }),
  ]),
  durable: {
    state: z.object({ history: z.array(z.string()) }),
    initial: { history: [] },
    version: 1,
    mailbox: { policy: 'queue', maxQueue: 100 },
  },
  async *handler(
    message,
    actor,
    runtime,
  ): AsyncGenerator<string, ActorTurn<{ history: string[] }, TicketOutcome>> {
    const history = actor.state.history;
    if (message.kind === 'note') {
      return { state: { history: [...history, `note: ${message.text}`] } };
    }
    // Recorded with the message: run again after a wait, the draft is not asked for twice.
    const draft = await runtime.chat(
      { messages: [{ role: 'user', content: `Draft a reply to: ${message.text}` }] },
      actor.ctx,
    );
    yield `drafted a reply to ${message.ticket}\n`;
    const decision = await actor.waitFor('approval', {
      match: { ticket: message.ticket },
      schema: approvalSchema,
      timeoutMs: 2 * DAY,
    });
    if (!decision?.approved) {
      const why = decision ? `rejected by ${decision.by}` : 'no decision in two days';
      return {
        state: { history: [...history, `${message.ticket}: not sent (${why})`] },
        output: { ticket: message.ticket, sent: false },
      };
    }
    yield `sent the reply to ${message.ticket}\n`;
    await actor.sleep(3 * DAY);
    yield `followed up on ${message.ticket}\n`;
    return {
      state: {
        history: [
          ...history,
          `${message.ticket}: sent "${draft.text}" (approved by ${decision.by}), followed up`,
        ],
      },
      output: { ticket: message.ticket, sent: true, followed_up: true },
    };
  },
});
