/**
 * @module The workflows and recent threads in the trace UI: the server's workflows
 * (`GET /v1/workflows`), each with its roles, concurrency, threads running and waiting, and a
 * form that starts a thread of it (`POST /v1/workflows/{name}/threads`, a refusal such as 429
 * `QUEUE_FULL` shown by the form); and the recent threads (`GET /v1/threads`), read again
 * every second while one is live, every five otherwise. A row opens its thread; its figures
 * are the thread's, as the API gives them.
 */
import { getJson, httpStatus, isApiError, postJson } from './api.js';
import type { Thread, ThreadStarted, Workflow } from './api-types.js';
import { el, setText } from './dom.js';
import { LIVE_THREAD, cost, duration, elapsed, tokens, when } from './format.js';
import { placeRows } from './keyed-rows.js';
import { createPoller, type Poller } from './poller.js';
import type { App, View } from './view.js';

const FAST_MS = 1000; // read again this often while a thread is live
const SLOW_MS = 5000; // ... and this often otherwise (threads started elsewhere show up)
const LIMIT = 50;
const INPUT_SHOWN = 80; // characters of a thread's input in its row

function concurrencyText(c: Workflow['concurrency']): string {
  if (!c) return '-';
  return `max ${c.max}, ${c.overflow === 'queue' ? `queue up to ${c.max_queue ?? '-'}` : c.overflow}`;
}

