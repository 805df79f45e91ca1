/**
 * The trace UI (`GET /ui`, docs/trace-ui.md) in headless Chromium (Debian's `chromium`,
 * driven by playwright-core), on a real server whose agents stream from the scripted engine
 * through `runtime.chat`, slowly, and hold at gates the test opens: a run started over the
 * API shows in the list, opens, and its trace tree grows while it runs (the delegated child
 * appears under its parent); an opened step shows its tokens as they come. With API keys the
 * page asks for one and sends it, on reads and on streams (which `EventSource` could not).
 * The page loads nothing from elsewhere, runs under its Content-Security-Policy without a
 * violation, and never follows a live step of a `cancel_on_disconnect` run.
 *
 * Needs `/usr/bin/chromium` (`apt-get install -y chromium`); without it this test fails and
 * says so — it is never skipped.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { afterEach, describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import type { AgentDefinition } from '../../src/actors/agent-runtime.js';
import { IMMUTABLE, TRACE_UI_CSP } from '../../src/server/ui/trace-ui.js';
import { POLL, useTestServers, type TestServer } from '../support/server.js';
import { expectCleanPage, goTo, hashOf, useBrowser } from './trace-ui-browser.js';

const servers = useTestServers('server-trace-ui');
const browser = useBrowser();
/** The scripted engine's delay per token: slow enough to watch. */
const TOKEN_MS = 25;

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

/** Gates left closed by a failing test are opened after it, so its server can close. */
const gates: Gate[] = [];
afterEach(() => {
  for (const g of gates.splice(0)) g.open();
});

/**
 * `lead` streams 8 tokens, waits at `beforeDelegating`, then delegates to `helper`, which
 * streams 6 tokens, waits at `helperMidway`, and streams 6 more. Both through `runtime.chat`
 * and the scripted engine.
 */
function tracedAgents(): {
  agents: AgentDefinition[];
  beforeDelegating: Gate;
  helperMidway: Gate;
} {
  const beforeDelegating = gate();
  const helperMidway = gate();
  gates.push(beforeDelegating, helperMidway);
  const say = (content: string, max_tokens: number) => ({
    messages: [{ role: 'user' as const, content }],
    params: { max_tokens },
  });
  const helper = defineAgent({
    name: 'helper',
    handler: async (input, ctx, runtime) => {
      const first = await runtime.chat(say(`${input.message} (1)`, 6), ctx);
      await helperMidway.opened;
      const second = await runtime.chat(say(`${input.message} (2)`, 6), ctx);
      return first.text + second.text;
    },
  });
  const lead = defineAgent({
    name: 'lead',
    handler: async (input, ctx, runtime) => {
      const plan = await runtime.chat(say(input.message, 8), ctx);
      await beforeDelegating.opened;
      const found = await runtime.delegate('helper', 'look it up', ctx);
      return { plan: plan.text, found: found.output };
    },
  });
  return { agents: [lead, helper], beforeDelegating, helperMidway };
}

const node = (page: Page, stepId: string) =>
  page.locator(`[data-testid="trace-node"][data-step-id="${stepId}"]`);
const field = (page: Page, stepId: string, testId: string) =>
  node(page, stepId).locator(`[data-testid="${testId}"]`);

async function stepStatus(s: TestServer, stepId: string, headers = {}): Promise<string> {
  const res = await s.api('GET', `/v1/steps/${stepId}`, undefined, headers);
  return (res.body as { status: string }).status;
}

/** A step's tokens as the API gives them, in the page's form (`12 in / 34 out`). */
async function stepTokens(s: TestServer, stepId: string, headers = {}): Promise<string> {
  const res = await s.api('GET', `/v1/steps/${stepId}`, undefined, headers);
  const u = (res.body as { budget_usage: { tokens_in: number; tokens_out: number } }).budget_usage;
  return `${u.tokens_in} in / ${u.tokens_out} out`;
}

