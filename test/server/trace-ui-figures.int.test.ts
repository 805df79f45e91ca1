/**
 * The trace UI shows the API's figures (issue 33, "right figures"): on a real server whose
 * engine streams more chunks than the tokens it reports — as a hosted model's stream does —
 * every token and cost figure the page shows for a thread, its turns, the thread's row, and
 * the same run and its steps in the run view equals what `GET /v1/threads/{id}`,
 * `GET /v1/threads`, `GET /v1/runs/{id}` and `GET /v1/runs/{id}/steps` give for the same
 * object — not a count of the streamed events (which the page once showed: 5 out for a turn
 * the API says used 3).
 *
 * Needs `/usr/bin/chromium` (`apt-get install -y chromium`); without it this test fails and
 * says so — it is never skipped.
 */
import type { Page } from 'playwright-core';
import { afterEach, describe, expect, it } from 'vitest';
import type { Engine, EngineReply } from '../../src/engines/chat-request.js';
import { formatCost, formatTokens } from '../../src/observability/human-format.js';
import { createServer, type AxonServer } from '../../src/server/create-server.js';
import type { ThreadView } from '../../src/workflows/thread-records.js';
import { defineWorkflow, END } from '../../src/workflows/workflow-definition.js';
import { WorkflowEngine } from '../../src/workflows/workflow-engine.js';
import { POLL, request, useTestServers } from '../support/server.js';
import { expectCleanPage, goTo, hashOf, useBrowser } from './trace-ui-browser.js';

const browser = useBrowser();
/** The project's store for the server's runtime (PostgreSQL under `http-on-postgres`). */
const stores = useTestServers('server-trace-ui-figures');
const TURNS = 3;
/** What the engine streams per call, and the usage it reports: fewer tokens than chunks. */
const CHUNKS = ['the ', 'draft ', 'reads ', 'well ', 'now'];
const REPORTED = { tokensIn: 1_234, tokensOut: 3 };

/** An engine that streams 5 chunks and reports 1,234 tokens in and 3 out, priced. */
function chunkyEngine(): Engine {
  return {
    name: 'chunky',
    defaultModel: 'chunky-1',
    defaultMaxTokens: 64,
    priceTable: {
      version: 'test-prices',
      models: { 'chunky-1': { inputPerMTok: 1_000, outputPerMTok: 3_000 } },
    },
    async *stream(): AsyncGenerator<string, EngineReply, undefined> {
      for (const chunk of CHUNKS) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        yield chunk;
      }
      return { ...REPORTED, toolCalls: [], model: 'chunky-1', finishReason: 'stop' };
    },
    estimateTokensIn: () => 10,
  };
}

const servers: AxonServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function api<T>(url: string, path: string): Promise<T> {
  const res = await request(url, 'GET', path);
  expect(res.status, res.text).toBe(200);
  return res.body as T;
}

interface Usage {
  readonly tokens_in: number;
  readonly tokens_out: number;
  readonly cost_usd: number;
}

/** The page's text of a figure. */
const shown = async (page: Page, scope: string, testId: string): Promise<string | null> =>
  page.locator(scope).getByTestId(testId).first().textContent();

