/**
 * The trace UI's Schedules page, and the durable agents' pages at 800 px (issue 46), in
 * headless Chromium on a real server:
 * - each schedule's agent, key, cron, time zone, overlap, status and next firing are the
 *   API's (`GET /v1/schedules`); Pause and Resume change the API's status (and its next
 *   firing), and the row shows what the API answers; a refused one (a schedule deleted
 *   meanwhile: 404) shows the API's error in the banner; a key opens its actor's page;
 * - at 800 px wide the Agents list, an agent's page and the Schedules list fit the window (no
 *   sideways scroll, every row's last cell inside it) and an agent's figures wrap between
 *   figures, never between a name and its value.
 *
 * Needs `/usr/bin/chromium` (`apt-get install -y chromium`); never skipped.
 */
import { randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { followUp, notebook } from '../../examples/index.js';
import { formatTime } from '../../src/observability/human-format.js';
import { POLL, useTestServers, type TestServer } from '../support/server.js';
import { expectCleanPage, hashOf, useBrowser } from './trace-ui-browser.js';

const servers = useTestServers('server-trace-ui-schedules');
const browser = useBrowser();

const start = (): Promise<TestServer> =>
  servers.start({ runtime: { agents: [notebook, followUp] } });

interface Schedule {
  readonly schedule_id: string;
  readonly agent: string;
  readonly key: string;
  readonly cron: string;
  readonly timezone: string;
  readonly overlap: string;
  readonly status: string;
  readonly next_at: string | null;
}

async function schedule(s: TestServer, body: Record<string, unknown>): Promise<Schedule> {
  const res = await s.api('POST', '/v1/schedules', body);
  expect(res.status, res.text).toBe(201);
  return res.body as Schedule;
}

async function schedules(s: TestServer): Promise<Schedule[]> {
  const res = await s.api('GET', '/v1/schedules');
  expect(res.status, res.text).toBe(200);
  return (res.body as { schedules: Schedule[] }).schedules;
}

/** What the test reads of an element in the page, typed without the DOM library. */
interface Cell {
  readonly textContent: string | null;
  getAttribute(name: string): string | null;
  querySelectorAll(selector: string): ArrayLike<Cell>;
}

/** Each row: its schedule id, its cells' text, its next firing's exact value (one call). */
function rows(page: Page): Promise<(string | null)[][]> {
  return page
    .getByTestId('schedule-row')
    .evaluateAll((trs: Cell[]) =>
      trs.map((tr) => [
        tr.getAttribute('data-schedule-id'),
        ...Array.from(tr.querySelectorAll('td'), (td) => td.textContent),
        ...Array.from(tr.querySelectorAll('time'), (t) => t.getAttribute('datetime')),
      ]),
    );
}

/** What the page must show of each schedule: the API's, formatted as the page does. */
const expected = (list: readonly Schedule[]): (string | null)[][] =>
  list.map((sc) => [
    sc.schedule_id,
    sc.agent,
    sc.key,
    sc.cron,
    sc.timezone,
    sc.overlap,
    sc.status,
    sc.next_at === null ? '-' : formatTime(sc.next_at),
    sc.status === 'active' ? 'Pause' : 'Resume',
    sc.next_at,
  ]);

describe('the Schedules page in headless Chromium', () => {
  it("shows each schedule as the API does; Pause and Resume change the API's; a refused one shows its error", async () => {
    browser.require();
    const s = await start();
    const key = `team-${randomUUID().slice(0, 8)}`;
    const weekdays = await schedule(s, {
      agent: 'notebook',
      key,
      message: { text: 'standup' },
      cron: '0 9 * * 1-5',
      timezone: 'Europe/Berlin',
      overlap: 'queue',
    });
    const yearly = await schedule(s, {
      agent: 'follow-up',
      key: 'ticket-7',
      message: { text: 'review', after_ms: 0 },
      cron: '0 0 1 1 *',
    });
    expect(yearly).toMatchObject({ timezone: 'UTC', overlap: 'skip', status: 'active' });

    const { page, watched } = await browser.open(s.url);
    try {
      await page.getByTestId('nav-schedules').click();
      expect(hashOf(page)).toBe('#schedules');
      await expect.poll(() => rows(page), POLL).toEqual(expected(await schedules(s)));

      const row = page.locator(
        `[data-testid="schedule-row"][data-schedule-id="${weekdays.schedule_id}"]`,
      );
      await row.getByTestId('schedule-pause').click();
      await expect
        .poll(
          async () =>
            (await schedules(s)).find((x) => x.schedule_id === weekdays.schedule_id)?.status,
          POLL,
        )
        .toBe('paused');
      await expect.poll(() => rows(page), POLL).toEqual(expected(await schedules(s)));
      expect(await row.getByTestId('schedule-status').textContent()).toBe('paused');

      await row.getByTestId('schedule-resume').click();
      await expect
        .poll(
          async () =>
            (await schedules(s)).find((x) => x.schedule_id === weekdays.schedule_id)?.status,
          POLL,
        )
        .toBe('active');
      await expect.poll(() => rows(page), POLL).toEqual(expected(await schedules(s)));

      // Deleted meanwhile: its pause is refused (404), the banner says so.
      const other = page.locator(
        `[data-testid="schedule-row"][data-schedule-id="${yearly.schedule_id}"]`,
      );
      expect((await s.api('DELETE', `/v1/schedules/${yearly.schedule_id}`)).status).toBe(204);
      await other.getByTestId('schedule-pause').click();
      const banner = page.getByTestId('error-banner');
      await expect.poll(() => banner.isVisible(), POLL).toBe(true);
      expect(await banner.textContent()).toMatch(/^NOT_FOUND: .+/);
      // The next read drops it.
      await expect.poll(() => rows(page), POLL).toEqual(expected(await schedules(s)));
      expect(await page.getByTestId('schedule-row').count()).toBe(1);

      // A key opens its actor's page.
      await row.getByTestId('schedule-key').click();
      expect(hashOf(page)).toBe(`#agent=notebook&key=${key}`);
      await expect
        .poll(() => page.getByTestId('agent-title').textContent(), POLL)
        .toBe(`notebook/${key}`);
      expectCleanPage(s.url, watched);
    } finally {
      await page.close();
    }
  });
});

/** What the tests measure of an element in the page, typed without the DOM library. */
interface Measured {
  readonly scrollWidth: number;
  readonly clientWidth: number;
  readonly children: ArrayLike<Measured>;
  getBoundingClientRect(): { left: number; right: number; top: number; bottom: number };
}

describe("the durable agents' pages at 800 px wide", () => {
  /** The document's width past the window (0: no sideways scroll). */
  const overflow = (page: Page): Promise<number> =>
    page.locator('html').evaluate((e: Measured) => e.scrollWidth - e.clientWidth);

  /** The right edge of the rightmost last cell of the rows matched by `testId`. */
  const rightmost = (page: Page, testId: string): Promise<number> =>
    page.getByTestId(testId).evaluateAll((trs: Measured[]) =>
      Math.max(
        ...trs.map((tr) => {
          const cells = Array.from(tr.children);
          return cells.at(-1)?.getBoundingClientRect().right ?? 0;
        }),
      ),
    );

  it('fit the window: the Agents list, an agent waiting on a timer, and the Schedules list', async () => {
    browser.require();
    const s = await start();
    // Long keys, a waiting actor with a timer, a schedule with the widest overlap and zone.
    const long = `customer-${randomUUID()}`;
    await s.api('POST', `/v1/agents/notebook/${long}/messages`, { message: { text: 'a note' } });
    const waitingKey = `ticket-${randomUUID()}`;
    await s.api('POST', `/v1/agents/follow-up/${waitingKey}/messages`, {
      message: { text: 'check back', after_ms: 3_600_000 },
    });
    await schedule(s, {
      agent: 'follow-up',
      key: waitingKey,
      message: { text: 'nudge', after_ms: 0 },
      cron: '*/15 9-17 * * 1-5',
      timezone: 'America/Argentina/Buenos_Aires',
      overlap: 'cancel_previous',
    });
    await expect
      .poll(async () => {
        const res = await s.api('GET', `/v1/agents/follow-up/${waitingKey}`);
        return (res.body as { status: string }).status;
      }, POLL)
      .toBe('waiting');

    const page = await browser.require().newPage({ viewport: { width: 800, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    try {
      await page.goto(`${s.url}/ui#agents`);
      await expect.poll(() => page.getByTestId('agent-row').count(), POLL).toBe(2);
      expect(await overflow(page)).toBeLessThanOrEqual(0);
      expect(await rightmost(page, 'agent-row')).toBeLessThanOrEqual(800);

      await page.goto(`${s.url}/ui#agent=follow-up&key=${waitingKey}`);
      const view = page.getByTestId('agent-view');
      await expect.poll(() => view.getByTestId('agent-status').textContent(), POLL).toBe('waiting');
      await view.getByTestId('timeline-row').first().waitFor();
      expect(await overflow(page)).toBeLessThanOrEqual(0);
      // Its figures wrap between figures, never between a name and its value.
      const pairs = await view
        .locator('dl.figures > div')
        .evaluateAll((divs: Measured[]) =>
          divs.map((d) => Array.from(d.children, (c) => c.getBoundingClientRect())),
        );
      expect(pairs.length).toBeGreaterThanOrEqual(6);
      for (const [name, value] of pairs) {
        expect(name && value && name.top < value.bottom && value.top < name.bottom).toBe(true);
      }
      const send = await view.getByTestId('agent-message-send').boundingBox();
      expect((send?.x ?? 0) + (send?.width ?? 0)).toBeLessThanOrEqual(800);

      await page.goto(`${s.url}/ui#schedules`);
      await expect.poll(() => page.getByTestId('schedule-row').count(), POLL).toBe(1);
      expect(await overflow(page)).toBeLessThanOrEqual(0);
      expect(await rightmost(page, 'schedule-row')).toBeLessThanOrEqual(800);
      const button = await page.getByTestId('schedule-pause').boundingBox();
      expect((button?.x ?? 0) + (button?.width ?? 0)).toBeLessThanOrEqual(800);
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
