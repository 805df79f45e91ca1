/**
 * The trace UI's Threads view (`/ui#threads`, docs/trace-ui.md) in headless Chromium, on a
 * real server running a two-role workflow on the scripted engine (issue 21): a thread started
 * from the page's form shows in the list, opens, and its turns grow live over the thread's
 * stream — turn 2 appears while the thread still runs, an opened turn shows its tokens as
 * they come — until the thread ends `completed`. A `drop` workflow at its `max` shows the
 * server's 429 `QUEUE_FULL` in its form. With API keys the page sends the key on every read,
 * post and stream, and shows only the caller's threads.
 *
 * The engine's token timers run on a clock the test can hold (`holdingClock`), so "while the
 * thread still runs" is a state the test makes, not a race it hopes to win.
 *
 * Needs `/usr/bin/chromium` (`apt-get install -y chromium`); without it this test fails and
 * says so — it is never skipped.
 */
import type { Page } from 'playwright-core';
import { afterEach, describe, expect, it } from 'vitest';
import type { Clock, TimerHandle } from '../../src/context/clock.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import type { ChatRequest } from '../../src/engines/chat-request.js';
import { createServer, type AxonServer } from '../../src/server/create-server.js';
import type { ThreadView } from '../../src/workflows/thread-records.js';
import {
  defineWorkflow,
  END,
  type WorkflowDefinition,
} from '../../src/workflows/workflow-definition.js';
import { WorkflowEngine } from '../../src/workflows/workflow-engine.js';
import { POLL, request, useTestServers } from '../support/server.js';
import { expectCleanPage, goTo, hashOf, useBrowser } from './trace-ui-browser.js';

const browser = useBrowser();
const stores = useTestServers('server-trace-ui-threads');
/** The scripted engine's delay per token: slow enough to watch. */
const TOKEN_MS = 30;
const TURNS = 4;

/**
 * A clock for the scripted engine whose timers can be held: after `holdAfter(n)`, n more
 * timers fire and the next ones wait until `release()` — a model call stopped mid-answer.
 */
interface HoldingClock {
  readonly clock: Clock;
  holdAfter(n: number): void;
  release(): void;
}

function holdingClock(): HoldingClock {
  let left: number | null = null;
  const held: (() => void)[] = [];
  interface Handle {
    cancelled: boolean;
    timer?: NodeJS.Timeout;
  }
  const clock: Clock = {
    now: () => Date.now(),
    setTimeout(fn, ms): TimerHandle {
      const handle: Handle = { cancelled: false };
      handle.timer = setTimeout(() => {
        if (handle.cancelled) return;
        if (left !== null && left-- <= 0) {
          held.push(() => {
            if (!handle.cancelled) fn();
          });
        } else {
          fn();
        }
      }, ms);
      return handle;
    },
    clearTimeout(h) {
      const handle = h as Handle;
      handle.cancelled = true;
      clearTimeout(handle.timer);
    },
  };
  return {
    clock,
    holdAfter(n) {
      left = n;
    },
    release() {
      left = null;
      for (const fn of held.splice(0)) fn();
    },
  };
}

