/**
 * @module One actor of a durable agent in the trace UI (`#agent=<name>&key=<key>[&user=<id>]`):
 * its status, version, mailbox depth, soonest timer, when it was made and last changed
 * (`GET /v1/agents/{name}/{key}`, read again every two seconds and whenever its run's stream
 * says something), its state as JSON, a form that sends it a message (`message-form.ts`), and
 * its messages — the steps of its run — on the run page's timeline, tree and step panel
 * (`run-trace.ts`, live over the run's stream), each named `#<n>` (its place in the order
 * accepted) and its message; and what it waits for — a message's sleep or event wait, its
 * reminders (`agent-waits.ts`, from `GET /v1/agents/{name}/{key}/wakes`, read with the actor).
 * An actor read under `user` (an admin's, from the
 * listing) that is not the caller's own gets no form: the caller's messages go to its own
 * actors. An address with no `user` that is not the caller's is looked for in the listing.
 */
import { getJson, isApiError, isFinalRefusal } from './api.js';
import type { Agent, AgentPage, Wake } from './api-types.js';
import { createAgentWaits } from './agent-waits.js';
import { el, figureList, setText, setTime } from './dom.js';
import { json } from './format.js';
import { createMessageForm } from './message-form.js';
import { createPoller, type Poller } from './poller.js';
import { createRunTrace } from './run-trace.js';
import type { AgentAddress, App, Route, View } from './view.js';

const REFRESH_MS = 2000;
/** Characters of a message's JSON in its name on the timeline and in the tree. */
const MESSAGE_SHOWN = 60;
/** Characters of the state shown. */
const STATE_SHOWN = 20_000;

/** The API path of an actor (`/v1/agents/<name>/<key>`). */
function agentPath(a: AgentAddress): string {
  return `/v1/agents/${encodeURIComponent(a.name)}/${encodeURIComponent(a.key)}`;
}

/** A message as one short line. */
function messageLine(input: unknown): string {
  let text: string;
  try {
    // JSON.stringify gives undefined (whatever its type says) for undefined.
    text = input === undefined ? 'null' : JSON.stringify(input);
  } catch {
    text = String(input);
  }
  return text.length > MESSAGE_SHOWN ? `${text.slice(0, MESSAGE_SHOWN - 1)}\u2026` : text;
}

/** What the view holds of the actor it shows. */
interface AgentState {
  readonly address: AgentAddress;
  readonly id: string;
  readonly poller: Poller;
  view: Agent | null;
  selected: string | null;
  /** Whether the actor shown is the caller's own (`null`: not known yet). */
  own: boolean | null;
  /** The last read failed (its error is in the banner): the next that succeeds clears it. */
  failed: boolean;
}

