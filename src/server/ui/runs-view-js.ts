/**
 * @module The trace UI's `ui/runs-view.js` (a browser module, kept as a string): the recent
 * runs (`GET /v1/runs`, newest first, 50 at most), by status if asked, read again every two
 * seconds while shown; each row opens its run.
 */

/** `ui/runs-view.js`. */
export const RUNS_VIEW_JS = String.raw`// axon trace UI: the list of recent runs.
import { getJson } from './api.js';
import { cost, duration, el, elapsed, setText, tokens, when } from './format.js';

const REFRESH_MS = 2000;
const LIMIT = 50;
const STATUSES = ['running', 'waiting', 'cancelling', 'completed', 'failed', 'cancelled'];

/** The list of recent runs (the hash #runs, or none), in root. */
export function createRunsView(root, app) {
  const filter = el('select', { 'data-testid': 'run-status-filter', 'aria-label': 'status' },
    el('option', { value: '' }, 'every status'),
    ...STATUSES.map((s) => el('option', { value: s }, s)));
  const updated = el('span', { class: 'muted', 'data-testid': 'runs-updated' });
  const body = el('tbody', { 'data-testid': 'run-list' });
  const head = el('tr', null, ...['status', 'entry', 'run', 'started', 'duration', 'tokens', 'cost']
    .map((h, i) => el('th', { class: i >= 4 ? 'num' : null }, h)));
  const empty = el('p', { class: 'empty', 'data-testid': 'runs-empty', hidden: true },
    'No runs yet. Runs started over the API (POST /v1/flows/{flow_id}/runs) show here.');
  root.append(
    el('div', { class: 'toolbar' }, el('h1', null, 'Runs'), filter, updated),
    el('table', { class: 'runs' }, el('thead', null, head), body),
    empty,
  );
  const rows = new Map();
  let timer = null;
  let generation = 0;
  let shown = false;

  filter.addEventListener('change', () => {
    rows.clear();
    body.replaceChildren();
    refresh();
  });

  function row(run, now) {
    let r = rows.get(run.run_id);
    if (!r) {
      const href = app.href({ run: run.run_id });
      r = {
        tr: el('tr', { 'data-testid': 'run-row', 'data-run-id': run.run_id }),
        status: el('span', { class: 'status', 'data-testid': 'run-row-status' }),
        entry: el('a', { href, 'data-testid': 'run-row-entry' }, run.flow_id || run.run_id),
        id: el('code', null, run.run_id),
        started: el('td', { 'data-testid': 'run-row-started' }),
        took: el('td', { class: 'num', 'data-testid': 'run-row-duration' }),
        used: el('td', { class: 'num', 'data-testid': 'run-row-tokens' }),
        spent: el('td', { class: 'num', 'data-testid': 'run-row-cost' }),
      };
      r.tr.append(el('td', null, r.status), el('td', null, r.entry), el('td', null, r.id),
        r.started, r.took, r.used, r.spent);
      r.tr.addEventListener('click', (e) => {
        if (!e.target.closest('a')) app.go({ run: run.run_id });
      });
      rows.set(run.run_id, r);
    }
    app.entryOf(run).then((name) => setText(r.entry, name));
    setText(r.status, run.status);
    r.status.dataset.status = run.status;
    r.tr.dataset.status = run.status;
    setText(r.started, when(run.created_at));
    setText(r.took, duration(elapsed(run, now)));
    const u = run.budget_usage || {};
    setText(r.used, tokens(u.tokens_in, u.tokens_out));
    setText(r.spent, cost(u.cost_usd));
    return r;
  }

  async function refresh() {
    clearTimeout(timer);
    const mine = ++generation;
    let again = true;
    try {
      const query = '?limit=' + LIMIT + (filter.value ? '&status=' + filter.value : '');
      const runs = await getJson('/v1/runs' + query);
      if (mine !== generation) return;
      app.clearError();
      const now = Date.now();
      const keep = new Set();
      runs.forEach((run, i) => {
        const r = row(run, now);
        keep.add(run.run_id);
        if (body.children[i] !== r.tr) body.insertBefore(r.tr, body.children[i] || null);
      });
      for (const [id, r] of rows) {
        if (!keep.has(id)) {
          r.tr.remove();
          rows.delete(id);
        }
      }
      empty.hidden = runs.length > 0;
      setText(updated, 'updated ' + new Date(now).toLocaleTimeString());
    } catch (err) {
      if (mine !== generation) return;
      app.showError(err);
      again = err.status !== 401;
    }
    if (mine === generation && shown && again) timer = setTimeout(refresh, REFRESH_MS);
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
