/**
 * @module The actors of durable agents in the trace UI (`GET /v1/agents`, newest first, 50 a
 * page), read again every two seconds while shown; each row opens its agent's page. Filters
 * are the server's: an agent's name (exact, applied with Enter or on leaving the box;
 * `?name=`), a status (`?status=`) and a key's start (`?key_prefix=`, as it is typed). Pages
 * go on with the listing's cursor (`?before=` the `next` of the page before); a page may hold
 * fewer than 50 with more after it (a status filter: the server leaves out an actor whose
 * status changed since its index was read), so "Older" follows `next`, not a count.
 */
import { getJson, httpStatus } from './api.js';
import type { Agent, AgentPage, AgentStatus } from './api-types.js';
import { el, setText, setTime } from './dom.js';
import { when } from './format.js';
import { placeRows } from './keyed-rows.js';
import { createPoller, type Poller } from './poller.js';
import type { App, View } from './view.js';

const REFRESH_MS = 2000;
const LIMIT = 50;
const STATUSES: readonly AgentStatus[] = ['busy', 'waiting', 'awake', 'asleep'];
/** The longest key prefix the API takes (a key's bound). */
const MAX_KEY = 128;

/** The elements of one actor's row. */
interface AgentRow {
  readonly tr: HTMLTableRowElement;
  readonly status: HTMLElement;
  readonly mailbox: HTMLElement;
  readonly timer: HTMLTimeElement;
  readonly updated: HTMLTimeElement;
}

