/**
 * What a waiting actor waits for, on its agent's page (issue 46, "Trace UI": an agent's page
 * with its timers), in headless Chromium on a real server: each pending wake the server lists
 * (`GET /v1/agents/{name}/{key}/wakes`) as a row — a message's durable sleep and when it ends,
 * a message's wait for an event with the fields its data must have and its timeout, a
 * reminder with its period and message — with the message that waits; the actor `waiting`
 * with its next timer. The event that wakes a wait ends its message on the page, live, and
 * the wait leaves the list.
 *
 * Needs `/usr/bin/chromium` (`apt-get install -y chromium`); never skipped.
 */
import { randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { followUp } from '../../examples/index.js';
import { defineAgent } from '../../src/actors/define-agent.js';
import { formatTime } from '../../src/observability/human-format.js';
import { POLL, useTestServers, type TestServer } from '../support/server.js';
import { agent, expected, send, settled, shown, timelineRows } from './trace-ui-agent-support.js';
import { expectCleanPage, useBrowser } from './trace-ui-browser.js';

const servers = useTestServers('server-trace-ui-agent-waits');
const browser = useBrowser();

const HOUR = 3_600_000;

/** Waits up to an hour for an approval of its ticket (`match`), then logs the answer. */
const approver = defineAgent({
  name: 'approver',
  input: z.strictObject({ ticket: z.string() }),
  durable: { state: z.object({ log: z.array(z.string()) }), initial: { log: [] }, version: 1 },
  handler: async (message, actor) => {
    const data = await actor.waitFor('approval', {
      match: { ticket: message.ticket },
      timeoutMs: HOUR,
      schema: z.object({ ticket: z.string(), by: z.string() }),
    });
    const line = `${message.ticket}:${data?.by ?? 'timed out'}`;
    return { state: { log: [...actor.state.log, line] } };
  },
});

/** `{ every_ms }` sets the reminder `nudge` (`{ ping: true }` every `every_ms`); pings count. */
const nudger = defineAgent({
  name: 'nudger',
  input: z.union([
    z.strictObject({ every_ms: z.number().int().positive() }),
    z.strictObject({ ping: z.literal(true) }),
  ]),
  durable: { state: z.object({ pings: z.number() }), initial: { pings: 0 }, version: 1 },
  handler: async (message, actor) => {
    if ('every_ms' in message) {
      await actor.remind('nudge', { every: message.every_ms, message: { ping: true } });
      return {};
    }
    return { state: { pings: actor.state.pings + 1 } };
  },
});

const start = (): Promise<TestServer> =>
  servers.start({ runtime: { agents: [followUp, approver, nudger] } });

/** A wake as the server lists it. */
interface Wake {
  readonly wake_id: string;
  readonly kind: string;
  readonly status: string;
  readonly due_at: string | null;
  readonly step_id: string | null;
}

async function pendingWakes(s: TestServer, path: string): Promise<Wake[]> {
  const res = await s.api('GET', `/v1/agents/${path}/wakes`);
  expect(res.status, res.text).toBe(200);
  return (res.body as { wakes: Wake[] }).wakes.filter((w) => w.status === 'pending');
}

/** The page's rows of waits: id, kind, what for, due (text and exact), message. */
async function waitRows(page: Page): Promise<(string | null)[][]> {
  const rows = await page.getByTestId('agent-view').getByTestId('agent-wake').all();
  return Promise.all(
    rows.map(async (r) => [
      await r.getAttribute('data-wake-id'),
      await r.getByTestId('agent-wake-kind').textContent(),
      await r.getByTestId('agent-wake-for').textContent(),
      await r.getByTestId('agent-wake-due').textContent(),
      await r.getByTestId('agent-wake-due').getAttribute('datetime'),
      await r.locator('td').last().textContent(),
    ]),
  );
}

/** What the page must show of `w`, saying what it waits for as `forText`. */
const row = (w: Wake, forText: string, message: string): (string | null)[] => [
  w.wake_id,
  w.kind,
  forText,
  w.due_at === null ? '-' : formatTime(w.due_at),
  w.due_at,
  message,
];

describe('what a waiting actor waits for, on its page, in headless Chromium', () => {
  it('lists a sleep and an event wait with their messages and times; the event ends its message live', async () => {
    browser.require();
    const s = await start();
    const sleeper = `sl-${randomUUID().slice(0, 8)}`;
    const slept = await send(s, `follow-up/${sleeper}`, { text: 'check in', after_ms: HOUR });
    await expect
      .poll(async () => (await agent(s, `follow-up/${sleeper}`)).status, POLL)
      .toBe('waiting');
    const [sleep] = await pendingWakes(s, `follow-up/${sleeper}`);
    expect(sleep).toMatchObject({ kind: 'sleep', step_id: slept });
    const waiting = await agent(s, `follow-up/${sleeper}`);
    expect(waiting.next_timer_at).toBe(sleep?.due_at);

    const { page, watched } = await browser.open(s.url, `agent=follow-up&key=${sleeper}`);
    try {
      const view = page.getByTestId('agent-view');
      await expect.poll(() => shown(page), POLL).toEqual(expected(waiting));
      await expect.poll(() => waitRows(page), POLL).toEqual([row(sleep as Wake, 'its time', '#1')]);
      expect(await view.getByTestId('agent-wake-message').getAttribute('href')).toBe(
        `#agent=follow-up&key=${sleeper}&step=${slept}`,
      );
      expect(await timelineRows(page)).toEqual([
        { id: slept, name: '#1 {"text":"check in","after_ms":3600000}', status: 'waiting' },
      ]);

      // An event wait with a match and a timeout: its event, its fields, its timeout's time.
      const key = `ap-${randomUUID().slice(0, 8)}`;
      const asked = await send(s, `approver/${key}`, { ticket: 't-1' });
      await expect
        .poll(async () => (await agent(s, `approver/${key}`)).status, POLL)
        .toBe('waiting');
      const [wait] = await pendingWakes(s, `approver/${key}`);
      expect(wait).toMatchObject({ kind: 'event', step_id: asked });
      expect(wait?.due_at).not.toBeNull();
      await page.goto(`${s.url}/ui#agent=approver&key=${key}`);
      await expect
        .poll(() => shown(page), POLL)
        .toEqual(expected(await agent(s, `approver/${key}`)));
      await expect
        .poll(() => waitRows(page), POLL)
        .toEqual([row(wait as Wake, 'approval where {"ticket":"t-1"}', '#1')]);

      const signal = await s.api('POST', '/v1/events', {
        name: 'approval',
        data: { ticket: 't-1', by: 'dana' },
      });
      expect(signal.body).toEqual({ woken: 1, refused: [] });
      await expect
        .poll(() => timelineRows(page), POLL)
        .toEqual([{ id: asked, name: '#1 {"ticket":"t-1"}', status: 'succeeded' }]);
      const after = await settled(s, `approver/${key}`);
      expect(after.state).toEqual({ log: ['t-1:dana'] });
      await expect.poll(() => shown(page), POLL).toEqual(expected(after));
      expect(await pendingWakes(s, `approver/${key}`)).toEqual([]);
      await expect.poll(() => view.getByTestId('agent-waits').isVisible(), POLL).toBe(false);
      expectCleanPage(s.url, watched);
    } finally {
      await page.close();
    }
  });

  it('lists a reminder with its period and message, its time the next timer of an idle actor', async () => {
    browser.require();
    const s = await start();
    const key = `nu-${randomUUID().slice(0, 8)}`;
    await send(s, `nudger/${key}`, { every_ms: HOUR });
    const idle = await settled(s, `nudger/${key}`);
    const [reminder] = await pendingWakes(s, `nudger/${key}`);
    expect(reminder).toMatchObject({ kind: 'reminder', step_id: null });
    expect(idle.status).not.toBe('waiting');
    expect(idle.next_timer_at).toBe(reminder?.due_at);

    const { page, watched } = await browser.open(s.url, `agent=nudger&key=${key}`);
    try {
      await expect.poll(() => shown(page), POLL).toEqual(expected(idle));
      await expect
        .poll(() => waitRows(page), POLL)
        .toEqual([row(reminder as Wake, 'nudge every 1h00m: {"ping":true}', '-')]);
      expectCleanPage(s.url, watched);
    } finally {
      await page.close();
    }
  });
});
