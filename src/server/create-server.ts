/**
 * @module `axon serve`'s HTTP server (API.md) on Fastify 5: a shell over a runtime — it
 * imports the runtime and nothing imports it. Every request gets an `X-Correlation-Id`
 * (echoed, or made), is authenticated by its key when keys are configured, and every failure
 * answers API.md's error body; nothing a client sends crashes it (malformed JSON, a wrong
 * content type, invalid UTF-8, a body past the limit). Closing drains: no new steps, the
 * running ones end (their streams get their `end`), then the runtime and its store close.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { CancelledError } from '../errors/cancelled-error.js';
import type { Logger } from '../observability/logger.js';
import type { Runtime } from '../runtime/runtime.js';
import { allowedMethods } from './allowed-methods.js';
import { KeyRing, requirePermission, type ApiKey, type Caller } from './auth.js';
import { answerClientError, ERROR_STATUSES, errorReply, HttpError } from './http-errors.js';
import { checkAllowedHosts, hostGuard } from './host-guard.js';
import { parseJsonBody } from './json-body.js';
import { openApiDocument } from './openapi.js';
import { registerRoutes } from './routes.js';
import { registerAgentRoutes } from './agent-routes.js';
import { registerScheduleRoutes } from './schedule-routes.js';
import { registerRunListRoutes } from './run-list-routes.js';
import { registerRunStreamRoute } from './run-stream-route.js';
import { registerThreadRoutes } from './thread-routes.js';
import type { WorkflowEngine } from '../workflows/workflow-engine.js';
import { ServerMetrics } from './server-metrics.js';
import { OpenStreams } from './sse.js';
import { StreamSlots } from './stream-slots.js';
import { drainAfterAnswer } from './unread-body.js';
import { registerTraceUi, TRACE_UI_PATHS } from './ui/trace-ui.js';
import { A2A_PUBLIC_PATHS, registerA2aRoutes } from './a2a/a2a-routes.js';
import type { A2aOptions } from './a2a/a2a-options.js';
import { MCP_PATH, registerMcpRoute, type McpOptions } from './mcp/mcp-route.js';
import { registerOpenAIRoutes, type FrontDoor } from './openai-routes.js';

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
  /**
   * The least time between two socket writes of one SSE stream, ms; default 50. Frames
   * that come sooner go out together, in one write (the first frame and a step's last are
   * never held); 0 writes every page of the log at once. See docs/http-api.md, "Streams".
   */
  readonly sseFlushMs?: number;
  /** The largest request body, bytes; default 1 MiB (413 past it). */
  readonly bodyLimitBytes?: number;
  /** Steps of one run submitted and not ended, at most; default 64 (429 past it). */
  readonly maxStepsPerRun?: number;
  /** How long a close waits for running steps before cancelling them, ms; default 10 000. */
  readonly drainMs?: number;
  /** The version `/openapi.json` reports. */
  readonly version?: string;
  /**
   * The `Host` names the server answers (`name` for any port, or `name:port`); a request
   * with another `Host` is 403 `FORBIDDEN`. Default: without keys, loopback names only
   * (`localhost`, `127.0.0.1`, `[::1]`, any port), which stops DNS rebinding;
   * with keys, every `Host`. Given, without keys, these are answered besides the loopback
   * names; with keys, only these.
   */
  readonly allowedHosts?: readonly string[];
  /** SSE streams (steps', threads', runs' and agents') open at once, at most; default 2 048 (429 past it). */
  readonly maxStreams?: number;
  /** SSE streams one user (all its keys) holds open at once, at most; default 256 (429 past it). */
  readonly maxStreamsPerUser?: number;
  /** Where request failures are logged; default the runtime's logger. */
  readonly logger?: Logger;
  /**
   * The workflows served under `/v1/workflows` and `/v1/threads` (docs/workflows.md); none:
   * those routes answer 404.
   */
  readonly workflows?: WorkflowEngine;
  /**
   * The A2A server: the agent card at `/.well-known/agent-card.json` and the JSON-RPC
   * endpoint `/a2a` (docs/a2a.md); served unless `enabled` is false.
   */
  readonly a2a?: A2aOptions;
  /**
   * `/mcp`, the agents and tools as an MCP server over Streamable HTTP (docs/mcp.md); served
   * unless `enabled` is false.
   */
  readonly mcp?: McpOptions;
  /**
   * The OpenAI API in front of the agents, `GET /v1/models` and `POST /v1/chat/completions`
   * (docs/openai-api.md); served unless `enabled` is false (both routes then 404).
   */
  readonly openaiApi?: OpenAIApiOptions;
}