async function stepIds(s: TestServer, runId: string, headers = {}): Promise<string[]> {
  const res = await s.api('GET', `/v1/runs/${runId}/steps`, undefined, headers);
  return (res.body as { step_id: string }[]).map((st) => st.step_id);
}

describe('GET /ui: the assets', () => {
  it('are served with their content types, nosniff and a Content-Security-Policy of default-src self; /ui/ redirects to /ui', async () => {
    const s = await servers.start();
    const page = await (await fetch(`${s.url}/ui`)).text();
    // The bundle's two files, named by their content's hash.
    const script = /<script type="module" src="ui\/(app-[A-Z0-9]+\.js)"><\/script>/.exec(page)?.[1];
    const style = /<link rel="stylesheet" href="ui\/(app-[A-Z0-9]+\.css)" \/>/.exec(page)?.[1];
    expect(script).toBeDefined();
    expect(style).toBeDefined();
    const types: Record<string, RegExp> = {
      '/ui': /^text\/html; charset=utf-8$/,
      [`/ui/${style}`]: /^text\/css; charset=utf-8$/,
      [`/ui/${script}`]: /^text\/javascript; charset=utf-8$/,
      [`/ui/${script}.map`]: /^application\/json/,
      '/ui/icon.svg': /^image\/svg\+xml/,
    };
    for (const [path, type] of Object.entries(types)) {
      const res = await fetch(s.url + path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type'), path).toMatch(type);
      expect(res.headers.get('content-security-policy'), path).toMatch(/^default-src 'self'(;|$)/);
      expect(res.headers.get('x-content-type-options'), path).toBe('nosniff');
      expect(res.headers.get('referrer-policy'), path).toBe('no-referrer');
    }
    // The bundle is real code: the views' modules, in one file.
    const js = await (await fetch(`${s.url}/ui/${script}`)).text();
    expect(js).toContain('trace-node');
    expect(js).toContain('thread-turns');
    // No inline script or style, nothing from elsewhere.
    expect(page).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|\sstyle=|https?:\/\//);
    const slash = await fetch(`${s.url}/ui/`, { redirect: 'manual' });
    expect(slash.status).toBe(302);
    expect(new URL(slash.headers.get('location') ?? '', `${s.url}/ui/`).pathname).toBe('/ui');
    for (const missing of ['/ui/nope.js', '/ui/app.js', '/ui/index.html']) {
      const res = await fetch(s.url + missing);
      expect(res.status, missing).toBe(404);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('NOT_FOUND');
    }
  });

  it('caches the hashed assets for good, and the page no-cache with an ETag that answers 304', async () => {
    const s = await servers.start({
      server: { keys: [{ key: 'alice-key-0123456789abcdef', user_id: 'alice' }] },
    });
    // Public even with keys: the assets hold no data.
    const first = await fetch(`${s.url}/ui`);
    expect(first.status).toBe(200);
    expect(first.headers.get('cache-control')).toBe('no-cache');
    const etag = first.headers.get('etag') ?? '';
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    const page = await first.text();
    const again = await fetch(`${s.url}/ui`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    expect(again.headers.get('etag')).toBe(etag);
    expect(again.headers.get('content-security-policy')).toBe(TRACE_UI_CSP);
    const other = await fetch(`${s.url}/ui`, { headers: { 'if-none-match': '"0000"' } });
    expect(other.status).toBe(200);
    expect(await other.text()).toBe(page);

    const names = [...page.matchAll(/ui\/(app-[A-Z0-9]+\.(?:js|css))"/g)].map((m) => m[1]);
    expect(names).toHaveLength(2);
    for (const name of names) {
      const res = await fetch(`${s.url}/ui/${name}`);
      expect(res.status, name).toBe(200);
      expect(res.headers.get('cache-control'), name).toBe(IMMUTABLE);
      expect(IMMUTABLE).toBe('public, max-age=31536000, immutable');
      const tag = res.headers.get('etag') ?? '';
      const cached = await fetch(`${s.url}/ui/${name}`, { headers: { 'if-none-match': tag } });
      expect(cached.status, name).toBe(304);
    }
    const icon = await fetch(`${s.url}/ui/icon.svg`);
    expect(icon.headers.get('cache-control')).toBe('no-cache');
    expect((await fetch(`${s.url}/v1/runs`)).status).toBe(401);
  });

  it('is TypeScript of its own: no browser code left in string modules of src/server/ui', () => {
    const serverUi = new URL('../../src/server/ui/', import.meta.url);
    const files = readdirSync(serverUi);
    expect(files.filter((f) => f.endsWith('-js.ts') || f.startsWith('page-'))).toEqual([]);
    for (const f of files) {
      expect(readFileSync(new URL(f, serverUi), 'utf8'), f).not.toMatch(/String\.raw`|document\./);
    }
    const ui = readdirSync(new URL('../../src/ui/', import.meta.url));
    for (const module of [
      'api',
      'app',
      'format',
      'run-view',
      'runs-view',
      'step-detail',
      'trace-tree',
      'thread-view',
      'threads-view',
      'poller',
    ]) {
      expect(ui).toContain(`${module}.ts`);
    }
  });
});

describe('the trace UI in headless Chromium', () => {
  it('lists a run started over the API, opens it, grows its trace tree live, and shows an opened step’s tokens as they come', async () => {
    browser.require();
    const traced = tracedAgents();
    const s = await servers.start({ tokenDelayMs: TOKEN_MS, runtime: { agents: traced.agents } });
    const { page, watched } = await browser.open(s.url);
    try {
      await page.getByTestId('runs-empty').waitFor();

      const run = await s.newRun({ seed: 3 });
      const root = await s.submit(run.run_id, {
        type: 'agent',
        input: { agent: 'lead', message: 'plan the trip' },
      });

      // The list, read again every two seconds, shows it: running, with its flow's name.
      const row = page.locator(`[data-testid="run-row"][data-run-id="${run.run_id}"]`);
      await row.waitFor({ timeout: POLL.timeout });
      await expect
        .poll(() => row.getByTestId('run-row-status').textContent(), POLL)
        .toBe('running');
      await expect.poll(() => row.getByTestId('run-row-entry').textContent(), POLL).toBe('f');
      await row.getByTestId('run-row-entry').click();
      await expect.poll(() => hashOf(page), POLL).toBe(`#run=${run.run_id}`);

      // The root step, live: its 8 tokens counted from its stream while it waits at the gate,
      // told apart from its figures, which are the API's (none until it ends).
      await node(page, root).waitFor();
      await expect
        .poll(() => field(page, root, 'trace-node-streamed').textContent(), POLL)
        .toBe(' · 8 streamed');
      expect(await field(page, root, 'trace-node-tokens').textContent()).toBe(
        await stepTokens(s, root),
      );
      expect(await node(page, root).getAttribute('data-status')).toBe('running');
      expect(await page.getByTestId('trace-node').count()).toBe(1);
      expect(await page.getByTestId('run-status').textContent()).toBe('running');

      // The delegation: the child appears under its parent while the parent still runs.
      traced.beforeDelegating.open();
      const child = page.locator(`[data-testid="trace-node"][data-parent-step-id="${root}"]`);
      await child.waitFor({ timeout: POLL.timeout });
      const childId = (await child.getAttribute('data-step-id')) ?? '';
      expect(await stepIds(s, run.run_id)).toEqual([root, childId]);
      expect(await child.getAttribute('data-depth')).toBe('1');
      expect(await child.getAttribute('data-status')).toBe('running');
      expect(await node(page, root).getAttribute('data-status')).toBe('running');
      expect(await stepStatus(s, root)).toBe('running');
      expect(await field(page, childId, 'trace-node-type').textContent()).toBe('agent');

      // Opened, the child shows its first 6 tokens while it waits midway...
      await child.click();
      await expect.poll(() => hashOf(page), POLL).toBe(`#run=${run.run_id}&step=${childId}`);
      const detail = page.getByTestId('step-detail');
      await detail.waitFor();
      expect(await detail.getByTestId('step-detail-id').textContent()).toBe(childId);
      await expect
        .poll(() => field(page, childId, 'trace-node-streamed').textContent(), POLL)
        .toBe(' · 6 streamed');
      await expect
        .poll(() => detail.getByTestId('step-detail-streamed').textContent(), POLL)
        .toBe(' (6 streamed)');
      const midway = (await detail.getByTestId('step-text').textContent()) ?? '';
      expect(midway.split(' ').length).toBeGreaterThanOrEqual(5);
      expect(await stepStatus(s, childId)).toBe('running');
      expect(await detail.getByTestId('step-detail-status').textContent()).toBe('running');

      // ... and the rest as they come, to its end: the text is the step's output.
      traced.helperMidway.open();
      await expect
        .poll(() => detail.locator('[data-testid="step-event"][data-type="end"]').count(), POLL)
        .toBe(1);
      const output = (
        (await s.api('GET', `/v1/steps/${childId}`)).body as { output: string; status: string }
      ).output;
      const text = (await detail.getByTestId('step-text').textContent()) ?? '';
      expect(text).toBe(output);
      expect(text.startsWith(midway)).toBe(true);
      expect(text.length).toBeGreaterThan(midway.length);
      expect(await detail.getByTestId('step-output').textContent()).toBe(JSON.stringify(output));
      await expect.poll(() => node(page, root).getAttribute('data-status'), POLL).toBe('succeeded');
      await expect
        .poll(() => node(page, childId).getAttribute('data-status'), POLL)
        .toBe('succeeded');

      // Every step stream the page read was of this run's steps, with fetch (Last-Event-ID
      // aside); the run's own stream brought its steps (no poll).
      const streams = watched.requests.filter((r) => r.url.includes('/v1/steps/'));
      expect(streams.length).toBeGreaterThanOrEqual(2);
      for (const r of streams) expect([root, childId]).toContain(r.url.split('/').at(-2));
      const paths = watched.requests.map((r) => new URL(r.url).pathname);
      expect(paths).toContain(`/v1/runs/${run.run_id}/stream`);
      expectCleanPage(s.url, watched);
    } finally {
      await page.close();
    }
  });

  it('with API keys: asks for a key, refuses a wrong one, then shows only the caller’s runs and follows their steps with the key', async () => {
    browser.require();
    const KEYS = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdefgh' };
    const as = (who: keyof typeof KEYS) => ({ authorization: `Bearer ${KEYS[who]}` });
    const traced = tracedAgents();
    const s = await servers.start({
      tokenDelayMs: TOKEN_MS,
      runtime: { agents: traced.agents },
      server: {
        keys: [
          { key: KEYS.alice, user_id: 'alice' },
          { key: KEYS.bob, user_id: 'bob' },
        ],
      },
    });
    // The page is public (it holds no data); the API is not.
    expect((await fetch(`${s.url}/ui`)).status).toBe(200);
    expect((await fetch(`${s.url}/v1/runs`)).status).toBe(401);
    const theirs = await s.newRun({}, as('bob'));
    const run = await s.newRun({}, as('alice'));
    const root = await s.submit(
      run.run_id,
      { type: 'agent', input: { agent: 'lead', message: 'with a key' } },
      as('alice'),
    );

    const { page, watched } = await browser.open(s.url);
    try {
      const form = page.getByTestId('auth-form');
      await form.waitFor();
      await page.getByTestId('auth-key').fill('not-a-key-of-anyone-0000');
      await page.getByTestId('auth-submit').click();
      await expect
        .poll(() => page.getByTestId('auth-message').textContent(), POLL)
        .toContain('does not accept');
      await page.getByTestId('auth-key').fill(KEYS.alice);
      await page.getByTestId('auth-submit').click();
      await form.waitFor({ state: 'hidden' });

      const row = page.locator(`[data-testid="run-row"][data-run-id="${run.run_id}"]`);
      await row.waitFor({ timeout: POLL.timeout });
      expect(await page.getByTestId('run-row').count()).toBe(1);
      expect(await page.locator(`[data-run-id="${theirs.run_id}"]`).count()).toBe(0);

      await row.click();
      await node(page, root).click();
      const detail = page.getByTestId('step-detail');
      await expect
        .poll(() => field(page, root, 'trace-node-streamed').textContent(), POLL)
        .toBe(' · 8 streamed');
      await expect
        .poll(
          async () => ((await detail.getByTestId('step-text').textContent()) ?? '').length,
          POLL,
        )
        .toBeGreaterThan(0);
      expect(await stepStatus(s, root, as('alice'))).toBe('running');
      traced.beforeDelegating.open();
      traced.helperMidway.open();
      await expect.poll(() => node(page, root).getAttribute('data-status'), POLL).toBe('succeeded');
      await page.locator(`[data-testid="trace-node"][data-parent-step-id="${root}"]`).waitFor();

      // Every API request after the key was given carried it, streams included.
      const api = watched.requests.filter((r) => new URL(r.url).pathname.startsWith('/v1/'));
      const keyed = api.filter((r) => r.headers['authorization'] === `Bearer ${KEYS.alice}`);
      const streams = keyed.filter((r) => r.url.endsWith('/stream'));
      expect(streams.length).toBeGreaterThanOrEqual(1);
      // Before: the first read, which the 401 answered by asking; and the refused key's.
      for (const r of api.filter((a) => !keyed.includes(a))) {
        expect(new URL(r.url).pathname).toBe('/v1/runs');
      }

      // Another user's run, opened by its URL, is not found.
      await goTo(s.url, page, `run=${theirs.run_id}`);
      await expect
        .poll(() => page.getByTestId('error-banner').textContent(), POLL)
        .toContain('NOT_FOUND');
      expect(await page.getByTestId('trace-node').count()).toBe(0);
      expectCleanPage(s.url, watched);
    } finally {
      await page.close();
    }
  });

  it('never follows a live step of a cancel_on_disconnect run (closing the stream would cancel it); shows its events once it ends', async () => {
    browser.require();
    const traced = tracedAgents();
    const s = await servers.start({ tokenDelayMs: TOKEN_MS, runtime: { agents: traced.agents } });
    const run = await s.newRun({ cancel_on_disconnect: true });
    const root = await s.submit(run.run_id, {
      type: 'agent',
      input: { agent: 'lead', message: 'careful' },
    });
    const { page, watched } = await browser.open(s.url);
    try {
      await goTo(s.url, page, `run=${run.run_id}`);
      await node(page, root).click();
      await page.getByTestId('step-detail').getByTestId('step-note').waitFor();
      expect(await page.getByTestId('run-note').isVisible()).toBe(true);
      // Opened, read again a few times, then left: the step still runs.
      await page.waitForTimeout(1_500);
      await goTo(s.url, page, 'runs');
      await page.getByTestId('runs-view').waitFor();
      expect(await stepStatus(s, root)).toBe('running');
      // No step's stream (the run's stream, which cancels nothing, is not one).
      expect(watched.requests.filter((r) => r.url.includes('/v1/steps/'))).toEqual([]);

      traced.beforeDelegating.open();
      traced.helperMidway.open();
      await expect.poll(() => stepStatus(s, root), POLL).toBe('succeeded');
      await goTo(s.url, page, `run=${run.run_id}&step=${root}`);
      const detail = page.getByTestId('step-detail');
      await expect
        .poll(() => detail.locator('[data-testid="step-event"][data-type="end"]').count(), POLL)
        .toBe(1);
      expect(await detail.getByTestId('step-note').isHidden()).toBe(true);
      expect(((await detail.getByTestId('step-text').textContent()) ?? '').length).toBeGreaterThan(
        0,
      );
      expectCleanPage(s.url, watched);
    } finally {
      await page.close();
    }
  });
});