describe('the trace UI’s figures', () => {
  it('are the API’s for a thread, its turns and its row, and for the same run and its steps — not counts of streamed events', async () => {
    browser.require();
    const runtime = stores.runtime({ engines: [chunkyEngine()] });
    const workflow = defineWorkflow({
      name: 'figures',
      roles: {
        coder: { kind: 'engine', engine: 'chunky', prompt: 'You write code.' },
        linter: { kind: 'engine', engine: 'chunky', prompt: 'You lint code.' },
      },
      moderator: (t) =>
        t.turns.length >= TURNS ? END : t.turns.length % 2 === 0 ? 'coder' : 'linter',
    });
    const server = await createServer(runtime, {
      port: 0,
      workflows: new WorkflowEngine(runtime, [workflow]),
      drainMs: 100,
    });
    servers.push(server);
    const url = server.url;
    const { page, watched } = await browser.open(url);
    try {
      const started = await request(url, 'POST', '/v1/workflows/figures/threads', {
        input: 'add(a, b)',
      });
      expect(started.status, started.text).toBe(201);
      const id = (started.body as { thread_id: string }).thread_id;

      // Watched live, from its first turn to its end.
      await goTo(url, page, `thread=${id}`);
      await expect.poll(() => hashOf(page), POLL).toBe(`#thread=${id}`);
      const view = '[data-testid="thread-view"]';
      await expect.poll(() => shown(page, view, 'thread-status'), POLL).toBe('completed');
      const thread = await api<ThreadView>(url, `/v1/threads/${id}`);
      expect(thread.turns).toHaveLength(TURNS);
      // The API's figures are the engine's report, not its 5 chunks per call.
      for (const t of thread.turns) {
        expect([t.tokens_in, t.tokens_out]).toEqual([REPORTED.tokensIn, REPORTED.tokensOut]);
      }
      expect(thread.tokens_out).toBe(TURNS * REPORTED.tokensOut);
      expect(thread.cost_usd).toBeGreaterThan(0);

      await expect
        .poll(() => shown(page, view, 'thread-tokens'), POLL)
        .toBe(formatTokens(thread.tokens_in, thread.tokens_out));
      expect(await shown(page, view, 'thread-cost')).toBe(formatCost(thread.cost_usd));
      expect(await shown(page, view, 'thread-tokens')).toBe('3,702 in / 9 out');
      for (const t of thread.turns) {
        const node = `${view} [data-testid="trace-node"][data-turn="${t.n}"]`;
        await expect
          .poll(() => shown(page, node, 'trace-node-tokens'), POLL)
          .toBe(formatTokens(t.tokens_in, t.tokens_out));
        expect(await shown(page, node, 'trace-node-cost')).toBe(formatCost(t.cost_usd));
        expect(await shown(page, node, 'trace-node-streamed')).toBe('');
      }

      // An opened turn: the panel's figures are its step's, too.
      const first = thread.turns[0];
      await goTo(url, page, `thread=${id}&step=${first?.step_id ?? ''}`);
      const panel = '[data-testid="thread-step-detail"]';
      await expect
        .poll(() => shown(page, panel, 'step-detail-tokens'), POLL)
        .toBe(formatTokens(first?.tokens_in ?? -1, first?.tokens_out ?? -1));
      expect(await shown(page, panel, 'step-detail-cost')).toBe(formatCost(first?.cost_usd ?? -1));

      // The thread's row in the list.
      await goTo(url, page, 'threads');
      const row = `[data-testid="thread-row"][data-thread-id="${id}"]`;
      const listed = (await api<ThreadView[]>(url, '/v1/threads')).find((t) => t.thread_id === id);
      await expect
        .poll(() => shown(page, row, 'thread-row-tokens'), POLL)
        .toBe(formatTokens(listed?.tokens_in ?? -1, listed?.tokens_out ?? -1));
      expect(await shown(page, row, 'thread-row-cost')).toBe(formatCost(listed?.cost_usd ?? -1));

      // The same run in the run view: the run's figures and each step's.
      await goTo(url, page, `run=${id}`);
      const run = await api<{ budget_usage: Usage }>(url, `/v1/runs/${id}`);
      const steps = await api<{ step_id: string; budget_usage: Usage }[]>(
        url,
        `/v1/runs/${id}/steps`,
      );
      const runView = '[data-testid="run-view"]';
      await expect
        .poll(() => shown(page, runView, 'run-tokens'), POLL)
        .toBe(formatTokens(run.budget_usage.tokens_in, run.budget_usage.tokens_out));
      expect(await shown(page, runView, 'run-cost')).toBe(formatCost(run.budget_usage.cost_usd));
      expect(steps.length).toBeGreaterThanOrEqual(TURNS);
      for (const st of steps) {
        const node = `${runView} [data-testid="trace-node"][data-step-id="${st.step_id}"]`;
        await expect
          .poll(() => shown(page, node, 'trace-node-tokens'), POLL)
          .toBe(formatTokens(st.budget_usage.tokens_in, st.budget_usage.tokens_out));
        expect(await shown(page, node, 'trace-node-cost')).toBe(
          formatCost(st.budget_usage.cost_usd),
        );
      }
      // And the runs list.
      await goTo(url, page, 'runs');
      const runRow = `[data-testid="run-row"][data-run-id="${id}"]`;
      await expect
        .poll(() => shown(page, runRow, 'run-row-tokens'), POLL)
        .toBe(formatTokens(run.budget_usage.tokens_in, run.budget_usage.tokens_out));
      expect(await shown(page, runRow, 'run-row-cost')).toBe(formatCost(run.budget_usage.cost_usd));
      expectCleanPage(url, watched);
    } finally {
      await page.close();
    }
  });
});