/** The view of one actor (the hash `#agent=<name>&key=<key>…`), in `root`. */
export function createAgentView(root: HTMLElement, app: App): View {
  const back = el(
    'a',
    { href: '#agents', class: 'back', 'data-testid': 'back-to-agents' },
    '< Agents',
  );
  const title = el('h1', { 'data-testid': 'agent-title' });
  const status = el('span', { class: 'status', 'data-testid': 'agent-status' });
  const asRun = el('a', { 'data-testid': 'agent-run-link', hidden: true }, 'open as a run');
  const version = el('dd', { 'data-testid': 'agent-version' });
  const mailbox = el('dd', { 'data-testid': 'agent-mailbox' });
  const timer = el('time', {
    'data-testid': 'agent-next-timer',
    title: 'its soonest pending timer: a sleep, a wait\u2019s timeout or a reminder',
  });
  const created = el('time', { 'data-testid': 'agent-created' });
  const updated = el('time', { 'data-testid': 'agent-updated' });
  const user = el('dd', { 'data-testid': 'agent-user' });
  const missing = el('p', { class: 'note', 'data-testid': 'agent-missing', hidden: true });
  const stateBox = el('pre', { class: 'input state', 'data-testid': 'agent-state' });
  const stateSection = el('div', { hidden: true }, el('h3', null, 'State'), stateBox);
  const figures = figureList([
    ['version', version],
    ['mailbox', mailbox],
    ['next timer', el('dd', null, timer)],
    ['created', el('dd', null, created)],
    ['updated', el('dd', null, updated)],
    ['user', user],
  ]);
  figures.hidden = true;
  const form = createMessageForm({
    stepHref: (stepId) =>
      app.href({ agent: state?.address ?? { name: '', key: '' }, step: stepId }),
    sent: () => {
      app.clearError();
      if (state) state.failed = false;
      state?.poller.poke();
    },
    refused: (err) => {
      app.showError(err);
    },
  });
  const trace = createRunTrace({
    href: (_run, stepId) =>
      app.href({ agent: state?.address ?? { name: '', key: '' }, step: stepId }),
    open: (_run, stepId) => {
      if (state) app.go({ agent: state.address, step: stepId });
    },
    label: (step, n) => (n === null ? null : `#${n} ${messageLine(step.input)}`),
    changed: () => {
      state?.poller.poke();
    },
    tick: () => undefined,
    failed: (err) => {
      app.showError(err);
    },
    // No step actions: an actor's messages are ended by the actor (its own cancel).
    empty: 'No messages yet: send one above.',
    testIds: { tree: 'agent-trace-tree', empty: 'agent-trace-empty', detail: 'agent-step-detail' },
  });
  const waits = createAgentWaits({
    stepHref: (stepId) =>
      app.href({ agent: state?.address ?? { name: '', key: '' }, step: stepId }),
    messageName: (stepId) => {
      const n = trace.rootOf(stepId);
      return n === null ? null : `#${n}`;
    },
  });
  const messages = el(
    'div',
    { hidden: true },
    el('h2', { class: 'section' }, 'Messages'),
    trace.timeline,
    trace.body,
  );
  root.append(
    el('div', { class: 'toolbar' }, back, title, status, asRun),
    figures,
    missing,
    waits.root,
    stateSection,
    form.root,
    messages,
  );
  let state: AgentState | null = null;

  function render(s: AgentState, a: Agent, wakes: readonly Wake[]): void {
    setText(title, `${a.name}/${a.key}`);
    setText(status, a.status);
    status.dataset['status'] = a.status;
    setText(version, String(a.version));
    setText(mailbox, String(a.mailbox_depth));
    setTime(timer, a.next_timer_at);
    setTime(created, a.created_at);
    setTime(updated, a.updated_at);
    setText(user, a.user_id ?? '-');
    figures.hidden = false;
    asRun.hidden = false;
    asRun.setAttribute('href', app.href({ run: a.run_id }));
    waits.render(wakes);
    setText(stateBox, json(a.state, STATE_SHOWN));
    stateSection.hidden = false;
    missing.hidden = true;
    messages.hidden = false;
    trace.show(a.run_id, s.selected);
  }

  function reset(): void {
    trace.stop();
    for (const n of [title, status, version, mailbox, timer, created, updated, user]) {
      setText(n, '');
    }
    figures.hidden = true;
    asRun.hidden = true;
    waits.clear();
    missing.hidden = true;
    stateSection.hidden = true;
    messages.hidden = true;
  }

  /** No actor at this address (404): say so; with no `user`, look for it in the listing. */
  async function notFound(s: AgentState, err: unknown, current: () => boolean): Promise<void> {
    const { name, key } = s.address;
    setText(title, `${name}/${key}`);
    const said = isApiError(err) ? `${err.code}: ${err.message}` : String(err);
    if (s.address.user) {
      missing.replaceChildren(`${said}. No actor ${name}/${key} of user ${s.address.user}.`);
      missing.hidden = false;
      form.target(null);
      return;
    }
    // An admin opening another user's actor from its run: the listing names whose it is.
    const page = await getJson<AgentPage>(
      `/v1/agents?${new URLSearchParams({ name, key_prefix: key, limit: '500' }).toString()}`,
    ).catch(() => null);
    if (!current()) return;
    const found = (page?.agents ?? []).filter((a) => a.name === name && a.key === key);
    const only = found[0];
    if (found.length === 1 && only?.user_id) {
      app.go({ agent: { name, key, user: only.user_id }, step: s.selected });
      return;
    }
    if (found.length > 1) {
      missing.replaceChildren(
        `You have no actor ${name}/${key}; these users have one: `,
        ...found.flatMap((a, i) => [
          i > 0 ? ', ' : '',
          el(
            'a',
            { href: app.href({ agent: { name, key, user: a.user_id ?? null } }) },
            a.user_id ?? '-',
          ),
        ]),
        '.',
      );
    } else {
      missing.replaceChildren(`${said}. An actor is made by its first message: send one below.`);
    }
    missing.hidden = false;
    form.target(agentPath(s.address));
  }

  /** Whether the actor shown under `user` is the caller's own: its messages would go there. */
  async function ownership(s: AgentState, shown: Agent): Promise<void> {
    if (!s.address.user) {
      s.own = true;
    } else if (s.own === null) {
      const mine = await getJson<Agent>(agentPath(s.address)).catch(() => null);
      s.own = mine !== null && mine.run_id === shown.run_id;
    }
    form.target(
      s.own ? agentPath(s.address) : null,
      s.own
        ? undefined
        : `This is user ${s.address.user ?? ''}\u2019s actor: a message sent from here would go ` +
            `to your own ${shown.name}/${shown.key} (an admin\u2019s messages address its own ` +
            'actors), so this page sends none.',
    );
  }

  async function read(s: AgentState, current: () => boolean): Promise<number | null> {
    const asked = s.address.user
      ? `?${new URLSearchParams({ user_id: s.address.user }).toString()}`
      : '';
    try {
      const [a, { wakes }] = await Promise.all([
        getJson<Agent>(agentPath(s.address) + asked),
        getJson<{ wakes: Wake[] }>(`${agentPath(s.address)}/wakes${asked}`),
      ]);
      if (!current()) return null;
      if (s.failed) app.clearError();
      s.failed = false;
      s.view = a;
      render(s, a, wakes);
      await ownership(s, a);
      return REFRESH_MS;
    } catch (err) {
      if (!current()) return null;
      if (isApiError(err) && err.status === 404) {
        await notFound(s, err, current);
        return REFRESH_MS;
      }
      s.failed = true;
      app.showError(err);
      return isFinalRefusal(err) ? null : REFRESH_MS;
    }
  }

  function stop(): void {
    state?.poller.stop();
    state = null;
    reset();
    form.target(null);
  }

  return {
    root,
    show(route: Route) {
      const address = route.agent ?? { name: '', key: '' };
      const id = JSON.stringify([address.name, address.key, address.user ?? null]);
      if (state?.id !== id) {
        stop();
        const s: AgentState = {
          address,
          id,
          poller: createPoller((current) => read(s, current)),
          view: null,
          selected: null,
          own: null,
          failed: false,
        };
        state = s;
        setText(title, `${address.name}/${address.key}`);
      }
      const shown = state;
      shown.selected = route.step ?? null;
      if (shown.view) trace.show(shown.view.run_id, shown.selected);
      shown.poller.poke();
    },
    hide() {
      stop();
    },
  };
}
