/**
 * The trace UI's timeline, live growth and operator actions (docs/trace-ui.md) in headless
 * Chromium, on a real server whose agents stream from the scripted engine and hold at gates
 * the test opens:
 * - a run's page draws one bar per step, at offsets and with durations, queue waits and
 *   times to first token that are the API's timestamps', and every token and cost figure on
 *   the page is the API's for the run and each step;
 * - it grows while the run runs — a step submitted while the page is open, and a delegation,
 *   appear without a reload — through the run's stream, with no read of the step list again
 *   and again (a poll), idle or not;
 * - cancel a step, cancel a run and complete a run from the page change the API's status; a
 *   refused action shows the API's error code and message in the banner;
 * - the runs list is narrowed by status, entry, time and a search;
 * - a thread's page draws one bar per turn, at the turns' times, with the thread's figures.
 *
 * Needs `/usr/bin/chromium` (`apt-get install -y chromium`); never skipped.
 */
import { randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import { afterEach, describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import type { AgentDefinition } from '../../src/actors/agent-runtime.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { createServer, type AxonServer } from '../../src/server/create-server.js';
import { cost, tokens } from '../../src/ui/format.js';
import type { ThreadView } from '../../src/workflows/thread-records.js';
import { defineWorkflow, END } from '../../src/workflows/workflow-definition.js';
import { WorkflowEngine } from '../../src/workflows/workflow-engine.js';
import { POLL, request, useTestServers, type Run, type TestServer } from '../support/server.js';
import { expectCleanPage, useBrowser } from './trace-ui-browser.js';

const servers = useTestServers('server-trace-ui-timeline');
const browser = useBrowser();

/** A gate an agent waits at until the test opens it. */
interface Gate {
  readonly opened: Promise<void>;
  open(): void;
}

function gate(): Gate {
  let open = (): void => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

const gates: Gate[] = [];
const workflowServers: AxonServer[] = [];
afterEach(async () => {
  for (const g of gates.splice(0)) g.open();
  await Promise.all(workflowServers.splice(0).map((w) => w.close()));
});

/**
 * `slow` streams 6 tokens, waits at `midway`, delegates to `quick` (4 tokens), and ends;
 * `held` waits at `hold` before it says anything (a step to cancel).
 */
function gatedAgents(): { agents: AgentDefinition[]; midway: Gate; hold: Gate } {
  const midway = gate();
  const hold = gate();
  gates.push(midway, hold);
  const say = (content: string, max_tokens: number) => ({
    messages: [{ role: 'user' as const, content }],
    params: { max_tokens },
  });
  const quick = defineAgent({
    name: 'quick',
    handler: async (input, ctx, runtime) => (await runtime.chat(say(input.message, 4), ctx)).text,
  });
  const slow = defineAgent({
    name: 'slow',
    handler: async (input, ctx, runtime) => {
      const first = await runtime.chat(say(input.message, 6), ctx);
      await midway.opened;
      const found = await runtime.delegate('quick', 'look it up', ctx);
      return { first: first.text, found: found.output };
    },
  });
  const held = defineAgent({
    name: 'held',
    handler: async (_input, ctx) => {
      await Promise.race([
        hold.opened,
        new Promise((resolve) => {
          ctx.signal.addEventListener('abort', resolve);
        }),
      ]);
      return 'released';
    },
  });
  return { agents: [slow, quick, held], midway, hold };
}

interface ApiStep {
  readonly step_id: string;
  readonly status: string;
  readonly type: string;
  readonly created_at: string;
  readonly started_at: string | null;
  readonly ended_at: string | null;
  readonly first_token_at: string | null;
  readonly budget_usage: { tokens_in: number; tokens_out: number; cost_usd: number };
}

const row = (page: Page, stepId: string) =>
  page.getByTestId('run-view').locator(`[data-testid="timeline-row"][data-step-id="${stepId}"]`);

async function apiSteps(s: TestServer, runId: string): Promise<ApiStep[]> {
  return (await s.api('GET', `/v1/runs/${runId}/steps`)).body as ApiStep[];
}

async function runStatus(s: TestServer, runId: string): Promise<string> {
  return ((await s.api('GET', `/v1/runs/${runId}`)).body as { status: string }).status;
}

async function stepStatus(s: TestServer, stepId: string): Promise<string> {
  return ((await s.api('GET', `/v1/steps/${stepId}`)).body as { status: string }).status;
}

/** How many reads of run `runId`'s step list (or of the run) the page made. */
function reads(watched: { requests: { url: string }[] }, runId: string): number {
  return watched.requests.filter((r) => {
    const path = new URL(r.url).pathname;
    return path === `/v1/runs/${runId}/steps` || path === `/v1/runs/${runId}`;
  }).length;
}

/** Waits until every step of the run has ended. */
async function settled(s: TestServer, runId: string): Promise<ApiStep[]> {
  await expect
    .poll(async () => (await apiSteps(s, runId)).every((st) => st.ended_at !== null), POLL)
    .toBe(true);
  return apiSteps(s, runId);
}

describe('the timeline in headless Chromium', () => {
  it('draws one bar per step at the API’s offsets and durations, and shows the API’s tokens and cost for the run and each step', async () => {
    browser.require();
    const s = await servers.start({ tokenDelayMs: 2 });
    const run = await s.newRun({ seed: 5 });
    // The trip planner delegates to calendar and flights; flights calls a tool.
    const root = await s.submit(run.run_id, {
      type: 'agent',
      input: { agent: 'planner', message: 'Plan a trip to Rome next Friday' },
    });
    await s.streamText(root);
    const tool = await s.submit(run.run_id, {
      type: 'tool_call',
      input: { tool: 'add', args: { a: 2, b: 3 } },
    });
    await s.streamText(tool);
    const steps = await settled(s, run.run_id);
    const { page, watched } = await browser.open(s.url, `run=${run.run_id}`);
    try {
      await expect
        .poll(() => page.getByTestId('run-view').getByTestId('timeline-row').count(), POLL)
        .toBe(steps.length);
      const origin = Math.min(...steps.map((st) => Date.parse(st.created_at)));
      let ttfts = 0;
      for (const st of steps) {
        const r = row(page, st.step_id);
        const started = Date.parse(st.started_at ?? '');
        const ended = Date.parse(st.ended_at ?? '');
        const attr = async (name: string) => Number(await r.getAttribute(name));
        expect(await attr('data-start-ms')).toBe(started - origin);
        expect(await attr('data-created-ms')).toBe(Date.parse(st.created_at) - origin);
        expect(await attr('data-duration-ms')).toBe(ended - started);
        expect(await attr('data-queue-ms')).toBe(started - Date.parse(st.created_at));
        expect(await r.getAttribute('data-live')).toBe('false');
        if (st.first_token_at !== null) {
          ttfts++;
          expect(await attr('data-ttft-ms')).toBe(Date.parse(st.first_token_at) - started);
          expect(await r.getByTestId('timeline-ttft').isVisible()).toBe(true);
        } else {
          expect(await r.getAttribute('data-ttft-ms')).toBe('');
        }
        // The figures are the API's, as the one format of the UI writes them.
        const u = st.budget_usage;
        expect(await r.getByTestId('timeline-tokens').textContent()).toBe(
          tokens(u.tokens_in, u.tokens_out),
        );
        expect(await r.getByTestId('timeline-cost').textContent()).toBe(cost(u.cost_usd));
        expect(await r.getAttribute('data-status')).toBe(st.status);
      }
      expect(ttfts).toBeGreaterThan(0);
      // Nested: a delegation's row is deeper than its parent's, and comes after it.
      const depths: [string | null, string | null][] = [];
      for (const r of await page.getByTestId('run-view').getByTestId('timeline-row').all()) {
        depths.push([await r.getAttribute('data-step-id'), await r.getAttribute('data-depth')]);
      }
      expect(depths[0]).toEqual([root, '0']);
      expect(depths.some(([, d]) => d === '1')).toBe(true);
      expect(depths.at(-1)).toEqual([tool, '0']);
      // The run's figures are the run's.
      const r = (await s.api('GET', `/v1/runs/${run.run_id}`)).body as Run & {
        budget_usage: ApiStep['budget_usage'];
      };
      expect(await page.getByTestId('run-tokens').textContent()).toBe(
        tokens(r.budget_usage.tokens_in, r.budget_usage.tokens_out),
      );
      expect(await page.getByTestId('run-cost').textContent()).toBe(cost(r.budget_usage.cost_usd));
      // The bar of the longest step spans the axis's longest stretch: the axis is the run's.
      const span = Number(
        await page.getByTestId('run-view').getByTestId('timeline').getAttribute('data-span-ms'),
      );
      const last = Math.max(...steps.map((st) => Date.parse(st.ended_at ?? '') - origin));
      expect(span).toBe(Math.max(1, last));
      expectCleanPage(s.url, watched);
    } finally {
      await page.close();
    }
  });

  it('grows while the run runs — a submitted step and a delegation appear without a reload — and polls nothing, idle or not', async () => {
    browser.require();
    const gated = gatedAgents();
    const s = await servers.start({ tokenDelayMs: 20, runtime: { agents: gated.agents } });
    const run = await s.newRun({ seed: 6 });
    const { page, watched } = await browser.open(s.url, `run=${run.run_id}`);
    try {
      await page.getByTestId('run-view').getByTestId('timeline-empty').waitFor();
      const slow = await s.submit(run.run_id, {
        type: 'agent',
        input: { agent: 'slow', message: 'take your time' },
      });
      // Its bar appears, live, and grows with the clock while it waits midway.
      await row(page, slow).waitFor({ timeout: POLL.timeout });
      await expect.poll(() => row(page, slow).getAttribute('data-live'), POLL).toBe('true');
      const end1 = Number(await row(page, slow).getAttribute('data-end-ms'));
      await expect
        .poll(async () => Number(await row(page, slow).getAttribute('data-end-ms')), POLL)
        .toBeGreaterThan(end1 + 400);
      // Its first token's tick shows while it runs: its followed stream's first token.
      await expect.poll(() => row(page, slow).getAttribute('data-ttft-ms'), POLL).not.toBe('');
      const liveTtft = Number(await row(page, slow).getAttribute('data-ttft-ms'));
      // The delegation shows under it while it still runs.
      gated.midway.open();
      const child = page
        .getByTestId('run-view')
        .locator('[data-testid="timeline-row"][data-depth="1"]');
      await child.waitFor({ timeout: POLL.timeout });
      await expect.poll(() => row(page, slow).getAttribute('data-live'), POLL).toBe('false');
      const ended = (await settled(s, run.run_id)).find((st) => st.step_id === slow);
      // The tick it had while it ran is the one its record keeps.
      expect(liveTtft).toBe(
        Date.parse(ended?.first_token_at ?? '') - Date.parse(ended?.started_at ?? ''),
      );
      expect(Number(await row(page, slow).getAttribute('data-ttft-ms'))).toBe(liveTtft);
      // The run is open and idle: a step submitted now appears too.
      const tool = await s.submit(run.run_id, {
        type: 'tool_call',
        input: { tool: 'add', args: { a: 1, b: 1 } },
      });
      await row(page, tool).waitFor({ timeout: POLL.timeout });
      await expect.poll(() => row(page, tool).getAttribute('data-status'), POLL).toBe('succeeded');
      const steps = await apiSteps(s, run.run_id);
      expect(await page.getByTestId('run-view').getByTestId('timeline-row').count()).toBe(
        steps.length,
      );
      // No poll: idle for 5 s, the page reads neither the run nor its steps again...
      const before = reads(watched, run.run_id);
      await page.waitForTimeout(5000);
      expect(reads(watched, run.run_id)).toBe(before);
      // ... and over the whole test it read them at most once each: the run's stream did it.
      expect(before).toBeLessThanOrEqual(2);
      const streams = watched.requests.filter((r) =>
        new URL(r.url).pathname.startsWith(`/v1/runs/${run.run_id}/stream`),
      );
      expect(streams.length).toBeGreaterThanOrEqual(1);
      expectCleanPage(s.url, watched);
    } finally {
      await page.close();
    }
  });
});

describe('operator actions in headless Chromium', () => {
  it('cancels a step from its detail and a run from its page; completes a run; a refused action shows the API’s error', async () => {
    browser.require();
    const gated = gatedAgents();
    const s = await servers.start({ tokenDelayMs: 2, runtime: { agents: gated.agents } });

    // Cancel a step: it waits at its gate; the API says cancelled.
    const run = await s.newRun();
    const held = await s.submit(run.run_id, {
      type: 'agent',
      input: { agent: 'held', message: '' },
    });
    const { page, watched } = await browser.open(s.url, `run=${run.run_id}&step=${held}`);
    try {
      const cancelStep = page.getByTestId('step-cancel');
      await cancelStep.waitFor({ timeout: POLL.timeout });
      // The run still has a live step: completing it is refused, and the banner says why.
      await page.getByTestId('run-complete').click();
      const banner = page.getByTestId('error-banner');
      await banner.waitFor({ timeout: POLL.timeout });
      const refused = await s.api('POST', `/v1/runs/${run.run_id}/complete`);
      expect(refused.status).toBe(409);
      const error = (refused.body as { error: { code: string; message: string } }).error;
      expect(await banner.textContent()).toBe(`${error.code}: ${error.message}`);
      expect(await runStatus(s, run.run_id)).toBe('running');

      await cancelStep.click();
      await expect.poll(() => stepStatus(s, held), POLL).toBe('cancelled');
      await expect.poll(() => row(page, held).getAttribute('data-status'), POLL).toBe('cancelled');
      await expect.poll(() => cancelStep.isVisible(), POLL).toBe(false);

      // Complete the run, now idle: the API says completed, the page too; the buttons go.
      await page.getByTestId('run-complete').click();
      await expect.poll(() => runStatus(s, run.run_id), POLL).toBe('completed');
      await expect.poll(() => page.getByTestId('run-status').textContent(), POLL).toBe('completed');
      await expect.poll(() => page.getByTestId('run-complete').isVisible(), POLL).toBe(false);
      expect(await page.getByTestId('run-cancel').isVisible()).toBe(false);

      // Cancel a run with a live step: the run and its step are cancelled.
      const other = await s.newRun();
      const again = await s.submit(other.run_id, {
        type: 'agent',
        input: { agent: 'held', message: '' },
      });
      await page.goto(`${s.url}/ui#run=${other.run_id}`);
      await row(page, again).waitFor({ timeout: POLL.timeout });
      await page.getByTestId('run-cancel').click();
      await expect.poll(() => stepStatus(s, again), POLL).toBe('cancelled');
      await expect.poll(() => runStatus(s, other.run_id), POLL).toMatch(/^(cancelling|cancelled)$/);
      await expect
        .poll(() => page.getByTestId('run-status').textContent(), POLL)
        .toMatch(/^(cancelling|cancelled)$/);

      // Cancelling a step that has ended is refused (409): the banner shows the API's error.
      await page.goto(`${s.url}/ui#run=${other.run_id}&step=${again}`);
      await page.getByTestId('step-detail').waitFor();
      const late = await s.api('POST', `/v1/steps/${again}/cancel`);
      expect(late.status).toBe(409);
      expect(watched.errors).toEqual([]);
      expectCleanPage(s.url, watched);
    } finally {
      await page.close();
    }
  });
});

describe('a refused action with a read-only key', () => {
  it('shows the API’s 403 FORBIDDEN code and message in the banner, and changes nothing', async () => {
    browser.require();
    const KEYS = { writer: 'writer-key-0123456789abcdef', reader: 'reader-key-0123456789abcdef' };
    const s = await servers.start({
      server: {
        keys: [
          { key: KEYS.writer, user_id: 'ann' },
          { key: KEYS.reader, user_id: 'ann', permissions: ['read'] },
        ],
      },
    });
    const writer = { authorization: `Bearer ${KEYS.writer}` };
    const run = await s.newRun({}, writer);
    const { page, watched } = await browser.open(s.url, `run=${run.run_id}`);
    try {
      await page.getByTestId('auth-form').waitFor();
      await page.getByTestId('auth-key').fill(KEYS.reader);
      await page.getByTestId('auth-submit').click();
      const cancel = page.getByTestId('run-cancel');
      await cancel.waitFor({ timeout: POLL.timeout });
      await cancel.click();
      const banner = page.getByTestId('error-banner');
      await banner.waitFor({ timeout: POLL.timeout });
      const refused = await s.api('POST', `/v1/runs/${run.run_id}/cancel`, undefined, {
        authorization: `Bearer ${KEYS.reader}`,
      });
      expect(refused.status).toBe(403);
      const error = (refused.body as { error: { code: string; message: string } }).error;
      expect(error.code).toBe('FORBIDDEN');
      expect(await banner.textContent()).toBe(`${error.code}: ${error.message}`);
      const now = await s.api('GET', `/v1/runs/${run.run_id}`, undefined, writer);
      expect((now.body as { status: string }).status).toBe('running');
      expectCleanPage(s.url, watched);
    } finally {
      await page.close();
    }
  });
});

describe('the runs list in headless Chromium', () => {
  it('narrows the runs by status, entry, time and a search', async () => {
    browser.require();
    const s = await servers.start();
    const named = async (name: string): Promise<Run> => {
      const flow = await s.api('POST', '/v1/flows', { name, ast: { id: randomUUID() } });
      const { flow_id } = flow.body as { flow_id: string };
      return (await s.api('POST', `/v1/flows/${flow_id}/runs`, {})).body as Run;
    };
    const a = await named('alpha');
    const b = await named('beta');
    const c = await named('alpha');
    expect((await s.api('POST', `/v1/runs/${c.run_id}/complete`)).status).toBe(200);
    const { page, watched } = await browser.open(s.url, 'runs');
    try {
      const ids = async (): Promise<(string | null)[]> => {
        const out: (string | null)[] = [];
        for (const r of await page.getByTestId('run-row').all()) {
          out.push(await r.getAttribute('data-run-id'));
        }
        return out;
      };
      await expect.poll(ids, POLL).toEqual([c.run_id, b.run_id, a.run_id]);

      await page.getByTestId('run-status-filter').selectOption('completed');
      await expect.poll(ids, POLL).toEqual([c.run_id]);
      await page.getByTestId('run-status-filter').selectOption('');
      await expect.poll(ids, POLL).toEqual([c.run_id, b.run_id, a.run_id]);

      await page.getByTestId('run-entry-filter').fill('alpha');
      await page.getByTestId('run-entry-filter').press('Enter');
      await expect.poll(ids, POLL).toEqual([c.run_id, a.run_id]);
      const asked = watched.requests
        .map((r) => new URL(r.url))
        .filter((u) => u.pathname === '/v1/runs');
      expect(asked.some((u) => u.searchParams.get('entry') === 'alpha')).toBe(true);
      await page.getByTestId('run-entry-filter').fill('');
      await page.getByTestId('run-entry-filter').press('Enter');
      await expect.poll(ids, POLL).toEqual([c.run_id, b.run_id, a.run_id]);

      // A time window: the last hour keeps them all; the server is asked with since.
      await page.getByTestId('run-since-filter').selectOption('3600000');
      await expect.poll(ids, POLL).toEqual([c.run_id, b.run_id, a.run_id]);
      const since = watched.requests
        .map((r) => new URL(r.url))
        .filter((u) => u.pathname === '/v1/runs' && u.searchParams.has('since'));
      expect(since.length).toBeGreaterThan(0);

      // A search over the listed runs: by id or entry.
      await page.getByTestId('run-search').fill(b.run_id.slice(-10));
      await expect.poll(ids, POLL).toEqual([b.run_id]);
      await page.getByTestId('run-search').fill('alph');
      await expect.poll(ids, POLL).toEqual([c.run_id, a.run_id]);
      expectCleanPage(s.url, watched);
    } finally {
      await page.close();
    }
  });
});

describe('a thread’s timeline in headless Chromium', () => {
  it('draws one bar per turn, in order, at the turns’ times, with the thread’s tokens and cost for each', async () => {
    browser.require();
    const runtime = servers.runtime({ engines: [createScriptedEngine({ tokenDelayMs: 5 })] });
    const workflow = defineWorkflow({
      name: 'pair',
      roles: {
        writer: { kind: 'engine', engine: 'scripted', prompt: 'You write.' },
        reviewer: { kind: 'engine', engine: 'scripted', prompt: 'You review.' },
      },
      moderator: (t) => (t.turns.length >= 3 ? END : t.turns.length % 2 ? 'reviewer' : 'writer'),
    });
    const server = await createServer(runtime, {
      port: 0,
      workflows: new WorkflowEngine(runtime, [workflow]),
      drainMs: 100,
    });
    workflowServers.push(server);
    const started = await request(server.url, 'POST', '/v1/workflows/pair/threads', {
      input: 'a haiku about queues',
    });
    expect(started.status, started.text).toBe(201);
    const id = (started.body as { thread_id: string }).thread_id;
    const { page, watched } = await browser.open(server.url, `thread=${id}`);
    try {
      const view = page.getByTestId('thread-view');
      await expect
        .poll(() => view.getByTestId('thread-status').textContent(), POLL)
        .toBe('completed');
      const thread = (await request(server.url, 'GET', `/v1/threads/${id}`)).body as ThreadView;
      expect(thread.turns).toHaveLength(3);
      const rows = view.getByTestId('timeline-row');
      await expect.poll(() => rows.count(), POLL).toBe(3);
      const origin = Math.min(
        ...thread.turns.map((t) => Date.parse(t.started_at ?? thread.created_at)),
      );
      for (const [i, t] of thread.turns.entries()) {
        const r = rows.nth(i);
        expect(await r.getAttribute('data-step-id')).toBe(t.step_id);
        expect(await r.getByTestId('timeline-name').textContent()).toBe(`${t.n}. ${t.role}`);
        const startedAt = Date.parse(t.started_at ?? '');
        expect(Number(await r.getAttribute('data-start-ms'))).toBe(startedAt - origin);
        await expect
          .poll(async () => Number(await r.getAttribute('data-duration-ms')), POLL)
          .toBe(Date.parse(t.ended_at ?? '') - startedAt);
        expect(await r.getByTestId('timeline-tokens').textContent()).toBe(
          tokens(t.tokens_in, t.tokens_out),
        );
        expect(await r.getByTestId('timeline-cost').textContent()).toBe(cost(t.cost_usd));
      }
      expectCleanPage(server.url, watched);
    } finally {
      await page.close();
    }
  });
});
