/**
 * What the trace UI tells an operator (issue 45, "Operator views"), in headless Chromium on a
 * real server:
 * - a run that goes on after some of its steps failed says how many, in the runs list and on
 *   its page (`running · 2 failed steps`), counted from the API's steps, and the count follows
 *   a step that fails later;
 * - a tool step's detail shows its arguments first, its output after, and no empty section
 *   (no "no tokens" for a step that streamed none);
 * - a cost below a hundredth of a cent reads in full (`$0.000033`), never as a bound;
 * - at 800 px wide the timeline's axis labels do not overlap and the trace tree's cost column
 *   is not clipped (boxes measured with `getBoundingClientRect`, `scrollWidth`);
 * - a run made under a posted flow name is listed under that name, and the entry filter finds
 *   it.
 *
 * Needs `/usr/bin/chromium` (`apt-get install -y chromium`); never skipped.
 */
import { randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { formatCost, formatRunStatus } from '../../src/observability/human-format.js';
import { POLL, useTestServers, type TestServer } from '../support/server.js';
import { expectCleanPage, useBrowser } from './trace-ui-browser.js';

const servers = useTestServers('server-trace-ui-operator');
const browser = useBrowser();

/** An engine priced at a dollar per million tokens in and three out: a few tokens cost $0.00003. */
const priced = createScriptedEngine({
  name: 'priced',
  tokenDelayMs: 0,
  priceTable: {
    version: 'operator-test-prices',
    models: { scripted: { inputPerMTok: 1, outputPerMTok: 3 } },
  },
});

/** A step of `runId` submitted and read to its end; its id. */
async function ended(s: TestServer, runId: string, step: unknown): Promise<string> {
  const id = await s.submit(runId, step);
  await s.streamText(id);
  return id;
}

/** A tool step that fails: its arguments do not fit `add`'s schema. */
const badAdd = { type: 'tool_call', input: { tool: 'add', args: { a: 'two', b: 3 } } };
const goodAdd = { type: 'tool_call', input: { tool: 'add', args: { a: 2, b: 3 } } };

/** The text of the first element with `testId` under `scope`. */
const textOf = (page: Page, scope: string, testId: string): Promise<string | null> =>
  page.locator(scope).getByTestId(testId).first().textContent();

describe('the trace UI for an operator', () => {
  it("says how many of a running run's steps failed, in the runs list and on its page, and follows a later failure", async () => {
    browser.require();
    const s = await servers.start();
    const clean = await s.newRun();
    await ended(s, clean.run_id, goodAdd);
    const run = await s.newRun();
    await ended(s, run.run_id, badAdd);
    await ended(s, run.run_id, goodAdd);
    await ended(s, run.run_id, badAdd);
    const steps = (await s.api('GET', `/v1/runs/${run.run_id}/steps`)).body as {
      status: string;
    }[];
    expect(steps.map((st) => st.status)).toEqual(['failed', 'succeeded', 'failed']);
    expect(((await s.api('GET', `/v1/runs/${run.run_id}`)).body as { status: string }).status).toBe(
      'running',
    );

    const { page, watched } = await browser.open(s.url);
    try {
      const row = `[data-testid="run-row"][data-run-id="${run.run_id}"]`;
      const cleanRow = `[data-testid="run-row"][data-run-id="${clean.run_id}"]`;
      const cell = (r: string) => page.locator(r).locator('td').first().textContent();
      await expect.poll(() => cell(row), POLL).toBe(formatRunStatus('running', 2));
      expect(await cell(row)).toBe('running · 2 failed steps');
      expect(await textOf(page, row, 'run-row-status')).toBe('running');
      expect(await page.locator(row).getByTestId('run-row-failed').isVisible()).toBe(true);
      expect(await cell(cleanRow)).toBe('running');
      expect(await page.locator(cleanRow).getByTestId('run-row-failed').isVisible()).toBe(false);

      // A step that fails later: the list says so at its next read.
      await ended(s, run.run_id, badAdd);
      await expect.poll(() => cell(row), POLL).toBe('running · 3 failed steps');

      // The run's page, from the steps its stream gives.
      await page.locator(row).getByTestId('run-row-entry').click();
      const head = '[data-testid="run-view"] .toolbar';
      await expect
        .poll(() => page.locator(head).getByTestId('run-failed').textContent(), POLL)
        .toBe(' · 3 failed steps');
      expect(await textOf(page, head, 'run-status')).toBe('running');
      await ended(s, run.run_id, badAdd);
      await expect
        .poll(() => page.locator(head).getByTestId('run-failed').textContent(), POLL)
        .toBe(' · 4 failed steps');
      expectCleanPage(s.url, watched);
    } finally {
      await page.close();
    }
  });

  it("shows a tool step's arguments first, then its output, and no empty section", async () => {
    browser.require();
    const s = await servers.start();
    const run = await s.newRun();
    const stepId = await ended(s, run.run_id, goodAdd);
    const { page, watched } = await browser.open(s.url, `run=${run.run_id}&step=${stepId}`);
    try {
      const detail = page.getByTestId('step-detail');
      await expect
        .poll(() => detail.getByTestId('step-output').first().textContent(), POLL)
        .toBe(JSON.stringify({ sum: 5 }, null, 2));
      expect(await detail.getByTestId('step-input-title').textContent()).toBe('Arguments');
      expect(await detail.getByTestId('step-input').textContent()).toBe(
        JSON.stringify({ a: 2, b: 3 }, null, 2),
      );
      expect(await detail.getByTestId('step-section-input').isVisible()).toBe(true);
      expect(await detail.getByTestId('step-section-events').isVisible()).toBe(true);
      // The arguments come before the output, on the page and in the document.
      const top = async (testId: string): Promise<number> =>
        (await detail.getByTestId(testId).first().boundingBox())?.y ?? Number.NaN;
      expect(await top('step-input')).toBeLessThan(await top('step-output'));
      const after =
        '[data-testid="step-section-input"] ~ [data-testid="step-section-events"] [data-testid="step-output"]';
      expect(await detail.locator(after).count()).toBe(1);
      // A tool streams no text and calls no tool: those sections are not there.
      expect(await detail.getByTestId('step-section-text').isVisible()).toBe(false);
      expect(await detail.getByTestId('step-section-calls').isVisible()).toBe(false);
      const shown = await detail.innerText();
      expect(shown).not.toMatch(/no tokens/i);
      expect(shown).not.toMatch(/^TEXT$/m);
      expectCleanPage(s.url, watched);
    } finally {
      await page.close();
    }
  });

  it('shows a cost below a hundredth of a cent in full, in the runs list, the run and its step', async () => {
    browser.require();
    const s = await servers.start({ runtime: { engines: [priced] } });
    const run = await s.newRun();
    const stepId = await ended(s, run.run_id, {
      type: 'llm_call',
      input: {
        engine: 'priced',
        messages: [{ role: 'user', content: 'hi' }],
        params: { max_tokens: 8 },
      },
    });
    const step = (await s.api('GET', `/v1/steps/${stepId}`)).body as {
      budget_usage: { cost_usd: number };
    };
    const usd = step.budget_usage.cost_usd;
    expect(usd).toBeGreaterThan(0);
    expect(usd).toBeLessThan(0.0001);
    const full = formatCost(usd);
    expect(full).toMatch(/^\$0\.0000\d+$/);

    const { page, watched } = await browser.open(s.url);
    try {
      const row = `[data-testid="run-row"][data-run-id="${run.run_id}"]`;
      await expect.poll(() => textOf(page, row, 'run-row-cost'), POLL).toBe(full);
      await page.locator(row).getByTestId('run-row-entry').click();
      await expect.poll(() => page.getByTestId('run-cost').textContent(), POLL).toBe(full);
      const node = `[data-testid="trace-node"][data-step-id="${stepId}"]`;
      expect(await textOf(page, node, 'trace-node-cost')).toBe(full);
      expect(await page.getByTestId('timeline-cost').first().textContent()).toBe(full);
      expect(await page.locator('body').innerText()).not.toContain('<$');
      expectCleanPage(s.url, watched);
    } finally {
      await page.close();
    }
  });

  it('lists a run made under a posted flow name under that name; the entry filter finds it', async () => {
    browser.require();
    const s = await servers.start();
    const content = { ast: { id: randomUUID() } };
    const hello = (await s.api('POST', '/v1/flows', { name: 'hello', ...content })).body as {
      flow_id: string;
    };
    const trip = await s.api('POST', '/v1/flows', { name: 'trip', ...content });
    expect(trip.body).toMatchObject({ flow_id: hello.flow_id, posted_name: 'trip' });
    const asTrip = await s.api('POST', `/v1/flows/${hello.flow_id}/runs`, { entry: 'trip' });
    expect(asTrip.status, asTrip.text).toBe(201);
    const tripId = (asTrip.body as { run_id: string }).run_id;
    const asHello = await s.api('POST', `/v1/flows/${hello.flow_id}/runs`, {});
    const helloId = (asHello.body as { run_id: string }).run_id;

    const { page, watched } = await browser.open(s.url);
    try {
      const entryOf = (id: string) =>
        textOf(page, `[data-testid="run-row"][data-run-id="${id}"]`, 'run-row-entry');
      await expect.poll(() => entryOf(tripId), POLL).toBe('trip');
      await expect.poll(() => entryOf(helloId), POLL).toBe('hello');

      const filter = page.getByTestId('run-entry-filter');
      await filter.fill('trip');
      await filter.press('Enter');
      const listed = async () =>
        Promise.all(
          (await page.getByTestId('run-row').all()).map((r) => r.getAttribute('data-run-id')),
        );
      await expect.poll(listed, POLL).toEqual([tripId]);

      await page.getByTestId('run-row-entry').first().click();
      await expect.poll(() => page.getByTestId('run-entry').textContent(), POLL).toBe('trip');
      expectCleanPage(s.url, watched);
    } finally {
      await page.close();
    }
  });
});

/** What the tests measure of an element in the page, typed without the DOM library. */
interface Measured {
  readonly textContent: string | null;
  readonly scrollWidth: number;
  readonly clientWidth: number;
  readonly children: ArrayLike<Measured>;
  getBoundingClientRect(): { left: number; right: number; top: number; bottom: number };
}

describe('the trace UI at 800 px wide', () => {
  /** Pairs of boxes (left, right) that overlap horizontally. */
  function overlaps(boxes: readonly { left: number; right: number }[]): number[][] {
    const hits: number[][] = [];
    boxes.forEach((a, i) => {
      boxes.forEach((b, j) => {
        if (j > i && a.left < b.right && b.left < a.right) hits.push([i, j]);
      });
    });
    return hits;
  }

  it("keeps the timeline's axis labels apart and the trace tree's cost column whole", async () => {
    browser.require();
    const s = await servers.start({ runtime: { engines: [priced] } });
    const run = await s.newRun();
    // A tree three deep (planner -> flights -> search_flights), a priced step, a tool step.
    const plan = await ended(s, run.run_id, {
      type: 'agent',
      input: { agent: 'planner', message: 'Plan a trip to Lisbon next Tuesday' },
    });
    await ended(s, run.run_id, {
      type: 'llm_call',
      input: {
        engine: 'priced',
        messages: [{ role: 'user', content: 'hi' }],
        params: { max_tokens: 8 },
      },
    });
    await ended(s, run.run_id, goodAdd);

    const page = await browser.require().newPage({ viewport: { width: 800, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    try {
      await page.goto(`${s.url}/ui#run=${run.run_id}&step=${plan}`);
      const view = page.getByTestId('run-view');
      await view.getByTestId('step-detail-name').waitFor();
      const depths = async () =>
        Promise.all(
          (await view.getByTestId('trace-node').all()).map(async (n) =>
            Number(await n.getAttribute('data-depth')),
          ),
        );
      await expect.poll(async () => Math.max(...(await depths())), POLL).toBeGreaterThanOrEqual(2);

      // The axis: every label inside it, none over another.
      // (These functions run in the page: they name nothing of this file.)
      const ticks = await view.getByTestId('timeline-tick').evaluateAll((els: Measured[]) =>
        els.map((e) => {
          const r = e.getBoundingClientRect();
          return { left: r.left, right: r.right, text: e.textContent };
        }),
      );
      expect(ticks.length).toBeGreaterThanOrEqual(2);
      expect(overlaps(ticks), JSON.stringify(ticks)).toEqual([]);
      const axis = await view.getByTestId('timeline-axis').evaluate((e: Measured) => {
        const r = e.getBoundingClientRect();
        return { left: r.left, right: r.right };
      });
      for (const t of ticks) {
        expect(t.left).toBeGreaterThanOrEqual(axis.left - 0.5);
        expect(t.right).toBeLessThanOrEqual(axis.right + 0.5);
      }

      // The tree: each cost cell shows all its text, inside the tree's box, nothing scrolled.
      const trace = await view.locator('section.trace').evaluate((e: Measured) => ({
        right: e.getBoundingClientRect().right,
        scrollWidth: e.scrollWidth,
        clientWidth: e.clientWidth,
      }));
      expect(trace.scrollWidth).toBeLessThanOrEqual(trace.clientWidth);
      const costs = await view.getByTestId('trace-node-cost').evaluateAll((els: Measured[]) =>
        els.map((e) => ({
          text: e.textContent,
          right: e.getBoundingClientRect().right,
          scrollWidth: e.scrollWidth,
          clientWidth: e.clientWidth,
        })),
      );
      expect(costs.length).toBeGreaterThanOrEqual(5);
      for (const c of costs) {
        expect(c.scrollWidth, JSON.stringify(c)).toBeLessThanOrEqual(c.clientWidth);
        expect(c.right, JSON.stringify(c)).toBeLessThanOrEqual(trace.right);
      }
      expect(costs.some((c) => /^\$0\.0000\d+$/.test(c.text ?? ''))).toBe(true);

      // The run's figures wrap between figures, never between a name and its value.
      const pairs = await view
        .locator('dl.figures > div')
        .evaluateAll((divs: Measured[]) =>
          divs.map((d) => Array.from(d.children, (c) => c.getBoundingClientRect())),
        );
      expect(pairs.length).toBeGreaterThanOrEqual(5);
      for (const [name, value] of pairs) {
        expect(name && value && name.top < value.bottom && value.top < name.bottom).toBe(true);
      }
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