function short(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}\u2026` : line;
}

/** The elements of one workflow's card. */
interface Card {
  readonly name: string;
  readonly box: HTMLElement;
  readonly description: HTMLElement;
  readonly roles: HTMLElement;
  readonly rounds: HTMLElement;
  readonly concurrency: HTMLElement;
  readonly running: HTMLElement;
  readonly queued: HTMLElement;
  readonly input: HTMLInputElement;
  readonly button: HTMLButtonElement;
  readonly result: HTMLElement;
}

/** The elements of one thread's row. */
interface ThreadRow {
  readonly tr: HTMLTableRowElement;
  readonly status: HTMLElement;
  readonly input: HTMLElement;
  readonly started: HTMLElement;
  readonly end: HTMLElement;
  readonly rounds: HTMLElement;
  readonly took: HTMLElement;
  readonly used: HTMLElement;
  readonly spent: HTMLElement;
}

/** The workflows and the recent threads (the hash `#threads`), in `root`. */
export function createThreadsView(root: HTMLElement, app: App): View {
  const updated = el('span', { class: 'muted', 'data-testid': 'threads-updated' });
  const flows = el('div', { class: 'workflows', 'data-testid': 'workflow-list' });
  const none = el(
    'p',
    { class: 'empty', 'data-testid': 'workflows-none', hidden: true },
    'This server runs no workflows: they are served when it is started with some ' +
      '(createServer(runtime, { workflows }), docs/workflows.md).',
  );
  const body = el('tbody', { 'data-testid': 'thread-list' });
  const head = el(
    'tr',
    null,
    ...[
      'status',
      'workflow',
      'input',
      'thread',
      'started',
      'end',
      'rounds',
      'duration',
      'tokens',
      'cost',
    ].map((h, i) => el('th', { class: i >= 6 ? 'num' : null }, h)),
  );
  const empty = el(
    'p',
    { class: 'empty', 'data-testid': 'threads-empty', hidden: true },
    'No threads yet: start one with a form above, or POST /v1/workflows/{name}/threads.',
  );
  const list = el(
    'div',
    null,
    el('h2', { class: 'section' }, 'Recent threads'),
    el('table', { class: 'runs' }, el('thead', null, head), body),
    empty,
  );
  root.append(
    el('div', { class: 'toolbar' }, el('h1', null, 'Threads'), updated),
    el('h2', { class: 'section' }, 'Workflows'),
    flows,
    none,
    list,
  );
  const cards = new Map<string, Card>();
  const rows = new Map<string, ThreadRow>();
  let poller: Poller | null = null;

  function showResult(c: Card, state: string, ...parts: (Node | string)[]): void {
    c.result.hidden = false;
    c.result.dataset['state'] = state;
    c.result.replaceChildren(...parts);
  }

  async function start(c: Card): Promise<void> {
    c.button.disabled = true;
    showResult(c, 'pending', 'starting a thread\u2026');
    delete c.result.dataset['errorCode'];
    try {
      const t = await postJson<ThreadStarted>(
        `/v1/workflows/${encodeURIComponent(c.name)}/threads`,
        { input: c.input.value },
      );
      showResult(
        c,
        'ok',
        'Thread ',
        el(
          'a',
          { href: app.href({ thread: t.thread_id }), 'data-testid': 'workflow-result-thread' },
          t.thread_id,
        ),
        ` ${t.status}.`,
      );
      poller?.poke();
    } catch (err) {
      const code = isApiError(err) ? err.code : 'ERROR';
      c.result.dataset['errorCode'] = code;
      const why =
        httpStatus(err) === 401
          ? 'this server needs an API key (above)'
          : err instanceof Error
            ? err.message
            : String(err);
      const hint = code === 'QUEUE_FULL' ? '. Try again when one of its threads ends.' : '';
      const status = httpStatus(err);
      showResult(
        c,
        'error',
        el('b', { 'data-testid': 'workflow-result-code' }, code),
        `${status !== null ? ` (${status})` : ''}: ${why}${hint}`,
      );
    } finally {
      c.button.disabled = false;
    }
  }

  function card(w: Workflow): Card {
    let c = cards.get(w.name);
    if (!c) {
      const made: Card = {
        name: w.name,
        box: el('div', { class: 'workflow', 'data-testid': 'workflow', 'data-workflow': w.name }),
        description: el('span', { class: 'muted', 'data-testid': 'workflow-description' }),
        roles: el('dd', { 'data-testid': 'workflow-roles' }),
        rounds: el('dd', { 'data-testid': 'workflow-max-rounds' }),
        concurrency: el('dd', { 'data-testid': 'workflow-concurrency' }),
        running: el('dd', { 'data-testid': 'workflow-running' }),
        queued: el('dd', { 'data-testid': 'workflow-queued' }),
        input: el('input', {
          id: `workflow-input-${w.name}`,
          type: 'text',
          'data-testid': 'workflow-input',
          autocomplete: 'off',
          placeholder: 'the thread\u2019s input',
          'aria-label': `input of a thread of ${w.name}`,
        }),
        button: el('button', { type: 'submit', 'data-testid': 'workflow-start' }, 'Start thread'),
        result: el('p', {
          class: 'result',
          role: 'status',
          'data-testid': 'workflow-result',
          hidden: true,
        }),
      };
      const form = el(
        'form',
        { class: 'trigger', 'data-testid': 'workflow-trigger' },
        made.input,
        made.button,
      );
      form.addEventListener('submit', (e) => {
        e.preventDefault();
        void start(made);
      });
      made.box.append(
        el(
          'div',
          { class: 'workflow-head' },
          el('h3', { 'data-testid': 'workflow-name' }, w.name),
          made.description,
        ),
        el(
          'dl',
          { class: 'facts' },
          el('dt', null, 'roles'),
          made.roles,
          el('dt', null, 'max rounds'),
          made.rounds,
          el('dt', null, 'concurrency'),
          made.concurrency,
          el('dt', null, 'running'),
          made.running,
          el('dt', null, 'queued'),
          made.queued,
        ),
        form,
        made.result,
      );
      cards.set(w.name, made);
      c = made;
    }
    setText(c.description, w.description ?? '');
    setText(c.roles, (w.roles ?? []).map((r) => `${r.name} (${r.kind})`).join(', '));
    setText(c.rounds, String(w.max_rounds));
    setText(c.concurrency, concurrencyText(w.concurrency));
    setText(c.running, String(w.running));
    setText(c.queued, String(w.queued));
    return c;
  }

  function row(t: Thread, now: number): ThreadRow {
    let r = rows.get(t.thread_id);
    if (!r) {
      const href = app.href({ thread: t.thread_id });
      const made: ThreadRow = {
        tr: el('tr', { 'data-testid': 'thread-row', 'data-thread-id': t.thread_id }),
        status: el('span', { class: 'status', 'data-testid': 'thread-row-status' }),
        input: el('td', { class: 'input', 'data-testid': 'thread-row-input' }),
        started: el('td', { 'data-testid': 'thread-row-started' }),
        end: el('td', { 'data-testid': 'thread-row-end-reason' }),
        rounds: el('td', { class: 'num', 'data-testid': 'thread-row-rounds' }),
        took: el('td', { class: 'num', 'data-testid': 'thread-row-duration' }),
        used: el('td', { class: 'num', 'data-testid': 'thread-row-tokens' }),
        spent: el('td', { class: 'num', 'data-testid': 'thread-row-cost' }),
      };
      made.tr.append(
        el('td', null, made.status),
        el('td', null, el('a', { href, 'data-testid': 'thread-row-workflow' }, t.workflow)),
        made.input,
        el('td', null, el('code', null, t.thread_id)),
        made.started,
        made.end,
        made.rounds,
        made.took,
        made.used,
        made.spent,
      );
      made.tr.addEventListener('click', (e) => {
        if (!(e.target instanceof Element && e.target.closest('a'))) {
          app.go({ thread: t.thread_id });
        }
      });
      rows.set(t.thread_id, made);
      r = made;
    }
    setText(r.status, t.status);
    r.status.dataset['status'] = t.status;
    r.tr.dataset['status'] = t.status;
    setText(r.input, short(t.input, INPUT_SHOWN));
    r.input.title = t.input;
    setText(r.started, when(t.created_at));
    setText(r.end, t.end_reason ?? '-');
    setText(r.rounds, String(t.rounds));
    setText(r.took, duration(elapsed(t, now)));
    setText(r.used, tokens(t.tokens_in, t.tokens_out));
    setText(r.spent, cost(t.cost_usd));
    return r;
  }

  async function refresh(current: () => boolean): Promise<number | null> {
    try {
      let workflows: Workflow[] | null;
      try {
        workflows = await getJson<Workflow[]>('/v1/workflows');
      } catch (err) {
        // A server without workflows answers 404 here: nothing to list, nothing to read again.
        if (httpStatus(err) !== 404) throw err;
        workflows = null;
      }
      if (!current()) return null;
      none.hidden = workflows !== null;
      list.hidden = workflows === null;
      if (workflows === null) {
        app.clearError();
        placeRows(flows, cards, [], (c) => c.box);
        return null;
      }
      const threads = await getJson<Thread[]>(`/v1/threads?limit=${LIMIT}`);
      if (!current()) return null;
      app.clearError();
      const now = Date.now();
      for (const w of workflows) card(w);
      placeRows(
        flows,
        cards,
        workflows.map((w) => w.name),
        (c) => c.box,
      );
      for (const t of threads) row(t, now);
      placeRows(
        body,
        rows,
        threads.map((t) => t.thread_id),
        (r) => r.tr,
      );
      empty.hidden = threads.length > 0;
      setText(updated, `updated ${when(new Date(now).toISOString())}`);
      const live =
        threads.some((t) => LIVE_THREAD.has(t.status)) ||
        workflows.some((w) => w.running > 0 || w.queued > 0);
      return live ? FAST_MS : SLOW_MS;
    } catch (err) {
      if (!current()) return null;
      app.showError(err);
      return httpStatus(err) === 401 ? null : SLOW_MS;
    }
  }

  return {
    root,
    show() {
      poller?.stop();
      poller = createPoller(refresh);
      poller.poke();
    },
    hide() {
      poller?.stop();
      poller = null;
    },
  };
}
