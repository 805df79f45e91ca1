/**
 * The trace UI's Agents page (issue 46, "Trace UI": an agents page, search by key), in
 * headless Chromium on a real server:
 * - the actors newest first, each row's agent, key, status, mailbox depth, next timer and
 *   updated time the API's (`GET /v1/agents`), page after page by the listing's cursor;
 * - filtered by agent name and by status, and searched by a key's start, as the server's
 *   `?name=`, `?status=` and `?key_prefix=` answer;
 * - a row opens its agent's page; an actor's run links to it from the runs list and the run's
 *   page (which offers neither to complete nor to cancel the run: it lives as long as its
 *   actor), and the agent's page links back to its run;
 * - with keys: an admin's list holds every user's actors and opens another user's actor as
 *   that user's (no form: an admin's messages go to its own actors); its run's link finds it.
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

const servers = useTestServers('server-trace-ui-agents');
const browser = useBrowser();

const ALICE = 'alice-key-0123456789';
const OPS = 'ops-admin-key-0123456';
const as = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });

function start(withKeys = false): Promise<TestServer> {
  return servers.start({
    runtime: { agents: [notebook, followUp] },
    ...(withKeys
      ? {
          server: {
            keys: [
              { key: ALICE, user_id: 'alice' },
              { key: OPS, user_id: 'ops', permissions: ['read', 'write', 'admin'] },
            ],
          },
        }
      : {}),
  });
}

interface AgentView {
  readonly name: string;
  readonly key: string;
  readonly user_id: string;
  readonly status: string;
  readonly mailbox_depth: number;
  readonly next_timer_at: string | null;
  readonly run_id: string;
  readonly updated_at: string;
}

async function send(
  s: TestServer,
  path: string,
  message: unknown,
  headers: Record<string, string> = {},
): Promise<void> {
  const res = await s.api('POST', `/v1/agents/${path}/messages`, { message }, headers);
  expect(res.status, res.text).toBe(202);
}

/** A page of `GET /v1/agents` with `query`. */
async function listed(
  s: TestServer,
  query: string,
  headers: Record<string, string> = {},
): Promise<{ agents: AgentView[]; next: string | null }> {
  const res = await s.api('GET', `/v1/agents?${query}`, undefined, headers);
  expect(res.status, res.text).toBe(200);
  return res.body as { agents: AgentView[]; next: string | null };
}

/** Resolves once no actor listed by `query` has a message open. */
async function settled(s: TestServer, query = 'limit=500'): Promise<void> {
  await expect
    .poll(async () => {
      const { agents } = await listed(s, query);
      return agents.every((a) => a.status !== 'busy' && a.mailbox_depth === 0);
    }, POLL)
    .toBe(true);
}

/** A row as the page shows it, cell by cell. */
type Row = readonly (string | null)[];

/** What the test reads of a row's elements in the page, typed without the DOM library. */
interface RowElement {
  getAttribute(name: string): string | null;
  querySelectorAll(selector: string): ArrayLike<RowElement & { textContent: string | null }>;
}

/**
 * Each row: its run id, its cells' text, then its times' exact values (to the millisecond;
 * their text is to the second). Read in one call (it runs in the page: it names nothing of
 * this file).
 */
function rows(page: Page): Promise<Row[]> {
  return page
    .getByTestId('agent-row')
    .evaluateAll((trs: RowElement[]) =>
      trs.map((tr) => [
        tr.getAttribute('data-run-id'),
        ...Array.from(tr.querySelectorAll('td'), (td) => td.textContent),
        ...Array.from(tr.querySelectorAll('time'), (t) => t.getAttribute('datetime')),
      ]),
    );
}

/** What the page must show of each actor: the API's figures, formatted as the page does. */
const expected = (agents: readonly AgentView[]): Row[] =>
  agents.map((a) => [
    a.run_id,
    a.name,
    a.key,
    a.status,
    String(a.mailbox_depth),
    a.next_timer_at === null ? '-' : formatTime(a.next_timer_at),
    formatTime(a.updated_at),
    a.next_timer_at,
    a.updated_at,
  ]);