/** Options of the OpenAI API ({@link ServerOptions.openaiApi}). */
export interface OpenAIApiOptions {
  /** Default `true`; `false` serves neither route (`openai_api: false` in axon.yaml). */
  readonly enabled?: boolean;
  /**
   * A front door (`createOrchestrator`) to serve as the model `axon`; default none (`axon
   * serve` has none).
   */
  readonly frontDoor?: FrontDoor;
}

/** A running server. */
export interface AxonServer {
  readonly app: FastifyInstance;
  /** Where it listens, once listening (`http://host:port`). */
  readonly url: string;
  /**
   * Drains and closes: no new steps (503), the running ones get up to `drainMs` to end
   * (then they are cancelled; their runs stay `running`), open streams get their last event
   * and a second to send it (a client that stopped reading is then cut off), then the HTTP
   * server (every request from here on: 503 `POOL_UNAVAILABLE`), the runtime and its store
   * close. Calling it again returns the same promise.
   */
  close(): Promise<void>;
}

const LOOPBACK: ReadonlySet<string> = new Set(['127.0.0.1', '::1', 'localhost']);
const CORRELATION = /^[\w.:@/+=-]{1,128}$/;
/** The routes anyone may call, keys or not (the trace UI's assets hold no data). */
const PUBLIC: ReadonlySet<string> = new Set([
  '/healthz',
  '/openapi.json',
  ...TRACE_UI_PATHS,
  // A2A discovery: the card says how to authenticate, so it is read before a key is known.
  ...A2A_PUBLIC_PATHS,
]);
/** The route of the server's figures: with keys, for a key with `metrics` or `admin`. */
const METRICS_PATH = '/metrics';
/** How long a close lets open streams write their last event before cutting them, ms. */
const STREAM_GRACE_MS = 1_000;

type Request = FastifyRequest & { correlationId?: string };

/** The request's correlation id: the one its `onRequest` hook kept, or a valid given one. */
function correlationOf(req: FastifyRequest): string {
  const kept = (req as Request).correlationId;
  if (kept !== undefined) return kept;
  const given = req.headers['x-correlation-id'];
  return typeof given === 'string' && CORRELATION.test(given) ? given : randomUUID();
}

/**
 * `value` (else `fallback`) if it is a whole number ≥ `min` (default 1); else a `RangeError`
 * naming the option.
 */
function whole(name: string, value: number | undefined, fallback: number, min = 1): number {
  const v = value ?? fallback;
  if (!(Number.isInteger(v) && v >= min)) {
    const bound = min === 1 ? '> 0' : `>= ${min}`;
    throw new RangeError(`createServer: ${name} must be a whole number ${bound}, got ${String(v)}`);
  }
  return v;
}

