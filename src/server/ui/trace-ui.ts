/**
 * @module The trace UI of `axon serve` (`GET /ui`, docs/trace-ui.md): one page and its
 * browser modules, kept as strings in this folder so they ship in `dist/` and run offline
 * with no build step and nothing fetched from elsewhere. Every asset is answered with its
 * content type and a strict Content-Security-Policy (`default-src 'self'`: no inline script,
 * no other origin). The assets hold no data — the page reads the API with the tab's key — so
 * they are public even where keys are configured: their paths are {@link TRACE_UI_PATHS}.
 */
import type { FastifyInstance } from 'fastify';
import { API_JS } from './api-js.js';
import { APP_JS } from './app-js.js';
import { FORMAT_JS } from './format-js.js';
import { PAGE_CSS } from './page-css.js';
import { PAGE_HTML } from './page-html.js';
import { RUN_VIEW_JS } from './run-view-js.js';
import { RUNS_VIEW_JS } from './runs-view-js.js';
import { STEP_DETAIL_JS } from './step-detail-js.js';
import { THREAD_VIEW_JS } from './thread-view-js.js';
import { THREADS_VIEW_JS } from './threads-view-js.js';
import { TRACE_TREE_JS } from './trace-tree-js.js';

/** The Content-Security-Policy of every asset of the UI. */
export const TRACE_UI_CSP =
  "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const JS = 'text/javascript; charset=utf-8';

const ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="4" cy="4" r="2.5" fill="#2f5bd3"/><circle cx="12" cy="8" r="2.5" fill="#1f8a4c"/><circle cx="4" cy="12" r="2.5" fill="#a86a00"/><path d="M4 4 12 8 4 12" stroke="#888" fill="none"/></svg>`;

/** The UI's assets by path. */
const ASSETS: Readonly<Record<string, { readonly type: string; readonly body: string }>> = {
  '/ui': { type: 'text/html; charset=utf-8', body: PAGE_HTML },
  '/ui/app.css': { type: 'text/css; charset=utf-8', body: PAGE_CSS },
  '/ui/icon.svg': { type: 'image/svg+xml', body: ICON_SVG },
  '/ui/app.js': { type: JS, body: APP_JS },
  '/ui/api.js': { type: JS, body: API_JS },
  '/ui/format.js': { type: JS, body: FORMAT_JS },
  '/ui/runs-view.js': { type: JS, body: RUNS_VIEW_JS },
  '/ui/run-view.js': { type: JS, body: RUN_VIEW_JS },
  '/ui/step-detail.js': { type: JS, body: STEP_DETAIL_JS },
  '/ui/trace-tree.js': { type: JS, body: TRACE_TREE_JS },
  '/ui/threads-view.js': { type: JS, body: THREADS_VIEW_JS },
  '/ui/thread-view.js': { type: JS, body: THREAD_VIEW_JS },
};

/**
 * The paths of the UI: the page, `/ui/` (a redirect to it) and its assets. They need no key
 * (the server's auth hook lets them through); they hold no data.
 */
export const TRACE_UI_PATHS: readonly string[] = [...Object.keys(ASSETS), '/ui/'];

/**
 * Registers `GET /ui` (the page), its assets under `/ui/`, and `/ui/` → `/ui`, on `app`.
 *
 * @example
 * registerTraceUi(app); // then open http://127.0.0.1:7070/ui
 */
export function registerTraceUi(app: FastifyInstance): void {
  for (const [path, asset] of Object.entries(ASSETS)) {
    app.get(path, (_req, reply) =>
      reply
        .header('content-type', asset.type)
        .header('content-security-policy', TRACE_UI_CSP)
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer')
        .header('cache-control', 'no-cache')
        .send(asset.body),
    );
  }
  // Relative, so a server behind a path prefix redirects within it.
  app.get('/ui/', (_req, reply) => reply.redirect('../ui', 302));
}
