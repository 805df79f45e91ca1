/**
 * @module What an actor waits for, on its agent's page: its pending wakes
 * (`GET /v1/agents/{name}/{key}/wakes`, docs/http-api.md "What the server adds"; the soonest
 * first) — a message's durable sleep, a message's wait for an event (its name, the fields its
 * data must have, its timeout), a reminder (its name, its period, the message it sends) — each
 * with when it is due and the message that waits (a link to its step). Fired wakes are
 * history: the page shows them no more (their messages' events say what came).
 */
import type { Wake } from './api-types.js';
import { el, setTime } from './dom.js';
import { duration } from './format.js';

/** Characters of a match's or a reminder's message JSON shown. */
const JSON_SHOWN = 60;

function short(value: unknown): string {
  let text: string;
  try {
    text = value === undefined ? 'null' : JSON.stringify(value);
  } catch {
    text = String(value);
  }
  return text.length > JSON_SHOWN ? `${text.slice(0, JSON_SHOWN - 1)}\u2026` : text;
}

/** What a wake waits for, in words: `its time`, `approval where {…}`, `nudge every 5m: {…}`. */
export function waitedFor(
  w: Pick<Wake, 'kind' | 'event' | 'match' | 'name' | 'every_ms' | 'message'>,
): string {
  switch (w.kind) {
    case 'event':
      return `${w.event ?? '-'}${w.match === null ? '' : ` where ${short(w.match)}`}`;
    case 'reminder':
      return `${w.name ?? '-'}${w.every_ms === null ? '' : ` every ${duration(w.every_ms)}`}: ${short(w.message)}`;
    default:
      return 'its time';
  }
}

/** What the list asks of its page. */
export interface AgentWaitsHooks {
  /** The href of a message's step on the page. */
  readonly stepHref: (stepId: string) => string;
  /** A message's name (`#<n>`), or null when the page has not seen it yet. */
  readonly messageName: (stepId: string) => string | null;
}

/** The list; {@link AgentWaits.render} draws the wakes last read. */
export interface AgentWaits {
  readonly root: HTMLElement;
  render(wakes: readonly Wake[]): void;
  clear(): void;
}

/** An actor's pending wakes as a table, hidden while it has none; see the module. */
export function createAgentWaits(hooks: AgentWaitsHooks): AgentWaits {
  const body = el('tbody', { 'data-testid': 'agent-wakes' });
  const root = el(
    'div',
    { 'data-testid': 'agent-waits', hidden: true },
    el('h3', null, 'Waits for'),
    el(
      'table',
      { class: 'runs wakes' },
      el(
        'thead',
        null,
        el('tr', null, ...['kind', 'for', 'due', 'message'].map((h) => el('th', null, h))),
      ),
      body,
    ),
  );

  function row(w: Wake): HTMLElement {
    const due = el('time', { 'data-testid': 'agent-wake-due' });
    setTime(due, w.due_at);
    const message =
      w.step_id === null
        ? '-'
        : el(
            'a',
            { href: hooks.stepHref(w.step_id), 'data-testid': 'agent-wake-message' },
            hooks.messageName(w.step_id) ?? w.step_id,
          );
    return el(
      'tr',
      { 'data-testid': 'agent-wake', 'data-wake-id': w.wake_id, 'data-kind': w.kind },
      el('td', { 'data-testid': 'agent-wake-kind' }, w.kind),
      el('td', { class: 'for', 'data-testid': 'agent-wake-for' }, waitedFor(w)),
      el('td', null, due),
      el('td', null, message),
    );
  }

  return {
    root,
    render(wakes) {
      const pending = wakes.filter((w) => w.status === 'pending');
      // A handful at most (a message's one wait, an actor's reminders): drawn anew each read.
      body.replaceChildren(...pending.map(row));
      root.hidden = pending.length === 0;
    },
    clear() {
      body.replaceChildren();
      root.hidden = true;
    },
  };
}
