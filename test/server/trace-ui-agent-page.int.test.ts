/**
 * An agent's page in the trace UI (issue 46, "Trace UI": an agent's page with its state,
 * mailbox, timers and its messages on the timeline), in headless Chromium on a real server:
 * - its status, version, mailbox depth, next timer, created and updated times and its state
 *   are the API's (`GET /v1/agents/{name}/{key}`), as its figures read them;
 * - its messages are the steps of its run, on the run page's timeline and tree, each named
 *   `#<n>` and its message, with its step's status; a message sent while the page is open
 *   appears, runs and changes the state shown, without a reload;
 * - the form sends a message (202, then its client token seen: 200), says what is not JSON
 *   without sending it, and shows the API's refusal — 422 `SCHEMA_VIOLATION`, 429
 *   `QUEUE_FULL`, 409 `CONFLICT` — under the form and in the banner, nothing accepted.
 * (What a waiting actor waits for: trace-ui-agent-waits.int.test.ts.)
 *
 * Needs `/usr/bin/chromium` (`apt-get install -y chromium`); never skipped.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { followUp, notebook } from '../../examples/index.js';
import { defineAgent } from '../../src/actors/define-agent.js';
import { POLL, useTestServers, type TestServer } from '../support/server.js';
import {
  agent,
  expected,
  messages,
  send,
  settled,
  shown,
  timelineRows,
} from './trace-ui-agent-support.js';
import { expectCleanPage, useBrowser } from './trace-ui-browser.js';

const servers = useTestServers('server-trace-ui-agent-page');
const browser = useBrowser();

/** Handlers held until their key's gate opens: a busy actor, for as long as a test needs. */
const gates = new Map<string, () => void>();
const opened = new Map<string, Promise<void>>();
function hold(key: string): void {
  opened.set(key, new Promise<void>((resolve) => gates.set(key, resolve)));
}
afterEach(() => {
  for (const open of gates.values()) open();
  gates.clear();
  opened.clear();
});

/** An agent whose handler waits for its key's gate; `policy` and `maxQueue` its mailbox's. */
function heldAgent(name: string, policy: 'queue' | 'reject', maxQueue: number) {
  return defineAgent({
    name,
    input: z.strictObject({ n: z.number() }),
    durable: {
      state: z.object({ seen: z.array(z.number()) }),
      initial: { seen: [] },
      version: 1,
      mailbox: { policy, maxQueue },
    },
    handler: async (message, actor) => {
      await opened.get(actor.key);
      return { state: { seen: [...actor.state.seen, message.n] } };
    },
  });
}

const start = (): Promise<TestServer> =>
  servers.start({
    runtime: {
      agents: [
        notebook,
        followUp,
        heldAgent('held', 'queue', 1),
        heldAgent('held-reject', 'reject', 10),
      ],
    },
  });