/** Clocks a failing test left held are released after it, so its server can close. */
const clocks: HoldingClock[] = [];
const servers: AxonServer[] = [];
afterEach(async () => {
  for (const c of clocks.splice(0)) c.release();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** What each role answers: the coder a draft, the reviewer a review, numbered by the call. */
function answer(role: 'coder' | 'reviewer', call: number): string {
  return role === 'coder'
    ? `draft ${call}: function add(a, b) { return a + b; } with a test for zero and one`
    : `review ${call}: the draft reads well, but name the test after what it checks please`;
}

/** The role a model call is for, by its system prompt. */
function roleOf(request: ChatRequest): 'coder' | 'reviewer' {
  const system = request.messages.find((m) => m.role === 'system')?.content ?? '';
  return system.startsWith('You write') ? 'coder' : 'reviewer';
}

/** A coder and a reviewer taking `TURNS` turns, coder first. */
function review(
  name: string,
  concurrency: NonNullable<Parameters<typeof defineWorkflow>[0]['concurrency']>,
): WorkflowDefinition {
  return defineWorkflow({
    name,
    description: 'a coder and a reviewer',
    roles: {
      coder: { kind: 'engine', prompt: 'You write code.' },
      reviewer: { kind: 'engine', prompt: 'You review code.' },
    },
    moderator: (t) =>
      t.turns.length >= TURNS ? END : t.turns.length % 2 === 0 ? 'coder' : 'reviewer',
    concurrency,
  });
}

interface Started {
  readonly url: string;
  readonly hold: HoldingClock;
  /** The model calls made so far. */
  readonly calls: () => number;
}

/**
 * A real server running `workflow` on the scripted engine; the engine's answer to model call
 * `holdAtCall` (1-based) stops after `holdAfterTokens` tokens until `hold.release()`.
 */
async function start(options: {
  workflow: WorkflowDefinition;
  holdAtCall?: number;
  holdAfterTokens?: number;
  keys?: { key: string; user_id: string }[];
}): Promise<Started> {
  const hold = holdingClock();
  clocks.push(hold);
  let calls = 0;
  const runtime = stores.runtime({
    engines: [
      createScriptedEngine({
        tokenDelayMs: TOKEN_MS,
        clock: hold.clock,
        script: (req) => {
          calls += 1;
          if (calls === options.holdAtCall) hold.holdAfter(options.holdAfterTokens ?? 0);
          return answer(roleOf(req), calls);
        },
      }),
    ],
  });
  const engine = new WorkflowEngine(runtime, [options.workflow]);
  const server = await createServer(runtime, {
    port: 0,
    workflows: engine,
    drainMs: 100,
    ...(options.keys ? { keys: options.keys } : {}),
  });
  servers.push(server);
  return { url: server.url, hold, calls: () => calls };
}

async function threadOf(url: string, id: string, headers = {}): Promise<ThreadView> {
  const res = await request(url, 'GET', `/v1/threads/${id}`, undefined, headers);
  expect(res.status, res.text).toBe(200);
  return res.body as ThreadView;
}

const card = (page: Page, workflow: string) =>
  page.locator(`[data-testid="workflow"][data-workflow="${workflow}"]`);
const threadRow = (page: Page, id: string) =>
  page.locator(`[data-testid="thread-row"][data-thread-id="${id}"]`);
const turn = (page: Page, n: number) =>
  page.getByTestId('thread-view').locator(`[data-testid="trace-node"][data-turn="${n}"]`);

/** Starts a thread of `workflow` from its form; the result's text once it has one. */
async function trigger(page: Page, workflow: string, input: string): Promise<string> {
  const c = card(page, workflow);
  await c.getByTestId('workflow-input').fill(input);
  await c.getByTestId('workflow-start').click();
  const result = c.getByTestId('workflow-result');
  await expect.poll(() => result.getAttribute('data-state'), POLL).not.toBe('pending');
  return (await result.textContent()) ?? '';
}

/** The id of the thread the form of `workflow` started last. */
async function startedThread(page: Page, workflow: string): Promise<string> {
  const link = card(page, workflow).getByTestId('workflow-result-thread');
  await link.waitFor();
  return (await link.textContent()) ?? '';
}

describe('the Threads view in headless Chromium', () => {
  it('starts a thread from the form, lists it, opens it, grows its turns live, streams an opened turn’s tokens, and ends completed', async () => {
    browser.require();
    // Turn 3 (the third model call) stops after 4 tokens until released.
    const s = await start({
      workflow: review('review', { max: 4, overflow: 'queue', maxQueue: 10 }),
      holdAtCall: 3,
      holdAfterTokens: 4,
    });
    const { page, watched } = await browser.open(s.url);
    try {
      await page.getByTestId('nav-threads').click();
      await expect.poll(() => hashOf(page), POLL).toBe('#threads');
      const c = card(page, 'review');
      await c.waitFor();
      expect(await c.getByTestId('workflow-roles').textContent()).toBe(
        'coder (engine), reviewer (engine)',
      );
      expect(await c.getByTestId('workflow-concurrency').textContent()).toBe(
        'max 4, queue up to 10',
      );
      await page.getByTestId('threads-empty').waitFor();

      // Started from the page's form: the form names the thread, the list shows it live.
      const said = await trigger(page, 'review', 'Write add(a, b)');
      expect(said).toMatch(/^Thread run_\S+ started\.$/);
      const id = await startedThread(page, 'review');
      const row = threadRow(page, id);
      await row.waitFor({ timeout: POLL.timeout });
      expect(await row.getByTestId('thread-row-workflow').textContent()).toBe('review');
      expect(await row.getByTestId('thread-row-input').textContent()).toBe('Write add(a, b)');
      await expect
        .poll(() => row.getByTestId('thread-row-status').textContent(), POLL)
        .toBe('started');
      await expect.poll(() => c.getByTestId('workflow-running').textContent(), POLL).toBe('1');

      // Opened: turn 1 (the coder), then turn 2 (the reviewer) while the thread still runs.
      await row.click();
      await expect.poll(() => hashOf(page), POLL).toBe(`#thread=${id}`);
      const view = page.getByTestId('thread-view');
      await turn(page, 1).waitFor({ timeout: POLL.timeout });
      expect(await turn(page, 1).getAttribute('data-role')).toBe('coder');
      await turn(page, 2).waitFor({ timeout: POLL.timeout });
      expect(await turn(page, 2).getAttribute('data-role')).toBe('reviewer');
      expect(await view.getByTestId('thread-workflow').textContent()).toBe('review');
      expect(await view.getByTestId('thread-input').textContent()).toBe('Write add(a, b)');
      expect((await threadOf(s.url, id)).status).toBe('started');

      // Turn 3 stops after 4 tokens: shown as they came (told apart from its figures, the
      // API's, none until it ends), the thread running.
      await turn(page, 3).waitFor({ timeout: POLL.timeout });
      await expect
        .poll(() => turn(page, 3).getByTestId('trace-node-streamed').textContent(), POLL)
        .toBe(' · 4 streamed');
      expect(await turn(page, 3).getByTestId('trace-node-tokens').textContent()).toBe(
        '0 in / 0 out',
      );
      expect(await turn(page, 3).getAttribute('data-status')).toBe('running');
      expect(await view.getByTestId('thread-status').textContent()).toBe('started');
      expect(await view.getByTestId('trace-node').count()).toBe(3);
      const turns = await threadOf(s.url, id);
      expect(turns.status).toBe('started');
      expect(turns.turns.map((t) => [t.n, t.role, t.status])).toEqual([
        [1, 'coder', 'succeeded'],
        [2, 'reviewer', 'succeeded'],
        [3, 'coder', 'running'],
      ]);
      const turn3 = turns.turns[2]?.step_id ?? '';
      // The finished turns show their text; the held one, its 4 tokens so far.
      const item = (n: number) =>
        view
          .locator('li', { has: page.locator(`[data-testid="trace-node"][data-turn="${n}"]`) })
          .first();
      expect(await item(1).getByTestId('thread-turn-text').first().textContent()).toBe(
        turns.turns[0]?.raw,
      );
      expect(await item(2).getByTestId('thread-turn-text').first().textContent()).toBe(
        turns.turns[1]?.raw,
      );
      const expected3 = answer('coder', 3);
      const held = (await item(3).getByTestId('thread-turn-text').first().textContent()) ?? '';
      expect(held).toBe(expected3.split(' ').slice(0, 4).join(' '));

      // Turn 3 opened: its step's events, its tokens so far, then the rest as they come.
      await turn(page, 3).click();
      await expect.poll(() => hashOf(page), POLL).toBe(`#thread=${id}&step=${turn3}`);
      const detail = page.getByTestId('thread-step-detail');
      await detail.waitFor();
      expect(await detail.getByTestId('step-detail-id').textContent()).toBe(turn3);
      expect(await detail.getByTestId('step-detail-status').textContent()).toBe('running');
      expect(await detail.getByTestId('step-text').textContent()).toBe(held);
      expect(await detail.locator('[data-testid="step-event"][data-type="started"]').count()).toBe(
        1,
      );
      await expect
        .poll(() => detail.getByTestId('step-input').textContent(), POLL)
        .toContain('"thread"');
      s.hold.release();
      await expect
        .poll(() => detail.locator('[data-testid="step-event"][data-type="end"]').count(), POLL)
        .toBe(1);
      expect(await detail.getByTestId('step-text').textContent()).toBe(expected3);

      // Turn 4, then the thread's end: completed, and its figures those of the API.
      await turn(page, 4).waitFor({ timeout: POLL.timeout });
      await expect
        .poll(() => view.getByTestId('thread-status').textContent(), POLL)
        .toBe('completed');
      expect(await view.getByTestId('thread-end-reason').textContent()).toBe('ended: end');
      const done = await threadOf(s.url, id);
      expect(done).toMatchObject({ status: 'completed', end_reason: 'end', rounds: TURNS });
      await expect.poll(() => view.getByTestId('thread-rounds').textContent(), POLL).toBe('4');
      expect(await view.getByTestId('thread-tokens').textContent()).toBe(
        `${done.tokens_in} in / ${done.tokens_out} out`,
      );
      for (const t of done.turns) {
        await expect
          .poll(() => turn(page, t.n).getAttribute('data-status'), POLL)
          .toBe('succeeded');
        await expect
          .poll(() => item(t.n).getByTestId('thread-turn-text').first().textContent(), POLL)
          .toBe(t.raw);
        expect(await turn(page, t.n).getByTestId('trace-node-tokens').textContent()).toBe(
          `${t.tokens_in} in / ${t.tokens_out} out`,
        );
      }
      expect(await view.getByTestId('trace-node').count()).toBe(TURNS);

      // The same run in the run view, its turns the steps of its tree, and back.
      await view.getByTestId('thread-run-link').click();
      await expect.poll(() => hashOf(page), POLL).toBe(`#run=${id}`);
      const runView = page.getByTestId('run-view');
      await expect.poll(() => runView.getByTestId('trace-node').count(), POLL).toBe(TURNS);
      expect(await runView.getByTestId('run-entry').textContent()).toBe('workflow:review');
      await runView.getByTestId('run-thread-link').click();
      await expect.poll(() => hashOf(page), POLL).toBe(`#thread=${id}`);
      await expect.poll(() => view.getByTestId('trace-node').count(), POLL).toBe(TURNS);

      // Back in the list: completed, its rounds and end.
      await page.getByTestId('back-to-threads').click();
      await expect
        .poll(() => row.getByTestId('thread-row-status').textContent(), POLL)
        .toBe('completed');
      expect(await row.getByTestId('thread-row-rounds').textContent()).toBe('4');
      expect(await row.getByTestId('thread-row-end-reason').textContent()).toBe('end');

      // The thread's stream was read, with fetch, and no step's: the turns came on it.
      const streams = watched.requests.filter((r) => r.url.endsWith('/stream'));
      expect(streams.map((r) => new URL(r.url).pathname)).toContain(`/v1/threads/${id}/stream`);
      // (A run's stream, of the thread's run, is no step's.)
      for (const r of streams) {
        expect(new URL(r.url).pathname).toMatch(/^\/v1\/(threads\/|runs\/[^/]+\/stream$)/);
      }
      expectCleanPage(s.url, watched);
    } finally {
      await page.close();
    }
  });

  it('shows QUEUE_FULL in the form of a drop workflow triggered while its one thread runs, and leaves nothing behind', async () => {
    browser.require();
    // The first thread's first turn stops after 2 tokens until released.
    const s = await start({
      workflow: review('solo', { max: 1, overflow: 'drop' }),
      holdAtCall: 1,
      holdAfterTokens: 2,
    });
    const { page, watched } = await browser.open(s.url);
    try {
      await goTo(s.url, page, 'threads');
      const c = card(page, 'solo');
      await c.waitFor();
      expect(await c.getByTestId('workflow-concurrency').textContent()).toBe('max 1, drop');

      expect(await trigger(page, 'solo', 'first')).toMatch(/ started\.$/);
      const first = await startedThread(page, 'solo');
      // Again at once, the first still running: refused, and said so.
      expect(await trigger(page, 'solo', 'second')).toMatch(/^QUEUE_FULL \(429\): /);
      const result = c.getByTestId('workflow-result');
      expect(await result.getAttribute('data-state')).toBe('error');
      expect(await result.getAttribute('data-error-code')).toBe('QUEUE_FULL');
      expect(await c.getByTestId('workflow-result-code').textContent()).toBe('QUEUE_FULL');
      expect(await result.isVisible()).toBe(true);
      expect(await page.getByTestId('error-banner').isHidden()).toBe(true);

      // Nothing was left behind: one thread, running.
      await threadRow(page, first).waitFor({ timeout: POLL.timeout });
      await expect.poll(() => c.getByTestId('workflow-running').textContent(), POLL).toBe('1');
      expect(await page.getByTestId('thread-row').count()).toBe(1);
      const listed = await request(s.url, 'GET', '/v1/threads');
      expect((listed.body as ThreadView[]).map((t) => t.thread_id)).toEqual([first]);

      // Once it has ended, the workflow takes a thread again.
      s.hold.release();
      await expect
        .poll(() => threadRow(page, first).getByTestId('thread-row-status').textContent(), POLL)
        .toBe('completed');
      expect(await trigger(page, 'solo', 'third')).toMatch(/ started\.$/);
      expect(await result.getAttribute('data-error-code')).toBeNull();
      expectCleanPage(s.url, watched);
    } finally {
      await page.close();
    }
  });

  it('with API keys: sends the key on reads, the trigger and the thread stream, and shows only the caller’s threads', async () => {
    browser.require();
    const KEYS = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdefgh' };
    const as = (who: keyof typeof KEYS) => ({ authorization: `Bearer ${KEYS[who]}` });
    const s = await start({
      workflow: review('review', { max: 4, overflow: 'queue', maxQueue: 10 }),
      keys: [
        { key: KEYS.alice, user_id: 'alice' },
        { key: KEYS.bob, user_id: 'bob' },
      ],
    });
    expect((await request(s.url, 'GET', '/v1/threads')).status).toBe(401);
    const bobs = await request(
      s.url,
      'POST',
      '/v1/workflows/review/threads',
      { input: 'bob' },
      {
        ...as('bob'),
      },
    );
    expect(bobs.status, bobs.text).toBe(201);
    const theirs = (bobs.body as ThreadView).thread_id;

    const { page, watched } = await browser.open(s.url, 'threads');
    try {
      await page.getByTestId('auth-form').waitFor();
      await page.getByTestId('auth-key').fill(KEYS.alice);
      await page.getByTestId('auth-submit').click();
      await page.getByTestId('auth-form').waitFor({ state: 'hidden' });

      await card(page, 'review').waitFor({ timeout: POLL.timeout });
      expect(await trigger(page, 'review', 'alice')).toMatch(/ started\.$/);
      const id = await startedThread(page, 'review');
      const row = threadRow(page, id);
      await row.waitFor({ timeout: POLL.timeout });
      expect(await page.getByTestId('thread-row').count()).toBe(1);
      expect(await threadRow(page, theirs).count()).toBe(0);

      await row.click();
      const view = page.getByTestId('thread-view');
      await expect
        .poll(() => view.getByTestId('thread-status').textContent(), POLL)
        .toBe('completed');
      await turn(page, TURNS).waitFor();
      const done = await threadOf(s.url, id, as('alice'));
      expect(await view.getByTestId('thread-tokens').textContent()).toBe(
        `${done.tokens_in} in / ${done.tokens_out} out`,
      );

      // Every API request after the key was given carried it: reads, the post, the stream.
      const api = watched.requests.filter((r) => new URL(r.url).pathname.startsWith('/v1/'));
      const keyed = api.filter((r) => r.headers['authorization'] === `Bearer ${KEYS.alice}`);
      expect(keyed.map((r) => new URL(r.url).pathname)).toEqual(
        expect.arrayContaining([
          '/v1/workflows',
          '/v1/workflows/review/threads',
          `/v1/threads/${id}/stream`,
        ]),
      );
      // Before: the first read, which the 401 answered by asking for a key.
      for (const r of api.filter((a) => !keyed.includes(a))) {
        expect(new URL(r.url).pathname).toBe('/v1/workflows');
      }

      // Another user's thread, opened by its URL, is not found.
      await goTo(s.url, page, `thread=${theirs}`);
      await expect
        .poll(() => page.getByTestId('error-banner').textContent(), POLL)
        .toContain('NOT_FOUND');
      expect(await view.getByTestId('trace-node').count()).toBe(0);
      expectCleanPage(s.url, watched);
    } finally {
      await page.close();
    }
  });

  it('says so when the server runs no workflows', async () => {
    browser.require();
    const server = await createServer(stores.runtime(), { port: 0, drainMs: 100 });
    servers.push(server);
    const { page, watched } = await browser.open(server.url);
    try {
      await goTo(server.url, page, 'threads');
      await page.getByTestId('workflows-none').waitFor();
      expect(await page.getByTestId('error-banner').isHidden()).toBe(true);
      expect(await page.getByTestId('workflow').count()).toBe(0);
      expectCleanPage(server.url, watched);
    } finally {
      await page.close();
    }
  });
});