describe('the Agents page in headless Chromium', () => {
  it("lists the actors newest first with the API's figures, filters by name and status, searches by key prefix", async () => {
    browser.require();
    const s = await start();
    const tag = randomUUID().slice(0, 6);
    for (const key of [`cust-${tag}-1`, `cust-${tag}-2`, `team-${tag}`]) {
      await send(s, `notebook/${key}`, { text: 'hello' });
    }
    await send(s, `follow-up/cust-${tag}-9`, { text: 'refund', await: 'approval' });
    await settled(s);
    const all = await listed(s, 'limit=50');
    expect(all.agents.map((a) => a.key)).toEqual([
      `cust-${tag}-9`,
      `team-${tag}`,
      `cust-${tag}-2`,
      `cust-${tag}-1`,
    ]);
    expect(all.agents[0]?.status).toBe('waiting');

    const { page, watched } = await browser.open(s.url);
    try {
      await page.getByTestId('nav-agents').click();
      expect(hashOf(page)).toBe('#agents');
      await expect.poll(() => rows(page), POLL).toEqual(expected(all.agents));

      // By name (exact, on Enter): the server's `?name=`.
      const name = page.getByTestId('agent-name-filter');
      await name.fill('follow-up');
      await name.press('Enter');
      const byName = await listed(s, 'name=follow-up');
      expect(byName.agents).toHaveLength(1);
      await expect.poll(() => rows(page), POLL).toEqual(expected(byName.agents));
      await name.fill('');
      await name.press('Enter');

      // By status: the server's `?status=`.
      await page.getByTestId('agent-status-filter').selectOption('waiting');
      const waiting = await listed(s, 'status=waiting');
      await expect.poll(() => rows(page), POLL).toEqual(expected(waiting.agents));
      await page.getByTestId('agent-status-filter').selectOption('awake');
      const awake = await listed(s, 'status=awake');
      expect(awake.agents.map((a) => a.key).sort()).toEqual(
        [`cust-${tag}-1`, `cust-${tag}-2`, `team-${tag}`].sort(),
      );
      await expect.poll(() => rows(page), POLL).toEqual(expected(awake.agents));

      // Searched by a key's start, with the status filter still on.
      await page.getByTestId('agent-key-search').fill(`cust-${tag}`);
      const prefixed = await listed(s, `status=awake&key_prefix=cust-${tag}`);
      expect(prefixed.agents.map((a) => a.key)).toEqual([`cust-${tag}-2`, `cust-${tag}-1`]);
      await expect.poll(() => rows(page), POLL).toEqual(expected(prefixed.agents));
      await page.getByTestId('agent-key-search').fill(`nobody-${tag}`);
      await expect
        .poll(() => page.getByTestId('agents-empty').textContent(), POLL)
        .toBe('No actor matches these filters.');
      expect(await page.getByTestId('agent-row').count()).toBe(0);

      // A row opens its agent's page.
      await page.getByTestId('agent-key-search').fill(`team-${tag}`);
      await page.getByTestId('agent-status-filter').selectOption('');
      await expect.poll(() => page.getByTestId('agent-row').count(), POLL).toBe(1);
      await page.getByTestId('agent-row').click();
      expect(hashOf(page)).toBe(`#agent=notebook&key=team-${tag}&user=anonymous`);
      await expect
        .poll(() => page.getByTestId('agent-state').textContent(), POLL)
        .toBe(JSON.stringify({ notes: ['hello'] }, null, 2));
      expect(await page.getByTestId('nav-agents').getAttribute('class')).toBe('active');
      expectCleanPage(s.url, watched);
    } finally {
      await page.close();
    }
  });

  it("pages by the listing's cursor: 50 newest, then the older ones, and back", async () => {
    browser.require();
    const s = await start();
    const tag = randomUUID().slice(0, 6);
    for (let i = 0; i < 53; i += 1) {
      await send(s, `notebook/p-${tag}-${String(i).padStart(2, '0')}`, { text: `n${i}` });
    }
    await settled(s);
    const first = await listed(s, 'limit=50');
    expect(first.agents).toHaveLength(50);
    expect(first.next).not.toBeNull();
    const second = await listed(s, `limit=50&before=${first.next ?? ''}`);
    expect(second.agents.map((a) => a.key)).toEqual([`p-${tag}-02`, `p-${tag}-01`, `p-${tag}-00`]);
    expect(second.next).toBeNull();

    const { page, watched } = await browser.open(s.url, 'agents');
    try {
      await expect.poll(() => rows(page), POLL).toEqual(expected(first.agents));
      expect(await page.getByTestId('agents-newer').isDisabled()).toBe(true);
      expect(await page.getByTestId('agents-page').textContent()).toBe('page 1');
      await page.getByTestId('agents-older').click();
      await expect.poll(() => rows(page), POLL).toEqual(expected(second.agents));
      expect(await page.getByTestId('agents-page').textContent()).toBe('page 2');
      expect(await page.getByTestId('agents-older').isDisabled()).toBe(true);
      await page.getByTestId('agents-newer').click();
      await expect.poll(() => rows(page), POLL).toEqual(expected(first.agents));
      expectCleanPage(s.url, watched);
    } finally {
      await page.close();
    }
  });

  it("links an actor's run to its agent's page from the runs list and the run's page, and back", async () => {
    browser.require();
    const s = await start();
    const key = `l-${randomUUID().slice(0, 8)}`;
    await send(s, `notebook/${key}`, { text: 'linked' });
    await settled(s);
    const [actor] = (await listed(s, `key_prefix=${key}`)).agents;
    const runId = actor?.run_id ?? '';
    const run = (await s.api('GET', `/v1/runs/${runId}`)).body as { entry: string };
    expect(run.entry).toBe(`actor:notebook/${key}`);

    const { page, watched } = await browser.open(s.url);
    try {
      const row = page.locator(`[data-testid="run-row"][data-run-id="${runId}"]`);
      await expect
        .poll(() => row.getByTestId('run-row-entry').textContent(), POLL)
        .toBe(`actor:notebook/${key}`);
      await row.getByTestId('run-row-agent').click();
      expect(hashOf(page)).toBe(`#agent=notebook&key=${key}`);
      await expect
        .poll(() => page.getByTestId('agent-state').textContent(), POLL)
        .toBe(JSON.stringify({ notes: ['linked'] }, null, 2));
      // The agent's page opens its run, whose page links back.
      await page.getByTestId('agent-run-link').click();
      expect(hashOf(page)).toBe(`#run=${runId}`);
      const back = page.getByTestId('run-agent-link');
      await back.waitFor();
      expect(await page.getByTestId('run-thread-link').isVisible()).toBe(false);
      // Its run lives as long as the actor: the page offers neither to complete nor to cancel it.
      expect(await page.getByTestId('run-status').textContent()).toBe('running');
      expect(await page.getByTestId('run-complete').isVisible()).toBe(false);
      expect(await page.getByTestId('run-cancel').isVisible()).toBe(false);
      await back.click();
      expect(hashOf(page)).toBe(`#agent=notebook&key=${key}`);
      await expect
        .poll(() => page.getByTestId('agent-title').textContent(), POLL)
        .toBe(`notebook/${key}`);
      expectCleanPage(s.url, watched);
    } finally {
      await page.close();
    }
  });

  it("shows an admin every user's actors, and another user's as that user's, with no form to message it", async () => {
    browser.require();
    const s = await start(true);
    const key = `a-${randomUUID().slice(0, 8)}`;
    await send(s, `notebook/${key}`, { text: 'from alice' }, as(ALICE));
    await expect
      .poll(async () => {
        const res = await s.api('GET', `/v1/agents/notebook/${key}`, undefined, as(ALICE));
        return (res.body as { mailbox_depth?: number; status?: string }).status;
      }, POLL)
      .toBe('awake');
    const alices = (await s.api('GET', `/v1/agents/notebook/${key}`, undefined, as(ALICE)))
      .body as AgentView;
    // The admin has no actor of that address itself.
    expect((await s.api('GET', `/v1/agents/notebook/${key}`, undefined, as(OPS))).status).toBe(404);

    const page = await browser.require().newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.addInitScript(`sessionStorage.setItem('axon.apiKey', ${JSON.stringify(OPS)});`);
    try {
      await page.goto(`${s.url}/ui#agents`);
      const row = page.locator(`[data-testid="agent-row"][data-run-id="${alices.run_id}"]`);
      await expect.poll(() => row.getByTestId('agent-row-key').textContent(), POLL).toBe(key);
      expect(await row.getAttribute('title')).toBe('user alice');
      await row.getByTestId('agent-row-key').click();
      expect(hashOf(page)).toBe(`#agent=notebook&key=${key}&user=alice`);
      const view = page.getByTestId('agent-view');
      await expect
        .poll(() => view.getByTestId('agent-state').textContent(), POLL)
        .toBe(JSON.stringify({ notes: ['from alice'] }, null, 2));
      expect(await view.getByTestId('agent-user').textContent()).toBe('alice');
      await expect.poll(() => view.getByTestId('agent-message-off').isVisible(), POLL).toBe(true);
      expect(await view.getByTestId('agent-message-off').textContent()).toMatch(
        /^This is user alice’s actor: a message sent from here would go to your own notebook\//,
      );
      expect(await view.getByTestId('agent-message-form').isVisible()).toBe(false);

      // From its run's page (whose body names no user): the listing says whose it is.
      await page.goto(`${s.url}/ui#run=${alices.run_id}`);
      await page.getByTestId('run-agent-link').click();
      await expect.poll(() => hashOf(page), POLL).toBe(`#agent=notebook&key=${key}&user=alice`);
      await expect.poll(() => view.getByTestId('agent-user').textContent(), POLL).toBe('alice');
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
