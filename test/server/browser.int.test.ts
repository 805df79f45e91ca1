/**
 * A step's stream in headless Chromium's own `EventSource` (Debian's `chromium`, driven by
 * playwright-core): the events arrive in order, to `end`; and when the connection drops
 * mid-stream, the browser's own reconnect sends `Last-Event-ID` and the stream resumes with
 * no event twice and none missing. The page is the server's own origin (`/healthz`), reached
 * through a TCP relay that can cut a connection.
 *
 * Needs `/usr/bin/chromium` (`apt-get install -y chromium`); without it this test fails and
 * says so — it is never skipped.
 */
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { expectStreamOrder, useTestServers } from '../support/server.js';
import { startRelay } from '../support/tcp-relay.js';
import { useBrowser } from './trace-ui-browser.js';

const servers = useTestServers('server-browser');
/** Headless Chromium, launched as the trace UI's tests launch it (never skipped). */
const chromium = useBrowser();
const requireBrowser = (): Browser => chromium.require();

/** What the page's EventSource received; `drop` marks a connection it lost. */
interface PageEvent {
  readonly type: string;
  readonly id: string;
  readonly seq: number;
}

/**
 * Opens `new EventSource(path)` in the page and collects its events until `end` or `error`
 * (a lost connection is a `drop` with the last event id the page had then); `seen(n)` is
 * told of each event as the page dispatches it.
 */
async function collectInPage(
  relayUrl: string,
  path: string,
  seen: (n: number) => void = () => undefined,
): Promise<PageEvent[]> {
  const page = await requireBrowser().newPage();
  try {
    const health = await page.goto(`${relayUrl}/healthz`);
    expect(health?.status()).toBe(200);
    await page.exposeFunction('axonSeen', seen);
    return await page.evaluate(
      (streamPath) =>
        new Promise<PageEvent[]>((resolve, reject) => {
          const types = [
            'started',
            'token',
            'tool_suggest',
            'fact',
            'metrics',
            'narration',
            'checkpoint',
            'end',
            'error',
            'escalation',
          ];
          const events: PageEvent[] = [];
          const es = new EventSource(streamPath);
          for (const type of types) {
            es.addEventListener(type, (e) => {
              // A step's `error` is a MessageEvent; the browser's own connection errors are not.
              if (!(e instanceof MessageEvent)) {
                if (type === 'error') {
                  const last = events.filter((x) => x.type !== 'drop').at(-1);
                  events.push({ type: 'drop', id: last?.id ?? '', seq: 0 });
                }
                return;
              }
              const data = JSON.parse(e.data as string) as { seq: number };
              events.push({ type, id: e.lastEventId, seq: data.seq });
              (globalThis as unknown as { axonSeen: (n: number) => void }).axonSeen(events.length);
              if (type === 'end' || type === 'error') {
                es.close();
                resolve(events);
              }
            });
          }
          setTimeout(() => {
            es.close();
            reject(new Error(`no end within 30 s; ${events.length} events`));
          }, 30_000);
        }),
      path,
    );
  } finally {
    await page.close();
  }
}

describe("headless Chromium's EventSource", () => {
  it('receives a live step in order, to end (STREAM-2001)', async () => {
    requireBrowser();
    const s = await servers.start();
    const run = await s.newRun({ seed: 4 });
    const stepId = await s.submit(run.run_id, {
      type: 'llm_call',
      input: { messages: [{ role: 'user', content: 'browser' }], params: { max_tokens: 60 } },
    });
    const relay = await startRelay(new URL(s.url), { cutFirstStreamAfterBytes: null });
    try {
      const events = await collectInPage(relay.url, `/v1/steps/${stepId}/stream`);
      expect(events.filter((e) => e.type === 'drop')).toEqual([]);
      expect(events.map((e) => e.id)).toEqual(events.map((_, i) => String(i + 1)));
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      expectStreamOrder(events.map((e) => e.type));
      expect(events.filter((e) => e.type === 'token')).toHaveLength(60);
      expect(relay.streamRequests).toEqual([null]);
    } finally {
      await relay.close();
    }
  });

  it('reconnects by itself after the connection drops mid-stream, with Last-Event-ID: no event twice, none missing', async () => {
    requireBrowser();
    // 20 ms a token: the step is still running (6 s) when the page has its first events.
    const s = await servers.start({ tokenDelayMs: 20 });
    const run = await s.newRun({ seed: 5 });
    const stepId = await s.submit(run.run_id, {
      type: 'llm_call',
      input: { messages: [{ role: 'user', content: 'drop' }], params: { max_tokens: 300 } },
    });
    const relay = await startRelay(new URL(s.url), { cutFirstStreamAfterBytes: null });
    try {
      // The connection is dropped once the page has dispatched its tenth event: a byte count
      // cut on a loaded machine could fall before the page had dispatched any.
      const all = await collectInPage(relay.url, `/v1/steps/${stepId}/stream`, (n) => {
        if (n === 10) relay.cutFirstStream();
      });
      const drops = all.filter((e) => e.type === 'drop');
      const events = all.filter((e) => e.type !== 'drop');
      expect(drops.length).toBeGreaterThanOrEqual(1);
      expect(relay.streamRequests.length).toBeGreaterThanOrEqual(2);
      expect(relay.streamRequests[0]).toBeNull();
      // The browser's reconnect names the last event it had when the connection dropped.
      const resumedFrom = Number(relay.streamRequests[1]);
      expect(relay.streamRequests[1]).toBe(drops[0]?.id);
      expect(resumedFrom).toBeGreaterThanOrEqual(10);
      expect(resumedFrom).toBeLessThan(events.length);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      expect(events.filter((e) => e.type === 'token')).toHaveLength(300);
      expect(events.at(-1)?.type).toBe('end');
    } finally {
      await relay.close();
    }
  });
});