/**
 * Starts `axon serve` over `runtime` and resolves once it listens. The server owns the
 * runtime from then on: closing it closes the runtime. If it cannot listen (the port is
 * taken), it rejects and the runtime stays the caller's. It does not resume the runs a
 * stopped server left in the store: call `runtime.resumeRuns()` first (as `axon serve` does).
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
  const streams = new OpenStreams();
  const slots = new StreamSlots(
    whole('maxStreams', options.maxStreams, 2_048),
    whole('maxStreamsPerUser', options.maxStreamsPerUser, 256),
  );
  const allowedHost = hostGuard(keys.enabled, checkAllowedHosts(options.allowedHosts ?? []));
  let draining = false;
  let closed = false;
  const app = Fastify({
    bodyLimit: whole('bodyLimitBytes', options.bodyLimitBytes, 1_048_576),
    logger: false,
    // An actor's key may be 128 characters (API.md), and one past the bound is 400 naming
    // it, not a route that does not match: no path parameter is cut short by the router
    // (a request line is bounded by Node's header limit anyway).
    routerOptions: { maxParamLength: 16_384 },
    // Fastify's own 503 while closing has its own body; the onRequest hook answers API.md's.
    return503OnClosing: false,
    // Requests Node's parser refuses, and URLs the router cannot decode, get API.md's body too.
    clientErrorHandler: answerClientError,
    frameworkErrors: (err, req, reply) => {
      const { status, body } = errorReply(fastifyError(err), correlationOf(req));
      keepReading(req, reply);
      void (reply as FastifyReply)
        .header('x-correlation-id', body.correlation_id)
        .code(status)
        .send(body);
    },
  });

  // JSON only: any other content type of a body is 415 (see json-body.ts for the rest).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, raw, done) => {
    try {
      done(null, parseJsonBody(raw as Buffer));
    } catch (err) {
      done(err as Error, undefined);
    }
  });

  app.addHook('onRequest', async (req, reply) => {
    const id = correlationOf(req);
    reply.header('x-correlation-id', id);
    (req as Request).correlationId = id;
    if (closed) {
      reply.header('connection', 'close');
      throw new HttpError(503, 'POOL_UNAVAILABLE', 'the server is shutting down');
    }
    // Before anything else: a page that rebound its name to this machine learns nothing.
    allowedHost(req.headers.host);
    const route = req.routeOptions.url ?? '';
    if (PUBLIC.has(route)) return;
    // Every other path needs a key when keys are configured, an unknown one too (and a known
    // path asked with a wrong method): a caller without a key learns nothing of which routes
    // exist. No route, no permission to check: a valid key gets the 404 or 405.
    const caller = keys.caller(req.headers.authorization);
    if (route === METRICS_PATH) {
      // The figures name every agent, tool, engine and pool: for operators' keys only.
      if (!caller.permissions.has('admin')) requirePermission(caller, 'metrics');
    } else if (route !== '' && route !== MCP_PATH) {
      // `/mcp` checks each MCP method's permission itself, answering an MCP error.
      requirePermission(caller, req.method === 'GET' || req.method === 'HEAD' ? 'read' : 'write');
    }
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
    const correlationId = correlationOf(req);
    const mapped = fastifyError(err);
    const { status, body, retryAfterS } = errorReply(mapped, correlationId);
    if (status >= 500 && status !== 501 && status !== 503) {
      logger.error({ err, correlation_id: correlationId, url: req.url }, 'request failed');
    }
    if (retryAfterS !== null) void reply.header('retry-after', String(retryAfterS));
    keepReading(req, reply);
    void reply.header('x-correlation-id', correlationId).code(status).send(body);
  });

  /**
   * A refused request whose body is still coming: read on after the answer (bounded), so the
   * client reads the answer instead of a broken pipe; Fastify's `connection: close` after a
   * refused body would cut it while it writes.
   */
  const keepReading = (req: FastifyRequest, reply: FastifyReply): void => {
    if (!closed && drainAfterAnswer(req.raw, reply.raw)) void reply.removeHeader('connection');
  };

  // No route for the method and path: 405 with `Allow` when the path has routes for other
  // methods (read from the route table), else 404.
  app.setNotFoundHandler((req, reply) => {
    const correlationId = correlationOf(req);
    keepReading(req, reply);
    const path = req.url.split('?')[0] ?? '';
    const allowed = allowedMethods(app, req.url);
    if (allowed.length > 0) void reply.header('allow', allowed.join(', '));
    const { status, body } = errorReply(
      allowed.length > 0
        ? new HttpError(
            405,
            'METHOD_NOT_ALLOWED',
            `${path} does not take ${req.method}; it takes ${allowed.join(', ')}`,
            { method: req.method, allowed },
          )
        : new HttpError(404, 'NOT_FOUND', `no route ${req.method} ${path}`),
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
    keepAliveMs: whole('keepAliveMs', options.keepAliveMs, 15_000),
    sseFlushMs: whole('sseFlushMs', options.sseFlushMs, 50, 0),
    maxStepsPerRun: whole('maxStepsPerRun', options.maxStepsPerRun, 64),
    draining: () => draining,
    streams,
    slots,
    logger,
  });
  registerRunListRoutes(app, runtime);
  registerRunStreamRoute(app, {
    runtime,
    keepAliveMs: whole('keepAliveMs', options.keepAliveMs, 15_000),
    sseFlushMs: whole('sseFlushMs', options.sseFlushMs, 50, 0),
    logger,
    streams,
    slots,
    metrics,
  });
  if (options.workflows) {
    registerThreadRoutes(app, {
      engine: options.workflows,
      keepAliveMs: whole('keepAliveMs', options.keepAliveMs, 15_000),
      sseFlushMs: whole('sseFlushMs', options.sseFlushMs, 50, 0),
      logger,
      draining: () => draining,
      streams,
      slots,
      metrics,
    });
  }
  registerAgentRoutes(app, {
    runtime,
    keepAliveMs: whole('keepAliveMs', options.keepAliveMs, 15_000),
    sseFlushMs: whole('sseFlushMs', options.sseFlushMs, 50, 0),
    logger,
    draining: () => draining,
    streams,
    slots,
    metrics,
  });
  registerScheduleRoutes(app, runtime);
  registerTraceUi(app);
  registerA2aRoutes(app, {
    runtime,
    options: options.a2a,
    version: options.version ?? '0.0.0',
    keys: keys.enabled,
    draining: () => draining,
    streams,
    slots,
    metrics,
    logger,
    keepAliveMs: whole('keepAliveMs', options.keepAliveMs, 15_000),
    sseFlushMs: whole('sseFlushMs', options.sseFlushMs, 50, 0),
  });
  registerMcpRoute(
    app,
    {
      runtime,
      logger,
      version: options.version ?? '0.0.0',
      keepAliveMs: whole('keepAliveMs', options.keepAliveMs, 15_000),
      maxCalls: whole('maxStepsPerRun', options.maxStepsPerRun, 64),
      draining: () => draining,
    },
    options.mcp,
  );
  const openaiApi = options.openaiApi ?? {};
  if (openaiApi.enabled !== false) {
    const frontDoor = openaiApi.frontDoor;
    if (
      frontDoor !== undefined &&
      (typeof frontDoor.handle !== 'function' || typeof frontDoor.stream !== 'function')
    ) {
      throw new TypeError(
        'createServer: openaiApi.frontDoor must have handle and stream (createOrchestrator)',
      );
    }
    registerOpenAIRoutes(app, {
      runtime,
      frontDoor: frontDoor ?? null,
      logger,
      draining: () => draining,
      streams,
      slots,
      metrics,
      keepAliveMs: whole('keepAliveMs', options.keepAliveMs, 15_000),
      mapError: fastifyError,
      keepReading,
    });
  }

  const drainMs = whole('drainMs', options.drainMs, 10_000);
  let address: string;
  try {
    address = await app.listen({ host, port });
  } catch (err) {
    // Not started: the runtime stays the caller's.
    await app.close();
    throw err;
  }
  let closing: Promise<void> | null = null;
  return {
    app,
    url: address,
    close: () =>
      (closing ??= (async () => {
        draining = true;
        // Threads stop taking new turns now; the turns running end with the drain, and
        // their threads are resumed by the next server on the store (`recover()`).
        const workflowsClosed = options.workflows?.close();
        await drain(runtime, drainMs);
        await workflowsClosed;
        // Streams of ended steps have written their last event: a moment to send it, then
        // the connections of clients that stopped reading are cut.
        await streams.close(STREAM_GRACE_MS);
        closed = true;
        await app.close();
        await runtime.close();
      })()),
  };
}

/**
 * Waits up to `ms` for the runtime's running steps to end, then cancels the steps left (not
 * their runs: a run stays `running`, and takes new steps from the next server on the store).
 */
async function drain(runtime: Runtime, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  const running = (): number => runtime.system.list('step').length;
  while (running() > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
  const left = runtime.system.list('step');
  for (const entry of left) {
    entry.ctx?.cancel(new CancelledError('the server is shutting down'));
  }
  await Promise.all(left.map((entry) => runtime.system.whenUnregistered(entry.id)));
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
    case 'FST_ERR_BAD_URL':
      return new HttpError(400, 'INVALID_PARAMS', 'the URL is not validly percent-encoded');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      // No id is that long: what it names does not exist.
      return new HttpError(404, 'NOT_FOUND', 'no such resource: an id in the path is too long');
    default:
      if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
        // Only the statuses API.md lists; Fastify's others (406, 414, …) become 400.
        const status = ERROR_STATUSES.has(e.statusCode) ? e.statusCode : 400;
        return new HttpError(status, 'INVALID_PARAMS', e.message ?? 'bad request');
      }
      return err;
  }
}
