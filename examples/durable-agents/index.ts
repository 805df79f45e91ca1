/**
 * @module The two durable agents of API.md's embedded defaults (issue 46), which `axon serve`
 * registers: `notebook`, an actor per key keeping a list of notes, and `follow-up`, which logs a
 * line after a durable sleep or once an event comes. Each key is one actor with its own state
 * (`POST /v1/agents/notebook/<key>/messages`, `runtime.actor('notebook', key)`).
 */
import { z } from 'zod';
import { defineAgent } from '../../src/actors/define-agent.js';
import type { DurableAgentDefinition } from '../../src/actors/durable-agent.js';
import { EVENT_NAME } from '../../src/durable/actor-waits.js';

/** The longest sleep a `follow-up` message may ask for: the runtime's bound of a wait (ten years). */
const MAX_AFTER_MS = 10 * 365 * 24 * 3600 * 1000;

/**
 * `notebook`: state `{ notes: string[] }`, initially empty; a message `{ text }` appends `text`
 * to `notes` and ends with output `{ count }`, the number of notes after it. Mailbox `queue`:
 * messages sent while it is busy wait their turn, in the order they were accepted.
 *
 * @example
 * const { count } = await runtime.actor('notebook', 'customer-42').ask({ text: 'called back' });
 */
export const notebook = defineAgent({
  name: 'notebook',
  description: 'Keeps a list of notes per key: each message { text } appends one',
  input: z.strictObject({ text: z.string() }),
  durable: {
    state: z.strictObject({ notes: z.array(z.string()) }),
    initial: { notes: [] },
    version: 1,
    mailbox: { policy: 'queue' },
  },
  handler: (message, actor) => {
    const notes = [...actor.state.notes, message.text];
    return { state: { notes }, output: { count: notes.length } };
  },
});

/**
 * `follow-up`: state `{ log: string[] }`. A message `{ text, after_ms }` sleeps `after_ms`
 * milliseconds durably (in the store: nothing in memory, a restart between does not lose it),
 * then appends `text` to `log`. A message `{ text, await }` waits for the event named by
 * `await` (`POST /v1/events`, `runtime.signal`) of the actor's user, whose data must be
 * `{ answer: string }` (other data wakes it not, and the event's answer says so in
 * `refused`), then appends `text + ":" + answer`. Output `{ logged }`: the line appended.
 *
 * Gotcha: its messages wait in turn — a message sent while one sleeps or waits is handled
 * after it.
 *
 * @example
 * await runtime.actor('follow-up', 'ticket-7').send({ text: 'approved', await: 'approval' });
 * await runtime.signal('approval', { answer: 'yes' }); // log: ['approved:yes']
 */
export const followUp = defineAgent({
  name: 'follow-up',
  description:
    'Logs a line after a durable sleep ({ text, after_ms }) or an event ({ text, await })',
  input: z.union([
    z.strictObject({ text: z.string(), after_ms: z.number().int().min(0).max(MAX_AFTER_MS) }),
    z.strictObject({ text: z.string(), await: z.string().regex(EVENT_NAME) }),
  ]),
  durable: {
    state: z.strictObject({ log: z.array(z.string()) }),
    initial: { log: [] },
    version: 1,
  },
  handler: async (message, actor) => {
    let line = message.text;
    if ('after_ms' in message) {
      await actor.sleep(message.after_ms);
    } else {
      // Data failing the schema wakes this wait not; no timeout: it waits until it comes.
      const data = await actor.waitFor(message.await, {
        schema: z.object({ answer: z.string() }),
      });
      line = `${message.text}:${data?.answer ?? ''}`;
    }
    return { state: { log: [...actor.state.log, line] }, output: { logged: line } };
  },
});

/** The durable agents `axon serve` registers (API.md, "Running, and the embedded defaults"). */
export const EXAMPLE_DURABLE_AGENTS: readonly DurableAgentDefinition[] = [notebook, followUp];
