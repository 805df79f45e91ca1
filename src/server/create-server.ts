/**
 * @module `axon serve`'s HTTP server (API.md) on Fastify 5: a shell over a runtime — it
 * imports the runtime and nothing imports it. Every request gets an `X-Correlation-Id`
 * (echoed, or made), is authenticated by its key when keys are configured, and every failure
 * answers API.md's error body; nothing a client sends crashes it (malformed JSON, a wrong
 * content type, invalid UTF-8, a body past the limit). Closing drains: no new steps, the
 * running ones end (their streams get their `end`), then the runtime and its store close.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import type { Logger } from '../observability/logger.js';
import type { Runtime } from '../runtime/runtime.js';
import { KeyRing, requirePermission, type ApiKey, type Caller } from './auth.js';
import { errorReply, HttpError } from './http-errors.js';
import { openApiDocument } from './openapi.js';
import { registerRoutes } from './routes.js';
import { ServerMetrics } from './server-metrics.js';

/** Options of {@link createServer}. */
export interface ServerOptions {
  /** Where to listen; default `127.0.0.1`. Without keys only a loopback address is allowed. */
  readonly host?: string;
  /** Default 7070; 0 picks a free port. */
  readonly port?: number;
  /** API keys (API.md "Auth"); none: every caller is `anonymous`. */
  readonly keys?: readonly ApiKey[];
  /** `: keep-alive` interval of SSE streams, ms; default 15 000. */
  readonly keepAliveMs?: number;
  /** The largest request body, bytes; default 1 MiB (413 past it). */
  readonly bodyLimitBytes?: number;
  /** Steps of one run submitted and not ended, at most; default 64 (429 past it). */
  readonly maxStepsPerRun?: number;
  /** How long a close waits for running steps before cancelling them, ms; default 10 000. */
  readonly drainMs?: number;
  /** The version `/openapi.json` reports. */
  readonly version?: string;
  /** Where request failures are logged; default the runtime's logger. */
  readonly logger?: Logger;
}

/** A running server. */
export interface AxonServer {
  readonly app: FastifyInstance;
  /** Where it listens, once listening (`http://host:port`). */
  readonly url: string;
  /**
   * Drains and closes: no new steps (503), the running ones get up to `drainMs` to end
   * (then they are cancelled), open streams get their last event, then the HTTP server,
   * the runtime and its store close.
   */
  close(): Promise<void>;
}

const LOOPBACK: ReadonlySet<string> = new Set(['127.0.0.1', '::1', 'localhost']);
const CORRELATION = /^[\w.:@/+=-]{1,128}$/;

function positive(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (!(Number.isInteger(v) && v > 0)) {
    throw new RangeError(`createServer: ${name} must be a whole number > 0, got ${String(v)}`);
  }
  return v;
}

/**
 * Starts `axon serve` over `runtime` and resolves once it listens. The server owns the
 * runtime from then on: closing it closes the runtime.
 *
 * @example
 * const server = await createServer(createRuntime({ store: sqliteStore() }), { port: 7070 });
 * console.log(`listening on ${server.url}`);
 */
