/**
 * @module The recent runs in the trace UI (`GET /v1/runs`, newest first, 50 at most), by
 * status if asked, read again every two seconds while shown; each row opens its run. Its
 * figures are each run's, as the API gives them.
 */
import { getJson, httpStatus } from './api.js';
import type { Run, RunStatus } from './api-types.js';
import { el, setText } from './dom.js';
import { cost, duration, elapsed, tokens, when } from './format.js';
import { placeRows } from './keyed-rows.js';
import { createPoller, type Poller } from './poller.js';
import type { App, View } from './view.js';

const REFRESH_MS = 2000;
const LIMIT = 50;
const STATUSES: readonly RunStatus[] = [
  'running',
  'waiting',
  'cancelling',
  'completed',
  'failed',
  'cancelled',
];

/** The elements of one run's row. */
interface RunRow {
  readonly tr: HTMLTableRowElement;
  readonly status: HTMLElement;
  readonly entry: HTMLElement;
  readonly started: HTMLElement;
  readonly took: HTMLElement;
  readonly used: HTMLElement;
  readonly spent: HTMLElement;
}

/** The list of recent runs (the hash `#runs`, or none), in `root`. */
export function createRunsView(root: HTMLElement, app: App): View {
  const filter = el(
    'select',
    { 'data-testid': 'run-status-filter', 'aria-label': 'status' },
    el('option', { value: '' }, 'every status'),
    ...STATUSES.map((s) => el('option', { value: s }, s)),
  );
  const updated = el('span', { class: 'muted', 'data-testid': 'runs-updated' });
  const body = el('tbody', { 'data-testid': 'run-list' });
  const head = el(
    'tr',
    null,
    ...['status', 'entry', 'run', 'started', 'duration', 'tokens', 'cost'].map((h, i) =>
      el('th', { class: i >= 4 ? 'num' : null }, h),
    ),
  );
  const empty = el(
    'p',
    { class: 'empty', 'data-testid': 'runs-empty', hidden: true },
    'No runs yet. Runs started over the API (POST /v1/flows/{flow_id}/runs) show here.',
  );
  root.append(
    el('div', { class: 'toolbar' }, el('h1', null, 'Runs'), filter, updated),
    el('table', { class: 'runs' }, el('thead', null, head), body),
    empty,
  );
  const rows = new Map<string, RunRow>();
  let poller: Poller | null = null;

  function start(): void {
    poller?.stop();
    poller = createPoller(refresh);
    poller.poke();
  }

  filter.addEventListener('change', () => {
    rows.clear();
    body.replaceChildren();
    start();
  });

  function row(run: Run, now: number): RunRow {
    let r = rows.get(run.run_id);
    if (!r) {
      const href = app.href({ run: run.run_id });
      const made: RunRow = {
        tr: el('tr', { 'data-testid': 'run-row', 'data-run-id': run.run_id }),
        status: el('span', { class: 'status', 'data-testid': 'run-row-status' }),
        entry: el('a', { href, 'data-testid': 'run-row-entry' }, run.flow_id ?? run.run_id),
        started: el('td', { 'data-testid': 'run-row-started' }),
        took: el('td', { class: 'num', 'data-testid': 'run-row-duration' }),
        used: el('td', { class: 'num', 'data-testid': 'run-row-tokens' }),
        spent: el('td', { class: 'num', 'data-testid': 'run-row-cost' }),
      };
      made.tr.append(
        el('td', null, made.status),
        el('td', null, made.entry),
        el('td', null, el('code', null, run.run_id)),
        made.started,
        made.took,
        made.used,
        made.spent,
      );
      made.tr.addEventListener('click', (e) => {
        if (!(e.target instanceof Element && e.target.closest('a'))) app.go({ run: run.run_id });
      });
      rows.set(run.run_id, made);
      r = made;
    }
    const entry = r.entry;
    void app.entryOf(run).then((name) => {
      setText(entry, name);
    });
    setText(r.status, run.status);
    r.status.dataset['status'] = run.status;
    r.tr.dataset['status'] = run.status;
    setText(r.started, when(run.created_at));
    setText(r.took, duration(elapsed(run, now)));
    setText(r.used, tokens(run.budget_usage.tokens_in, run.budget_usage.tokens_out));
    setText(r.spent, cost(run.budget_usage.cost_usd));
    return r;
  }

  async function refresh(current: () => boolean): Promise<number | null> {
    try {
      const query = `?limit=${LIMIT}${filter.value ? `&status=${filter.value}` : ''}`;
      const runs = await getJson<Run[]>(`/v1/runs${query}`);
      if (!current()) return null;
      app.clearError();
      const now = Date.now();
      for (const run of runs) row(run, now);
      placeRows(
        body,
        rows,
        runs.map((run) => run.run_id),
        (r) => r.tr,
      );
      empty.hidden = runs.length > 0;
      setText(updated, `updated ${when(new Date(now).toISOString())}`);
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
