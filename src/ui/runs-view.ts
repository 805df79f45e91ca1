/**
 * @module The recent runs in the trace UI (`GET /v1/runs`, newest first, 50 at most), read
 * again every two seconds while shown; each row opens its run. Its figures are each run's,
 * as the API gives them, and beside its status how many of its steps failed (` · 2 failed
 * steps`), counted from its steps (`GET /v1/runs/{id}/steps`: the Run body has no such
 * figure) — read again while the run or one of its steps may change, once after. Filters: a
 * status, an entry (the name the run is listed under, exact) and a time window (created in the
 * last 15 minutes, hour, day or week) are the server's (`?status`, `?entry`, `?since`); the
 * search box keeps the listed runs whose id or entry holds its text. An actor's run (entry
 * `actor:<name>/<key>`) links to its agent's page too.
 */
import { getJson, httpStatus } from './api.js';
import type { Run, RunStatus, Step } from './api-types.js';
import { el, setText } from './dom.js';
import {
  LIVE_RUN,
  LIVE_STEP,
  cost,
  duration,
  elapsed,
  failedCount,
  failedNote,
  tokens,
  when,
} from './format.js';
import { placeRows } from './keyed-rows.js';
import { createPoller, type Poller } from './poller.js';
import { actorOfEntry } from './route-hash.js';
import type { App, View } from './view.js';