export async function createServer(
  runtime: Runtime,
  options: ServerOptions = {},
): Promise<AxonServer> {
  const keys = new KeyRing(options.keys ?? []);
  const host = options.host ?? '127.0.0.1';
  if (!keys.enabled && !LOOPBACK.has(host)) {
    throw new RangeError(
      `createServer: without API keys the server binds to 127.0.0.1 only (asked for ${host}); configure keys to listen elsewhere`,
    );
  }
  const port = options.port ?? 7070;
  if (!(Number.isInteger(port) && port >= 0 && port <= 65_535)) {
    throw new RangeError(`createServer: port must be 0..65535, got ${String(port)}`);
  }
  const logger = options.logger ?? runtime.logger;
  const metrics = new ServerMetrics(runtime);
  const streams = new Set<Promise<unknown>>();
  let draining = false;
  const app = Fastify({
    bodyLimit: positive('bodyLimitBytes', options.bodyLimitBytes, 1_048_576),
    logger: false,
    return503OnClosing: true,
  });

  // JSON as bytes: invalid UTF-8 and malformed JSON are the caller's 400, an empty body none.
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  // JSON only: any other content type of a body is 415.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, raw, done) => {
    const bytes = raw as Buffer;
    if (bytes.length === 0) {
      done(null, undefined);
      return;
    }
    let text: string;
    try {
      text = utf8.decode(bytes);
    } catch {
      done(new HttpError(400, 'INVALID_PARAMS', 'the body is not valid UTF-8'), undefined);
      return;
    }
    try {
      done(null, JSON.parse(text) as unknown);
    } catch (err) {
      done(
        new HttpError(400, 'INVALID_PARAMS', 'the body is not valid JSON', {
          reason: err instanceof Error ? err.message : String(err),
        }),
        undefined,
      );
    }
  });

  app.addHook('onRequest', async (req, reply) => {
    const given = req.headers['x-correlation-id'];
    const id = typeof given === 'string' && CORRELATION.test(given) ? given : randomUUID();
    reply.header('x-correlation-id', id);
    (req as FastifyRequest & { correlationId: string }).correlationId = id;
    if (!req.url.startsWith('/v1/')) return;
    const caller = keys.caller(req.headers.authorization);
    requirePermission(caller, req.method === 'GET' || req.method === 'HEAD' ? 'read' : 'write');
    (req as FastifyRequest & { caller: Caller }).caller = caller;
  });

  app.addHook('onResponse', async (req, reply) => {
    metrics.requests.inc({
      method: req.method,
      route: req.routeOptions.url ?? 'unknown',
      status: String(reply.statusCode),
    });
  });

  app.setErrorHandler((err, req, reply) => {
    const correlationId =
      (req as FastifyRequest & { correlationId?: string }).correlationId ?? randomUUID();
    const mapped = fastifyError(err);
    const { status, body, retryAfterS } = errorReply(mapped, correlationId);
    if (status >= 500 && status !== 501 && status !== 503) {
      logger.error({ err, correlation_id: correlationId, url: req.url }, 'request failed');
    }
    if (retryAfterS !== null) void reply.header('retry-after', String(retryAfterS));
    void reply.header('x-correlation-id', correlationId).code(status).send(body);
  });

  app.setNotFoundHandler((req, reply) => {
    const correlationId =
      (req as FastifyRequest & { correlationId?: string }).correlationId ?? randomUUID();
    const { status, body } = errorReply(
      new HttpError(404, 'NOT_FOUND', `no route ${req.method} ${req.url.split('?')[0] ?? ''}`),
      correlationId,
    );
    void reply.code(status).send(body);
  });

  app.get('/healthz', () => ({ status: 'ok' }));
  app.get('/metrics', async (_req, reply) => {
    void reply.header('content-type', metrics.contentType);
    return metrics.text();
  });
  const document = openApiDocument(options.version ?? '0.0.0');
  app.get('/openapi.json', () => document);

  registerRoutes(app, {
    runtime,
    metrics,
    keepAliveMs: positive('keepAliveMs', options.keepAliveMs, 15_000),
    maxStepsPerRun: positive('maxStepsPerRun', options.maxStepsPerRun, 64),
    draining: () => draining,
    streams,
  });

  const address = await app.listen({ host, port });
  const drainMs = positive('drainMs', options.drainMs, 10_000);
  let closing: Promise<void> | null = null;
  return {
    app,
    url: address,
    close: () =>
      (closing ??= (async () => {
        draining = true;
        await drain(runtime, drainMs);
        // Streams of ended steps have written their last event; give them a moment to end.
        await Promise.race([
          Promise.allSettled([...streams]),
          new Promise((r) => setTimeout(r, 1_000)),
        ]);
        await app.close();
        await runtime.close();
      })()),
  };
}

/** Waits up to `ms` for the runtime's running steps to end, then cancels what is left. */
async function drain(runtime: Runtime, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  const running = (): number => runtime.system.list('step').length;
  while (running() > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
  if (running() === 0) return;
  const runs = new Set(
    runtime.system
      .list('step')
      .map((e) => e.runId)
      .filter((id): id is string => typeof id === 'string'),
  );
  await Promise.all(
    [...runs].map(async (runId) => {
      const { done } = await runtime.cancelRun(runId).catch(() => ({ done: Promise.resolve() }));
      await done;
    }),
  );
}

/** A Fastify error as the error of API.md it is. */
function fastifyError(err: unknown): unknown {
  const e = err as { code?: string; statusCode?: number; message?: string };
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new HttpError(413, 'PAYLOAD_TOO_LARGE', 'the body is larger than the server takes');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new HttpError(415, 'INVALID_PARAMS', 'the body must be application/json');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new HttpError(400, 'INVALID_PARAMS', e.message ?? 'the body is not valid');
    default:
      if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
        return new HttpError(e.statusCode, 'INVALID_PARAMS', e.message ?? 'bad request');
      }
      return err;
  }
}
