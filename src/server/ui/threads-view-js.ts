/**
 * @module The trace UI's `ui/threads-view.js` (a browser module, kept as a string): the
 * server's workflows (`GET /v1/workflows`), each with its roles, concurrency, threads running
 * and waiting, and a form that starts a thread of it (`POST /v1/workflows/{name}/threads`,
 * a refusal such as 429 `QUEUE_FULL` shown by the form); and the recent threads
 * (`GET /v1/threads`), read again every second while one is live, every five otherwise. A
 * row opens its thread.
 */

/** `ui/threads-view.js`. */
export const THREADS_VIEW_JS = String.raw`// axon trace UI: the workflows and the recent threads.
import { getJson, postJson } from './api.js';
import { LIVE_THREAD, cost, duration, el, elapsed, setText, tokens, when } from './format.js';

const FAST_MS = 1000; // read again this often while a thread is live
const SLOW_MS = 5000; // ... and this often otherwise (threads started elsewhere show up)
const LIMIT = 50;
const INPUT_SHOWN = 80; // characters of a thread's input in its row

function concurrencyText(c) {
  if (!c) return '-';
  return 'max ' + c.max + ', ' + (c.overflow === 'queue' ? 'queue up to ' + c.max_queue : c.overflow);
}

function short(text, max) {
  const line = String(text || '').replace(/\s+/g, ' ').trim();
  return line.length > max ? line.slice(0, max - 1) + '\u2026' : line;
}

/** The workflows and the recent threads (the hash #threads), in root. */
export function createThreadsView(root, app) {
  const updated = el('span', { class: 'muted', 'data-testid': 'threads-updated' });
  const flows = el('div', { class: 'workflows', 'data-testid': 'workflow-list' });
  const none = el('p', { class: 'empty', 'data-testid': 'workflows-none', hidden: true },
    'This server runs no workflows: they are served when it is started with some ' +
    '(createServer(runtime, { workflows }), docs/workflows.md).');
  const body = el('tbody', { 'data-testid': 'thread-list' });
  const head = el('tr', null, ...['status', 'workflow', 'input', 'thread', 'started', 'end',
    'rounds', 'duration', 'tokens', 'cost'].map((h, i) => el('th', { class: i >= 6 ? 'num' : null }, h)));
  const empty = el('p', { class: 'empty', 'data-testid': 'threads-empty', hidden: true },
    'No threads yet: start one with a form above, or POST /v1/workflows/{name}/threads.');
  const list = el('div', null,
    el('h2', { class: 'section' }, 'Recent threads'),
    el('table', { class: 'runs' }, el('thead', null, head), body),
    empty);
  root.append(
    el('div', { class: 'toolbar' }, el('h1', null, 'Threads'), updated),
    el('h2', { class: 'section' }, 'Workflows'),
    flows,
    none,
    list,
  );
  const cards = new Map();
  const rows = new Map();
  let timer = null;
  let generation = 0;
  let shown = false;

  function showResult(c, state, ...parts) {
    c.result.hidden = false;
    c.result.dataset.state = state;
    c.result.replaceChildren(...parts);
  }

  async function start(c) {
    c.button.disabled = true;
    showResult(c, 'pending', 'starting a thread\u2026');
    delete c.result.dataset.errorCode;
    try {
      const t = await postJson('/v1/workflows/' + encodeURIComponent(c.name) + '/threads', {
        input: c.input.value,
      });
      showResult(c, 'ok', 'Thread ',
        el('a', { href: app.href({ thread: t.thread_id }), 'data-testid': 'workflow-result-thread' },
          t.thread_id),
        ' ' + t.status + '.');
      if (shown) refresh();
    } catch (err) {
      const code = err && err.code ? err.code : 'ERROR';
      c.result.dataset.errorCode = code;
      const why = err && err.status === 401 ? 'this server needs an API key (above)'
        : err && err.message ? err.message : String(err);
      const hint = code === 'QUEUE_FULL' ? '. Try again when one of its threads ends.' : '';
      showResult(c, 'error',
        el('b', { 'data-testid': 'workflow-result-code' }, code),
        (err && err.status ? ' (' + err.status + ')' : '') + ': ' + why + hint);
    } finally {
      c.button.disabled = false;
    }
  }

  function card(w) {
    let c = cards.get(w.name);
    if (!c) {
      const id = 'workflow-input-' + w.name;
      c = {
        name: w.name,
        box: el('div', { class: 'workflow', 'data-testid': 'workflow', 'data-workflow': w.name }),
        description: el('span', { class: 'muted', 'data-testid': 'workflow-description' }),
        roles: el('dd', { 'data-testid': 'workflow-roles' }),
        rounds: el('dd', { 'data-testid': 'workflow-max-rounds' }),
        concurrency: el('dd', { 'data-testid': 'workflow-concurrency' }),
        running: el('dd', { 'data-testid': 'workflow-running' }),
        queued: el('dd', { 'data-testid': 'workflow-queued' }),
        input: el('input', { id, type: 'text', 'data-testid': 'workflow-input', autocomplete: 'off',
          placeholder: 'the thread\u2019s input', 'aria-label': 'input of a thread of ' + w.name }),
        button: el('button', { type: 'submit', 'data-testid': 'workflow-start' }, 'Start thread'),
        result: el('p', { class: 'result', role: 'status', 'data-testid': 'workflow-result', hidden: true }),
      };
      const form = el('form', { class: 'trigger', 'data-testid': 'workflow-trigger' }, c.input, c.button);
      form.addEventListener('submit', (e) => {
        e.preventDefault();
        start(c);
      });
      c.box.append(
        el('div', { class: 'workflow-head' }, el('h3', { 'data-testid': 'workflow-name' }, w.name),
          c.description),
        el('dl', { class: 'facts' }, el('dt', null, 'roles'), c.roles, el('dt', null, 'max rounds'),
          c.rounds, el('dt', null, 'concurrency'), c.concurrency, el('dt', null, 'running'),
          c.running, el('dt', null, 'queued'), c.queued),
        form,
        c.result,
      );
      cards.set(w.name, c);
    }
    setText(c.description, w.description || '');
    setText(c.roles, (w.roles || []).map((r) => r.name + ' (' + r.kind + ')').join(', '));
    setText(c.rounds, String(w.max_rounds));
    setText(c.concurrency, concurrencyText(w.concurrency));
    setText(c.running, String(w.running));
    setText(c.queued, String(w.queued));
    return c;
  }

  function row(t, now) {
    let r = rows.get(t.thread_id);
    if (!r) {
      const href = app.href({ thread: t.thread_id });
      r = {
        tr: el('tr', { 'data-testid': 'thread-row', 'data-thread-id': t.thread_id }),
        status: el('span', { class: 'status', 'data-testid': 'thread-row-status' }),
        workflow: el('a', { href, 'data-testid': 'thread-row-workflow' }, t.workflow),
        input: el('td', { class: 'input', 'data-testid': 'thread-row-input' }),
        started: el('td', { 'data-testid': 'thread-row-started' }),
        end: el('td', { 'data-testid': 'thread-row-end-reason' }),
        rounds: el('td', { class: 'num', 'data-testid': 'thread-row-rounds' }),
        took: el('td', { class: 'num', 'data-testid': 'thread-row-duration' }),
        used: el('td', { class: 'num', 'data-testid': 'thread-row-tokens' }),
        spent: el('td', { class: 'num', 'data-testid': 'thread-row-cost' }),
      };
      r.tr.append(el('td', null, r.status), el('td', null, r.workflow), r.input,
        el('td', null, el('code', null, t.thread_id)), r.started, r.end, r.rounds, r.took, r.used,
        r.spent);
      r.tr.addEventListener('click', (e) => {
        if (!e.target.closest('a')) app.go({ thread: t.thread_id });
      });
      rows.set(t.thread_id, r);
    }
    setText(r.status, t.status);
    r.status.dataset.status = t.status;
    r.tr.dataset.status = t.status;
    setText(r.input, short(t.input, INPUT_SHOWN));
    r.input.title = t.input;
    setText(r.started, when(t.created_at));
    setText(r.end, t.end_reason || '-');
    setText(r.rounds, String(t.rounds));
    setText(r.took, duration(elapsed(t, now)));
    setText(r.used, tokens(t.tokens_in, t.tokens_out));
    setText(r.spent, cost(t.cost_usd));
    return r;
  }

  /** Puts items' elements in parent in order, and drops the others of byKey. */
  function place(parent, byKey, keys, elementOf) {
    const keep = new Set(keys);
    keys.forEach((key, i) => {
      const node = elementOf(byKey.get(key));
      if (parent.children[i] !== node) parent.insertBefore(node, parent.children[i] || null);
    });
    for (const [key, item] of byKey) {
      if (!keep.has(key)) {
        elementOf(item).remove();
        byKey.delete(key);
      }
    }
  }

  async function refresh() {
    clearTimeout(timer);
    const mine = ++generation;
    let next = SLOW_MS;
    try {
      let workflows;
      try {
        workflows = await getJson('/v1/workflows');
      } catch (err) {
        // A server without workflows answers 404 here: nothing to list, nothing to read again.
        if (err.status !== 404) throw err;
        workflows = null;
      }
      if (mine !== generation) return;
      none.hidden = workflows !== null;
      list.hidden = workflows === null;
      if (workflows === null) {
        app.clearError();
        place(flows, cards, [], (c) => c.box);
        return;
      }
      const threads = await getJson('/v1/threads?limit=' + LIMIT);
      if (mine !== generation) return;
      app.clearError();
      const now = Date.now();
      for (const w of workflows) card(w);
      place(flows, cards, workflows.map((w) => w.name), (c) => c.box);
      for (const t of threads) row(t, now);
      place(body, rows, threads.map((t) => t.thread_id), (r) => r.tr);
      empty.hidden = threads.length > 0;
      setText(updated, 'updated ' + new Date(now).toLocaleTimeString());
      const live = threads.some((t) => LIVE_THREAD.has(t.status)) ||
        workflows.some((w) => w.running > 0 || w.queued > 0);
      next = live ? FAST_MS : SLOW_MS;
    } catch (err) {
      if (mine !== generation) return;
      app.showError(err);
      if (err.status === 401) next = null;
    }
    if (mine === generation && shown && next !== null) timer = setTimeout(refresh, next);
  }

  return {
    root,
    show() {
      shown = true;
      refresh();
    },
    hide() {
      shown = false;
      generation++;
      clearTimeout(timer);
    },
  };
}
`;