describe("an agent's page in headless Chromium", () => {
  it('shows the actor as the API does, its messages on the timeline, and one sent from its form live', async () => {
    browser.require();
    const s = await start();
    const key = `nb-${randomUUID().slice(0, 8)}`;
    const path = `notebook/${key}`;
    const first = await send(s, path, { text: 'called back' });
    const second = await send(s, path, { text: 'sent the refund' });
    const before = await settled(s, path);
    expect(before.state).toEqual({ notes: ['called back', 'sent the refund'] });

    const { page, watched } = await browser.open(s.url, `agent=notebook&key=${key}`);
    try {
      await expect.poll(() => shown(page), POLL).toEqual(expected(before));
      await expect
        .poll(() => timelineRows(page), POLL)
        .toEqual([
          { id: first, name: '#1 {"text":"called back"}', status: 'succeeded' },
          { id: second, name: '#2 {"text":"sent the refund"}', status: 'succeeded' },
        ]);
      // The tree of its run: each message a root, with its status.
      const tree = page.getByTestId('agent-trace-tree');
      expect(await tree.getByTestId('trace-node-name').allTextContents()).toEqual([
        '#1 {"text":"called back"}',
        '#2 {"text":"sent the refund"}',
      ]);
      expect(await tree.getByTestId('trace-node-status').allTextContents()).toEqual([
        'succeeded',
        'succeeded',
      ]);

      // A message from the form: accepted (202), on the timeline, run, and in the state.
      const view = page.getByTestId('agent-view');
      await view.getByTestId('agent-message-input').fill('{"text":"followed up"}');
      await view.getByTestId('agent-message-token').fill('form-1');
      await view.getByTestId('agent-message-send').click();
      const result = view.getByTestId('agent-message-result');
      await expect.poll(() => result.getAttribute('data-state'), POLL).toBe('ok');
      const third = await view.getByTestId('agent-message-step').textContent();
      expect(await result.textContent()).toMatch(
        new RegExp(`^Message ${third ?? '-'} accepted, (queued|running)\\.$`),
      );
      const all = await messages(s, before.run_id);
      expect(all.map((m) => m.step_id)).toEqual([first, second, third]);
      await expect
        .poll(async () => (await timelineRows(page)).at(-1), POLL)
        .toEqual({ id: third, name: '#3 {"text":"followed up"}', status: 'succeeded' });
      const after = await settled(s, path);
      expect(after.state).toEqual({ notes: ['called back', 'sent the refund', 'followed up'] });
      await expect.poll(() => shown(page), POLL).toEqual(expected(after));

      // The same client token again: the first message, nothing accepted twice (200).
      await view.getByTestId('agent-message-input').fill('{"text":"again"}');
      await view.getByTestId('agent-message-send').click();
      await expect
        .poll(() => result.textContent(), POLL)
        .toBe(`Already sent with this client token: message ${third ?? '-'} is succeeded.`);
      expect(await messages(s, before.run_id)).toHaveLength(3);

      // The message's step opens in the page's panel, its input and output the API's.
      await view.getByTestId('agent-message-step').click();
      const detail = page.getByTestId('agent-step-detail');
      await expect
        .poll(() => detail.getByTestId('step-output').first().textContent(), POLL)
        .toBe(JSON.stringify({ count: 3 }, null, 2));
      expect(await detail.getByTestId('step-input').textContent()).toBe(
        JSON.stringify({ text: 'followed up' }, null, 2),
      );
      expect(new URL(page.url()).hash).toBe(`#agent=notebook&key=${key}&step=${third ?? '-'}`);
      expectCleanPage(s.url, watched);
    } finally {
      await page.close();
    }
  });

  it("refuses text that is not JSON without sending it, and shows the API's 422, 429 and 409 with nothing accepted", async () => {
    browser.require();
    const s = await start();
    const key = `k-${randomUUID().slice(0, 8)}`;
    await send(s, `notebook/${key}`, { text: 'one' });
    const nb = await settled(s, `notebook/${key}`);
    const { page, watched } = await browser.open(s.url, `agent=notebook&key=${key}`);
    const view = page.getByTestId('agent-view');
    const input = view.getByTestId('agent-message-input');
    const sendButton = view.getByTestId('agent-message-send');
    const result = view.getByTestId('agent-message-result');
    const banner = page.getByTestId('error-banner');
    try {
      await expect.poll(() => shown(page), POLL).toEqual(expected(nb));
      const posts = () =>
        watched.requests.filter((r) => new URL(r.url).pathname.endsWith('/messages')).length;

      await input.fill('{"text": ');
      await sendButton.click();
      await expect.poll(() => result.getAttribute('data-state'), POLL).toBe('error');
      expect(await result.textContent()).toMatch(/^Not sent: the message is not JSON \(.+\)\.$/);
      expect(posts()).toBe(0);

      // 422: the agent's input schema; nothing accepted.
      await input.fill('{"txt":"typo"}');
      await sendButton.click();
      await expect
        .poll(() => result.getAttribute('data-error-code'), POLL)
        .toBe('SCHEMA_VIOLATION');
      expect(await result.textContent()).toMatch(/^SCHEMA_VIOLATION \(422\): .+/);
      expect(await banner.textContent()).toMatch(/^SCHEMA_VIOLATION: .+/);
      expect(await banner.isVisible()).toBe(true);
      expect(await messages(s, nb.run_id)).toHaveLength(1);
      expect(posts()).toBe(1);
      // The text stays, to mend it.
      expect(await input.inputValue()).toBe('{"txt":"typo"}');
      expectCleanPage(s.url, watched);
    } finally {
      await page.close();
    }

    // 429: a held actor with one message running and one queued (its maxQueue).
    const busy = `q-${randomUUID().slice(0, 8)}`;
    hold(busy);
    await send(s, `held/${busy}`, { n: 1 });
    // Taken (its mailbox empty again) before the next comes, which fills it.
    await expect
      .poll(async () => {
        const a = await agent(s, `held/${busy}`);
        return [a.status, a.mailbox_depth];
      }, POLL)
      .toEqual(['busy', 0]);
    await send(s, `held/${busy}`, { n: 2 });
    await expect.poll(async () => (await agent(s, `held/${busy}`)).mailbox_depth, POLL).toBe(1);
    // 409: a held actor under `reject`, busy with one message.
    const rejecting = `r-${randomUUID().slice(0, 8)}`;
    hold(rejecting);
    await send(s, `held-reject/${rejecting}`, { n: 1 });
    await expect
      .poll(async () => (await agent(s, `held-reject/${rejecting}`)).status, POLL)
      .toBe('busy');

    for (const [path, status, code] of [
      [`held/${busy}`, 429, 'QUEUE_FULL'],
      [`held-reject/${rejecting}`, 409, 'CONFLICT'],
    ] as const) {
      const [name, k] = path.split('/');
      const a = await agent(s, path);
      const before = await messages(s, a.run_id);
      const tab = await browser.open(s.url, `agent=${name ?? ''}&key=${k ?? ''}`);
      const p = tab.page;
      try {
        const v = p.getByTestId('agent-view');
        await expect.poll(() => v.getByTestId('agent-status').textContent(), POLL).toBe('busy');
        await v.getByTestId('agent-message-input').fill('{"n": 3}');
        await v.getByTestId('agent-message-send').click();
        const r = v.getByTestId('agent-message-result');
        await expect.poll(() => r.getAttribute('data-error-code'), POLL).toBe(code);
        expect(await r.textContent()).toMatch(new RegExp(`^${code} \\(${status}\\): .+`));
        expect(await p.getByTestId('error-banner').textContent()).toMatch(
          new RegExp(`^${code}: .+`),
        );
        expect((await messages(s, a.run_id)).map((m) => m.step_id)).toEqual(
          before.map((m) => m.step_id),
        );
        expectCleanPage(s.url, tab.watched);
      } finally {
        await p.close();
      }
    }
  });
});
