/**
 * @module The schedules of durable agents in the trace UI (`GET /v1/schedules`, in creation
 * order), read again every five seconds while shown: each with its agent and key (a link to
 * the actor's page), cron, time zone, overlap, status and next firing, and a button that
 * pauses an active one (`POST /v1/schedules/{id}/pause`) or resumes a paused one
 * (`POST /v1/schedules/{id}/resume`). The row shows the schedule the answer gives; a refusal
 * (404 a schedule gone or another user's, 403 a read-only key) is the API's error in the
 * page's banner, as the operator's other actions.
 */
import { getJson, httpStatus, postJson } from './api.js';
import type { Schedule } from './api-types.js';
import { el, setText, setTime } from './dom.js';
import { when } from './format.js';
import { placeRows } from './keyed-rows.js';
import { createPoller, type Poller } from './poller.js';
import type { App, View } from './view.js';

const REFRESH_MS = 5000;

/** The elements of one schedule's row. */
interface ScheduleRow {
  readonly tr: HTMLTableRowElement;
  readonly status: HTMLElement;
  readonly next: HTMLTimeElement;
  readonly button: HTMLButtonElement;
  /** The schedule as last read or answered. */
  schedule: Schedule;
  /** When its last pause or resume was answered (`performance.now()`); 0: none. */
  answeredAt: number;
}

/** A time zone's text with a break allowed after each '/' (`America/Argentina/Buenos_Aires`). */
function zoneParts(zone: string): (string | HTMLElement)[] {
  return zone.split('/').flatMap((part, i) => (i === 0 ? [part] : ['/', el('wbr'), part]));
}

/** The list of schedules (the hash `#schedules`), in `root`. */
export function createSchedulesView(root: HTMLElement, app: App): View {
  const updated = el('span', { class: 'muted', 'data-testid': 'schedules-updated' });
  const body = el('tbody', { 'data-testid': 'schedule-list' });
  const head = el(
    'tr',
    null,
    ...['agent', 'key', 'cron', 'time zone', 'overlap', 'status', 'next firing', ''].map((h) =>
      el('th', null, h),
    ),
  );
  const empty = el(
    'p',
    { class: 'empty', 'data-testid': 'schedules-empty', hidden: true },
    'No schedules. Make one with POST /v1/schedules, or declare it in axon.yaml\u2019s schedules:.',
  );
  root.append(
    el('div', { class: 'toolbar' }, el('h1', null, 'Schedules'), updated),
    el('table', { class: 'runs schedules' }, el('thead', null, head), body),
    empty,
  );
  const rows = new Map<string, ScheduleRow>();
  let poller: Poller | null = null;
  /** The last read failed (its error is in the banner): the next that succeeds clears it. */
  let readFailed = false;

  function draw(r: ScheduleRow): void {
    const s = r.schedule;
    setText(r.status, s.status);
    r.status.dataset['status'] = s.status;
    r.tr.dataset['status'] = s.status;
    setTime(r.next, s.next_at);
    setText(r.button, s.status === 'active' ? 'Pause' : 'Resume');
    r.button.setAttribute(
      'data-testid',
      s.status === 'active' ? 'schedule-pause' : 'schedule-resume',
    );
  }

  /** Pauses or resumes the row's schedule; the row shows what the API answers. */
  function toggle(r: ScheduleRow): void {
    if (r.button.disabled) return;
    const id = r.schedule.schedule_id;
    const verb = r.schedule.status === 'active' ? 'pause' : 'resume';
    r.button.disabled = true;
    postJson<Schedule>(`/v1/schedules/${encodeURIComponent(id)}/${verb}`, {}).then(
      (answer) => {
        r.button.disabled = false;
        app.clearError();
        r.schedule = answer;
        r.answeredAt = performance.now();
        draw(r);
      },
      (err: unknown) => {
        r.button.disabled = false;
        app.showError(err);
        // Refused: read what is there now (a schedule deleted meanwhile goes from the list).
        poller?.poke();
      },
    );
  }

  /** The row of `s`, as a read that started at `askedAt` (`performance.now()`) gave it. */
  function row(s: Schedule, askedAt: number): ScheduleRow {
    let r = rows.get(s.schedule_id);
    if (!r) {
      const href = app.href({ agent: { name: s.agent, key: s.key } });
      const made: ScheduleRow = {
        tr: el('tr', {
          'data-testid': 'schedule-row',
          'data-schedule-id': s.schedule_id,
          title: s.schedule_id,
        }),
        status: el('span', { class: 'status', 'data-testid': 'schedule-status' }),
        next: el('time', { 'data-testid': 'schedule-next' }),
        button: el('button', { type: 'button', class: 'action' }),
        schedule: s,
        answeredAt: 0,
      };
      made.tr.append(
        el('td', { 'data-testid': 'schedule-agent' }, s.agent),
        el('td', { class: 'key' }, el('a', { href, 'data-testid': 'schedule-key' }, s.key)),
        el('td', { class: 'cron' }, el('code', { 'data-testid': 'schedule-cron' }, s.cron)),
        el('td', { class: 'zone', 'data-testid': 'schedule-timezone' }, ...zoneParts(s.timezone)),
        el('td', { 'data-testid': 'schedule-overlap' }, s.overlap),
        el('td', null, made.status),
        el('td', { class: 'next' }, made.next),
        el('td', null, made.button),
      );
      made.button.addEventListener('click', () => {
        toggle(made);
      });
      rows.set(s.schedule_id, made);
      r = made;
    }
    // A pause or resume answers for the row: a read made before its answer, or while it is
    // on its way, does not.
    if (!r.button.disabled && askedAt > r.answeredAt) r.schedule = s;
    draw(r);
    return r;
  }

  async function refresh(current: () => boolean): Promise<number | null> {
    const askedAt = performance.now();
    try {
      const { schedules } = await getJson<{ schedules: Schedule[] }>('/v1/schedules');
      if (!current()) return null;
      // Only a read's own failure is cleared here: a refused pause stays in the banner.
      if (readFailed) app.clearError();
      readFailed = false;
      for (const s of schedules) row(s, askedAt);
      placeRows(
        body,
        rows,
        schedules.map((s) => s.schedule_id),
        (r) => r.tr,
      );
      empty.hidden = schedules.length > 0;
      setText(updated, `updated ${when(new Date().toISOString())}`);
      return REFRESH_MS;
    } catch (err) {
      if (!current()) return null;
      readFailed = true;
      app.showError(err);
      return httpStatus(err) === 401 ? null : REFRESH_MS;
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
