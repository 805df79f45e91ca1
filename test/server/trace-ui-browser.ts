/**
 * @module What the browser tests share (test/server/trace-ui*.int.test.ts, browser.int.test.ts):
 * headless Chromium (Debian's `chromium`, driven by playwright-core), launched once per test
 * file and failing loudly when it is missing — never skipped; a page opened on `/ui` with
 * what it did recorded (errors, requests); and the check that it loaded nothing from
 * elsewhere and ran without a script error or a Content-Security-Policy violation.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';

const CHROMIUM = '/usr/bin/chromium';
const INSTALL = 'install it with `apt-get install -y chromium` (Debian); .ci/run must do the same';

/** What a page did that a test must see: errors, and every request it made. */
export interface Watched {
  readonly errors: string[];
  readonly requests: { url: string; headers: Record<string, string> }[];
}

/** The browser of a test file; see {@link useBrowser}. */
export interface UiBrowser {
  /** The browser, or a failure that says what to install. */
  require(): Browser;
  /** A new page on `<url>/ui#<hash>`, loaded (200), and what it does from now on. */
  open(url: string, hash?: string): Promise<{ page: Page; watched: Watched }>;
}

/** Launches Chromium before the file's tests and closes it after them. */
export function useBrowser(): UiBrowser {
  let browser: Browser | null = null;
  let launchError: unknown = null;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      launchError = new Error(`${CHROMIUM} is missing`);
      return;
    }
    try {
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
      });
    } catch (err) {
      launchError = err;
    }
  });

  afterAll(async () => {
    await browser?.close();
  });

  const launched = (): Browser => {
    if (browser) return browser;
    throw new Error(`headless Chromium could not be launched (${String(launchError)}): ${INSTALL}`);
  };

  return {
    require: launched,
    async open(url, hash = '') {
      const page = await launched().newPage();
      const watched: Watched = { errors: [], requests: [] };
      page.on('pageerror', (err) => watched.errors.push(`pageerror: ${err.message}`));
      page.on('console', (msg) => {
        // Chromium logs each 4xx answer as a failed load: those are checked by their responses.
        if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) {
          watched.errors.push(`console: ${msg.text()}`);
        }
      });
      page.on('response', (res) => {
        // The page and its assets always load; only the API may refuse (401, 404, 429), as asked.
        const path = new URL(res.url()).pathname;
        if (res.status() >= 400 && !path.startsWith('/v1/')) {
          watched.errors.push(`${res.status()} for ${path}`);
        }
      });
      page.on('request', (req) => {
        watched.requests.push({ url: req.url(), headers: req.headers() });
      });
      const res = await page.goto(`${url}/ui${hash === '' ? '' : `#${hash}`}`);
      expect(res?.status()).toBe(200);
      return { page, watched };
    },
  };
}

/** Nothing from elsewhere, no script error, no CSP violation. */
export function expectCleanPage(url: string, watched: Watched): void {
  expect(watched.errors).toEqual([]);
  const origin = new URL(url).origin;
  for (const { url: asked } of watched.requests) expect(new URL(asked).origin, asked).toBe(origin);
}

/** The page's URL hash. */
export const hashOf = (page: Page): string => new URL(page.url()).hash;

/** Moves the page to `<url>/ui#<hash>`: the same document, as a link within it would. */
export async function goTo(url: string, page: Page, hash: string): Promise<void> {
  await page.goto(`${url}/ui#${hash}`);
}