const REFRESH_MS = 2000;
const LIMIT = 50;
// Runs whose steps are read at once: a browser opens about six connections to one server.
const STEP_READS = 3;
/** The time windows of the `since` filter: a label and its length, ms. */
const WINDOWS: readonly (readonly [string, number])[] = [
  ['last 15 minutes', 15 * 60_000],
  ['last hour', 3_600_000],
  ['last 24 hours', 86_400_000],
  ['last 7 days', 7 * 86_400_000],
];
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
  /** ` · 2 failed steps`, hidden when none failed. */
  readonly failed: HTMLElement;
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
  const entryFilter = el('input', {
    type: 'search',
    'data-testid': 'run-entry-filter',
    'aria-label': 'entry',
    placeholder: 'entry (flow name)',
    spellcheck: 'false',
  });
  const sinceFilter = el(
    'select',
    { 'data-testid': 'run-since-filter', 'aria-label': 'created' },
    el('option', { value: '' }, 'any time'),
    ...WINDOWS.map(([label, ms]) => el('option', { value: String(ms) }, label)),
  );
  const search = el('input', {
    type: 'search',
    'data-testid': 'run-search',
    'aria-label': 'search',
    placeholder: 'search id or entry',
    spellcheck: 'false',
  });
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
    el(
      'div',
      { class: 'toolbar' },
      el('h1', null, 'Runs'),
      el('span', { class: 'filters' }, filter, entryFilter, sinceFilter, search),
      updated,
    ),
    el('table', { class: 'runs' }, el('thead', null, head), body),
    empty,
  );
  const rows = new Map<string, RunRow>();
  /**
   * How many steps of a run failed, as last counted, and whether that is final: the run has
   * ended and none of its steps may still change.
   */
  const failedSteps = new Map<string, { readonly count: number; readonly final: boolean }>();
  let poller: Poller | null = null;

  function start(): void {
    poller?.stop();
    poller = createPoller(refresh);
    poller.poke();
  }

  /** The listed runs, as last read, for the search box. */
  let listed: readonly Run[] = [];
  /** The entry asked of the server: the filter's text when it was last applied. */
  let entryAsked = '';

  function restart(): void {
    rows.clear();
    body.replaceChildren();
    start();
  }
  filter.addEventListener('change', restart);
  sinceFilter.addEventListener('change', restart);
  // The entry filter is asked of the server when it is applied (Enter, or leaving the box).
  const applyEntry = (): void => {
    if (entryFilter.value.trim() === entryAsked) return;
    entryAsked = entryFilter.value.trim();
    restart();
  };
  entryFilter.addEventListener('change', applyEntry);
  entryFilter.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') applyEntry();
  });
  search.addEventListener('input', () => {
    place(Date.now());
  });

  /** The listed runs the search box keeps: its text in their id or entry (case aside). */
  function searched(runs: readonly Run[]): readonly Run[] {
    const text = search.value.trim().toLowerCase();
    if (text === '') return runs;
    return runs.filter(
      (run) =>
        run.run_id.toLowerCase().includes(text) ||
        (rows.get(run.run_id)?.entry.textContent ?? run.entry ?? '').toLowerCase().includes(text),
    );
  }

  function place(now: number): void {
    const shown = searched(listed);
    for (const run of shown) row(run, now);
    placeRows(
      body,
      rows,
      shown.map((run) => run.run_id),
      (r) => r.tr,
    );
    empty.hidden = shown.length > 0;
  }

  /** The query of `GET /v1/runs` the filters ask. */
  function query(): string {
    const params = new URLSearchParams({ limit: String(LIMIT) });
    if (filter.value) params.set('status', filter.value);
    if (entryAsked !== '') params.set('entry', entryAsked);
    const windowMs = Number(sinceFilter.value);
    if (sinceFilter.value !== '' && windowMs > 0) {
      params.set('since', new Date(Date.now() - windowMs).toISOString());
    }
    return `?${params.toString()}`;
  }

  function row(run: Run, now: number): RunRow {
    let r = rows.get(run.run_id);
    if (!r) {
      const href = app.href({ run: run.run_id });
      const made: RunRow = {
        tr: el('tr', { 'data-testid': 'run-row', 'data-run-id': run.run_id }),
        status: el('span', { class: 'status', 'data-testid': 'run-row-status' }),
        failed: el('span', {
          class: 'failed-steps',
          'data-testid': 'run-row-failed',
          hidden: true,
        }),
        entry: el('a', { href, 'data-testid': 'run-row-entry' }, run.flow_id ?? run.run_id),
        started: el('td', { 'data-testid': 'run-row-started' }),
        took: el('td', { class: 'num', 'data-testid': 'run-row-duration' }),
        used: el('td', { class: 'num', 'data-testid': 'run-row-tokens' }),
        spent: el('td', { class: 'num', 'data-testid': 'run-row-cost' }),
      };
      // An actor's messages are the steps of its run: its agent's page shows them too.
      const actor = actorOfEntry(run.entry);
      const agent = actor
        ? el(
            'a',
            { href: app.href({ agent: actor }), class: 'aside', 'data-testid': 'run-row-agent' },
            'agent',
          )
        : null;
      made.tr.append(
        el('td', null, made.status, made.failed),
        el('td', null, made.entry, agent),
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
    const failed = failedSteps.get(run.run_id)?.count ?? 0;
    setText(r.failed, failedNote(failed));
    r.failed.hidden = failed === 0;
    r.tr.dataset['status'] = run.status;
    setText(r.started, when(run.created_at));
    setText(r.took, duration(elapsed(run, now)));
    setText(r.used, tokens(run.budget_usage.tokens_in, run.budget_usage.tokens_out));
    setText(r.spent, cost(run.budget_usage.cost_usd));
    return r;
  }

  /** Counts the failed steps of the runs not counted for good, {@link STEP_READS} at a time. */
  async function countFailed(runs: readonly Run[], current: () => boolean): Promise<void> {
    const due = runs.filter((run) => failedSteps.get(run.run_id)?.final !== true);
    for (let i = 0; i < due.length && current(); i += STEP_READS) {
      await Promise.all(
        due.slice(i, i + STEP_READS).map(async (run) => {
          const steps = await getJson<Step[]>(`/v1/runs/${encodeURIComponent(run.run_id)}/steps`);
          const final = !LIVE_RUN.has(run.status) && !steps.some((st) => LIVE_STEP.has(st.status));
          failedSteps.set(run.run_id, { count: failedCount(steps), final });
        }),
      );
    }
  }

  async function refresh(current: () => boolean): Promise<number | null> {
    try {
      const runs = await getJson<Run[]>(`/v1/runs${query()}`);
      if (!current()) return null;
      app.clearError();
      listed = runs;
      place(Date.now());
      await countFailed(runs, current);
      if (!current()) return null;
      const now = Date.now();
      place(now);
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
