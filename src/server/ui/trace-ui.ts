/**
 * @module The trace UI of `axon serve` (`GET /ui`, docs/trace-ui.md): the page and the assets
 * `ui-bundle.ts` built from `src/ui/` (TypeScript bundled by esbuild), served with their
 * content type and a strict Content-Security-Policy (`default-src 'self'`: no inline script,
 * no other origin). Assets whose names carry their content's hash are cached for good
 * (`immutable`); the page and the icon are `no-cache` with an `ETag` (304 on
 * `If-None-Match`), so a new build shows at the next load. A `dist/` install built without
 * the UI answers 503 ({@link UiNotBuiltError}) and the API works on. The assets hold no data
 * — the page reads the API with the tab's key — so they are public even where keys are
 * configured: their routes are {@link TRACE_UI_PATHS}.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from '../http-errors.js';
import { PAGE_FILE, uiAssets, type UiAsset } from './ui-bundle.js';
import { UiNotBuiltError } from './ui-not-built-error.js';

export { UiNotBuiltError };

/** The Content-Security-Policy of every asset of the UI. */
export const TRACE_UI_CSP =
  "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** `cache-control` of an asset whose name carries its content's hash. */
export const IMMUTABLE = 'public, max-age=31536000, immutable';

/**
 * The routes of the UI: the page, `/ui/` (a redirect to it) and its assets. They need no key
 * (the server's auth hook lets them through); they hold no data.
 */
export const TRACE_UI_PATHS: readonly string[] = ['/ui', '/ui/', '/ui/:asset'];

/** Whether `header` (an `If-None-Match`) names `etag`. */
function matches(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header.split(',').some((t) => {
    const tag = t.trim();
    return tag === '*' || tag === etag || tag === `W/${etag}`;
  });
}

function send(req: FastifyRequest, reply: FastifyReply, item: UiAsset): FastifyReply {
  void reply
    .header('content-security-policy', TRACE_UI_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', item.immutable ? IMMUTABLE : 'no-cache')
    .header('etag', item.etag);
  if (matches(req.headers['if-none-match'], item.etag)) return reply.code(304).send();
  return reply.header('content-type', item.type).send(item.body);
}

/**
 * Registers `GET /ui` (the page), its assets under `/ui/`, and `/ui/` → `/ui`, on `app`.
 *
 * @example
 * registerTraceUi(app); // then open http://127.0.0.1:7070/ui
 */
export function registerTraceUi(app: FastifyInstance): void {
  app.get('/ui', async (req, reply) => {
    const assets = await uiAssets();
    const page = assets.get(PAGE_FILE);
    if (!page) throw new UiNotBuiltError(PAGE_FILE);
    return send(req, reply, page);
  });
  app.get<{ Params: { asset: string } }>('/ui/:asset', async (req, reply) => {
    const assets = await uiAssets();
    const name = req.params.asset;
    const item = name === PAGE_FILE ? undefined : assets.get(name);
    if (!item) throw new HttpError(404, 'NOT_FOUND', `no asset ${name} in the trace UI`);
    return send(req, reply, item);
  });
  // Relative, so a server behind a path prefix redirects within it.
  app.get('/ui/', (_req, reply) => reply.redirect('../ui', 302));
}
