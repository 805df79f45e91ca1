/**
 * @module The trace UI's screenshots in docs/ (docs/trace-ui.md shows them), taken from a
 * running `axon serve`: a run of the trip planner (its delegations and tool call) and a tool
 * step, and a second run that goes on after a tool step failed, are made over the API, then
 * headless Chromium (Debian's `chromium`, driven by playwright-core) opens the first run's
 * page and the runs list (the second run's row says its failed step). Then the durable agents
 * `axon serve` serves get messages — a notebook of three notes, a follow-up that replied and
 * sleeps an hour to check back, one waiting for an event — and it takes the sleeping one's page
 * (its state, its wait, its messages) and the Agents list.
 *
 *   npm start &                                  # or: node bin/axon.js serve
 *   npx tsx scripts/trace-ui-screenshots.ts [--url http://127.0.0.1:7070] [--key <api key>]
 *
 * Writes docs/images/trace-ui-timeline.png, trace-ui-runs.png, trace-ui-agent.png and
 * trace-ui-agents.png.
 */
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:7070' },
    key: { type: 'string' },
    chromium: { type: 'string', default: '/usr/bin/chromium' },
  },
});
const base = values.url.replace(/\/+$/, '');
const headers: Record<string, string> = { 'content-type': 'application/json' };
if (values.key) headers['authorization'] = `Bearer ${values.key}`;
const out = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'images');

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(base + path, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** Reads a step's stream to its end. */
async function ended(stepId: string): Promise<void> {
  const res = await fetch(`${base}/v1/steps/${stepId}/stream`, { headers });
  await res.text();
}

async function main(): Promise<void> {
  const flow = await api<{ flow_id: string }>('POST', '/v1/flows', {
    name: 'trip',
    ast: { screenshot: new Date().toISOString() },
  });
  const run = await api<{ run_id: string }>('POST', `/v1/flows/${flow.flow_id}/runs`, { seed: 7 });
  const plan = await api<{ step_id: string }>('POST', `/v1/runs/${run.run_id}/steps`, {
    type: 'agent',
    input: { agent: 'planner', message: 'Plan a trip to Lisbon next Tuesday' },
  });
  await ended(plan.step_id);
  const sum = await api<{ step_id: string }>('POST', `/v1/runs/${run.run_id}/steps`, {
    type: 'tool_call',
    input: { tool: 'add', args: { a: 2, b: 3 } },
  });
  await ended(sum.step_id);
  // A run that goes on after one of its steps failed (arguments `add` refuses).
  const other = await api<{ run_id: string }>('POST', `/v1/flows/${flow.flow_id}/runs`, {
    seed: 8,
  });
  for (const args of [
    { a: 'two', b: 3 },
    { a: 4, b: 5 },
  ]) {
    const step = await api<{ step_id: string }>('POST', `/v1/runs/${other.run_id}/steps`, {
      type: 'tool_call',
      input: { tool: 'add', args },
    });
    await ended(step.step_id);
  }

  mkdirSync(out, { recursive: true });
  const browser = await chromium.launch({
    executablePath: values.chromium,
    args: ['--headless', '--no-sandbox', '--disable-gpu'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
    if (values.key) {
      // The page keeps its key in sessionStorage ('axon.apiKey'), set before it loads.
      await page.addInitScript(
        `sessionStorage.setItem('axon.apiKey', ${JSON.stringify(values.key)});`,
      );
    }
    await page.goto(`${base}/ui#run=${run.run_id}&step=${plan.step_id}`);
    await page.getByTestId('timeline-row').first().waitFor();
    await page.waitForTimeout(500);
    // Still running (its steps ended): the page shows the run's buttons.
    await page.screenshot({ path: join(out, 'trace-ui-timeline.png'), fullPage: true });
    await api('POST', `/v1/runs/${run.run_id}/complete`, {});
    await page.goto(`${base}/ui#runs`);
    await page.getByTestId('run-row-failed').first().waitFor();
    await page.screenshot({ path: join(out, 'trace-ui-runs.png') });

    // Durable agents: an actor per key (API.md's example agents).
    const tag = Date.now().toString(36);
    const notebook = `customer-${tag}`;
    for (const text of ['called back', 'sent the refund', 'followed up']) {
      await api('POST', `/v1/agents/notebook/${notebook}/messages`, { message: { text } });
    }
    // A follow-up that replied at once and checks back in an hour: a message ended, one asleep.
    for (const [text, after_ms] of [
      ['replied', 0],
      ['check back', 3_600_000],
    ] as const) {
      await api('POST', `/v1/agents/follow-up/ticket-${tag}/messages`, {
        message: { text, after_ms },
      });
    }
    await api('POST', `/v1/agents/follow-up/approval-${tag}/messages`, {
      message: { text: 'refund', await: 'approval' },
    });
    await page.goto(`${base}/ui#agent=follow-up&key=ticket-${tag}`);
    await page.getByTestId('agent-view').getByTestId('agent-wake').waitFor();
    await page.getByTestId('agent-view').getByTestId('timeline-row').nth(1).waitFor();
    await page.waitForTimeout(500);
    await page.screenshot({ path: join(out, 'trace-ui-agent.png'), fullPage: true });
    await page.goto(`${base}/ui#agents`);
    await page.getByTestId('agent-row').nth(2).waitFor();
    await page.screenshot({ path: join(out, 'trace-ui-agents.png') });
  } finally {
    await browser.close();
  }
  console.log(
    `wrote ${join(out, 'trace-ui-timeline.png')}, trace-ui-runs.png, trace-ui-agent.png and trace-ui-agents.png`,
  );
}

await main();
