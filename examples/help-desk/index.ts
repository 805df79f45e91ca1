/**
 * @module The help-desk example: two agents behind the front door, `billing` and `support`,
 * a message routed to one of them by rules (`axon run help-desk`) or by the similarity of
 * the message to each agent's description (`axon run help-desk --router embedding`).
 */
import { defineAgent } from '../../src/actors/define-agent.js';
import type { Example, ExampleOptions } from '../example.js';

/** The help desk; see the module. `tokenDelayMs` is not used: its agents answer at once. */
export function helpDesk(_options: ExampleOptions = {}): Example {
  const billing = defineAgent({
    name: 'billing',
    description: 'billing: invoices, refunds, charges, payments and subscription prices',
    handler: (input) =>
      `Billing here. About "${input.message}": refunds reach your card within five working days.`,
  });
  const support = defineAgent({
    name: 'support',
    description: 'technical support: login problems, passwords, errors, crashes and bugs',
    handler: (input) =>
      `Support here. About "${input.message}": reset your password from the login page, then sign in again.`,
  });
  return {
    name: 'help-desk',
    description: 'the front door routes to billing or support, by rules or by embeddings',
    entry: 'support',
    routes: [
      { pattern: /\b(invoice|refund|charged?|payment|price|bill)s?\b/i, handler: 'billing' },
      { pattern: /\b(login|password|error|crash|bug)s?\b/i, handler: 'support' },
    ],
    input: 'I was charged twice, can I get a refund?',
    agents: [billing, support],
    tools: [],
  };
}