/** The list of actors (the hash `#agents`), in `root`. */
export function createAgentsView(root: HTMLElement, app: App): View {
  const names = el('datalist', { id: 'agent-names', 'data-testid': 'agent-names' });
  const nameFilter = el('input', {
    type: 'search',
    list: 'agent-names',
    'data-testid': 'agent-name-filter',
    'aria-label': 'agent',
    placeholder: 'agent name',
    spellcheck: 'false',
  });
  const statusFilter = el(
    'select',
    { 'data-testid': 'agent-status-filter', 'aria-label': 'status' },
    el('option', { value: '' }, 'every status'),
    ...STATUSES.map((s) => el('option', { value: s }, s)),
  );
  const keySearch = el('input', {
    type: 'search',
    'data-testid': 'agent-key-search',
    'aria-label': 'key starts with',
    placeholder: 'key starts with',
    spellcheck: 'false',
    maxlength: MAX_KEY,
  });
  const updated = el('span', { class: 'muted', 'data-testid': 'agents-updated' });
  const body = el('tbody', { 'data-testid': 'agent-list' });
  const head = el(
    'tr',
    null,
    ...['agent', 'key', 'status', 'mailbox', 'next timer', 'updated'].map((h) =>
      el('th', { class: h === 'mailbox' ? 'num' : null }, h),
    ),
  );
  const empty = el('p', { class: 'empty', 'data-testid': 'agents-empty', hidden: true });
  const newer = el('button', { type: 'button', 'data-testid': 'agents-newer' }, '< Newer');
  const older = el('button', { type: 'button', 'data-testid': 'agents-older' }, 'Older >');
  const pageNo = el('span', { class: 'muted', 'data-testid': 'agents-page' });
  root.append(
    el(
      'div',
      { class: 'toolbar' },
      el('h1', null, 'Agents'),
      el('span', { class: 'filters' }, nameFilter, statusFilter, keySearch),
      updated,
    ),
    names,
    el('table', { class: 'runs agents' }, el('thead', null, head), body),
    empty,
    el('div', { class: 'pager' }, newer, pageNo, older),
  );
  const rows = new Map<string, AgentRow>();
  /** The `before` of each page from the first (`null`) to the one shown. */
  let cursors: (string | null)[] = [null];
  /** The shown page's `next`, as last read. */
  let next: string | null = null;
  /** The name asked of the server: the filter's text when it was last applied. */
  let nameAsked = '';
  const seenNames = new Set<string>();
  let poller: Poller | null = null;

  function start(): void {
    poller?.stop();
    poller = createPoller(refresh);
    poller.poke();
  }

  /** From the first page again: the filters changed. */
  function restart(): void {
    cursors = [null];
    next = null;
    rows.clear();
    body.replaceChildren();
    start();
  }
  statusFilter.addEventListener('change', restart);
  keySearch.addEventListener('input', restart);
  const applyName = (): void => {
    if (nameFilter.value.trim() === nameAsked) return;
    nameAsked = nameFilter.value.trim();
    restart();
  };
  nameFilter.addEventListener('change', applyName);
  nameFilter.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') applyName();
  });
  older.addEventListener('click', () => {
    if (next === null) return;
    cursors.push(next);
    next = null;
    start();
  });
  newer.addEventListener('click', () => {
    if (cursors.length <= 1) return;
    cursors.pop();
    start();
  });

  /** The query of `GET /v1/agents` the filters and the page ask. */
  function query(): string {
    const params = new URLSearchParams({ limit: String(LIMIT) });
    if (nameAsked !== '') params.set('name', nameAsked);
    if (statusFilter.value) params.set('status', statusFilter.value);
    const prefix = keySearch.value.trim();
    if (prefix !== '') params.set('key_prefix', prefix);
    const before = cursors.at(-1) ?? null;
    if (before !== null) params.set('before', before);
    return `?${params.toString()}`;
  }

  /** A row's identity: its run (one per actor, whoever's it is). */
  const idOf = (a: Agent): string => a.run_id;

  function row(a: Agent): AgentRow {
    let r = rows.get(idOf(a));
    if (!r) {
      const address = { name: a.name, key: a.key, user: a.user_id ?? null };
      const href = app.href({ agent: address });
      const made: AgentRow = {
        tr: el('tr', {
          'data-testid': 'agent-row',
          'data-agent': a.name,
          'data-key': a.key,
          'data-run-id': a.run_id,
          title: a.user_id ? `user ${a.user_id}` : null,
        }),
        status: el('span', { class: 'status', 'data-testid': 'agent-row-status' }),
        mailbox: el('td', { class: 'num', 'data-testid': 'agent-row-mailbox' }),
        timer: el('time', { 'data-testid': 'agent-row-timer' }),
        updated: el('time', { 'data-testid': 'agent-row-updated' }),
      };
      made.tr.append(
        el('td', { 'data-testid': 'agent-row-name' }, a.name),
        el('td', { class: 'key' }, el('a', { href, 'data-testid': 'agent-row-key' }, a.key)),
        el('td', null, made.status),
        made.mailbox,
        el('td', null, made.timer),
        el('td', null, made.updated),
      );
      made.tr.addEventListener('click', (e) => {
        if (!(e.target instanceof Element && e.target.closest('a'))) app.go({ agent: address });
      });
      rows.set(idOf(a), made);
      r = made;
    }
    setText(r.status, a.status);
    r.status.dataset['status'] = a.status;
    r.tr.dataset['status'] = a.status;
    setText(r.mailbox, String(a.mailbox_depth));
    setTime(r.timer, a.next_timer_at);
    setTime(r.updated, a.updated_at);
    return r;
  }

  function remember(agents: readonly Agent[]): void {
    for (const a of agents) {
      if (seenNames.has(a.name)) continue;
      seenNames.add(a.name);
      names.append(el('option', { value: a.name }));
    }
  }

  function draw(page: AgentPage): void {
    for (const a of page.agents) row(a);
    placeRows(body, rows, page.agents.map(idOf), (r) => r.tr);
    remember(page.agents);
    next = page.next;
    const filtered = nameAsked !== '' || statusFilter.value !== '' || keySearch.value.trim() !== '';
    setText(
      empty,
      page.next !== null
        ? 'None on this page is as asked any more: see the older ones.'
        : cursors.length > 1
          ? 'No older actors.'
          : filtered
            ? 'No actor matches these filters.'
            : 'No actors yet. An actor appears with its first message ' +
              '(POST /v1/agents/{name}/{key}/messages).',
    );
    empty.hidden = page.agents.length > 0;
    newer.disabled = cursors.length <= 1;
    older.disabled = page.next === null;
    setText(pageNo, `page ${cursors.length}`);
  }

  async function refresh(current: () => boolean): Promise<number | null> {
    try {
      const page = await getJson<AgentPage>(`/v1/agents${query()}`);
      if (!current()) return null;
      app.clearError();
      draw(page);
      setText(updated, `updated ${when(new Date().toISOString())}`);
      return REFRESH_MS;
    } catch (err) {
      if (!current()) return null;
      app.showError(err);
      return httpStatus(err) === 401 ? null : REFRESH_MS;
    }
  }

  return {
    root,
    show() {
      start();
    },
    hide() {
      poller?.stop();
      poller = null;
    },
  };
}
