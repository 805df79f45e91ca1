/**
 * @module `/mcp` on `axon serve` (docs/mcp.md): the MCP Streamable HTTP transport of the MCP
 * SDK, one {@link McpSession} per MCP session (`Mcp-Session-Id`), behind the server's API
 * keys. Without a valid key it is 401 like every route (with `WWW-Authenticate: Bearer`);
 * with one, the MCP methods check its permissions themselves (`tools/list` needs `read`,
 * `tools/call` `write`) and answer a JSON-RPC error when it lacks them. A session belongs to
 * the user that opened it: another user's session id is 404, as an unknown one. Sessions
 * are bounded (`maxSessions`, 429 past it), closed after `sessionIdleMs` without a request,
 * and closed with the server.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '../../observability/logger.js';
import { wireBudgetsSchema } from '../../runs/request-bodies.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { WireBudgets } from '../../store/records.js';
import { PERMISSIONS, type Caller, type Permission } from '../auth.js';
import { McpCatalog } from './mcp-catalog.js';
import { MCP_REFUSED } from './mcp-refusal.js';
import { McpSession } from './mcp-session.js';

/** The path of the MCP endpoint. */
export const MCP_PATH = '/mcp';

/** `/mcp`'s options (`ServerOptions.mcp`; `mcp:` in axon.yaml). */
export interface McpOptions {
  /** Serve `/mcp`; default true. False: the path has no route (404). */
  readonly enabled?: boolean;
  /** A session with no request for this long is closed, ms; default 1 800 000 (30 min). */
  readonly sessionIdleMs?: number;
  /** Sessions open at once, every user's, at most; default 256 (429 past it). */
  readonly maxSessions?: number;
  /** The budgets of each session's run (API.md's run `budgets`); default none. */
  readonly budgets?: WireBudgets;
}

/** What the route needs from the server. */
export interface McpRouteDeps {
  readonly runtime: Runtime;
  readonly logger: Logger;
  /** The version `initialize` reports. */
  readonly version: string;
  /** Interval of the SSE streams' keep-alive comments, ms. */
  readonly keepAliveMs: number;
  /** Calls of one session in flight at most (the server's `maxStepsPerRun`). */
  readonly maxCalls: number;
  /** True while the server drains: calls are refused. */
  readonly draining: () => boolean;
}

const DEFAULTS = { sessionIdleMs: 1_800_000, maxSessions: 256 } as const;

/** One session over HTTP: its MCP session, transport, owner and use. */
interface HttpSession {
  readonly session: McpSession;
  readonly transport: StreamableHTTPServerTransport;
  readonly userId: string;
  /** Requests of it under way (an open GET stream is one). */
  active: number;
  /** When its last request began or ended, ms. */
  seen: number;
}

/** `options` checked: a `RangeError` naming the option that is wrong. */
function checked(options: McpOptions): Required<Omit<McpOptions, 'budgets'>> & {
  readonly budgets: WireBudgets | undefined;
} {
  const whole = (name: string, v: number | undefined, fallback: number): number => {
    const n = v ?? fallback;
    if (!(Number.isInteger(n) && n > 0)) {
      throw new RangeError(
        `createServer: mcp.${name} must be a whole number > 0, got ${String(n)}`,
      );
    }
    return n;
  };
  if (options.enabled !== undefined && typeof options.enabled !== 'boolean') {
    throw new RangeError('createServer: mcp.enabled must be a boolean');
  }
  let budgets: WireBudgets | undefined;
  if (options.budgets !== undefined) {
    const parsed = wireBudgetsSchema.safeParse(options.budgets);
    if (!parsed.success) {
      throw new RangeError(`createServer: mcp.budgets is not valid: ${parsed.error.message}`);
    }
    budgets = parsed.data as WireBudgets;
  }
  return {
    enabled: options.enabled ?? true,
    sessionIdleMs: whole('sessionIdleMs', options.sessionIdleMs, DEFAULTS.sessionIdleMs),
    maxSessions: whole('maxSessions', options.maxSessions, DEFAULTS.maxSessions),
    budgets,
  };
}

/** A JSON-RPC error answered by the route itself (no session to answer it). */
function rpcError(
  reply: FastifyReply,
  status: number,
  code: number,
  message: string,
  data?: Record<string, unknown>,
): FastifyReply {
  return reply
    .code(status)
    .header('content-type', 'application/json')
    .send({ jsonrpc: '2.0', error: { code, message, ...(data ? { data } : {}) }, id: null });
}

/**
 * Adds `/mcp` to `app` (unless `options.enabled` is false) and closes its sessions when the
 * app closes. Throws `RangeError` for an option out of range.
 */
export function registerMcpRoute(
  app: FastifyInstance,
  deps: McpRouteDeps,
  options: McpOptions = {},
): void {
  const { enabled, sessionIdleMs, maxSessions, budgets } = checked(options);
  if (!enabled) return;
  const { runtime, logger } = deps;
  const catalog = new McpCatalog(runtime, logger);
  const sessions = new Map<string, HttpSession>();
  /** Sessions being opened (their `initialize` under way), counted against the bound. */
  let opening = 0;

  const close = (id: string): Promise<void> => {
    const entry = sessions.get(id);
    if (!entry) return Promise.resolve();
    sessions.delete(id);
    return entry.session.close();
  };
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [id, s] of sessions) {
        if (s.active === 0 && now - s.seen >= sessionIdleMs) void close(id);
      }
    },
    Math.min(Math.max(Math.floor(sessionIdleMs / 4), 10), 60_000),
  );
  sweep.unref();
  app.addHook('preClose', async () => {
    clearInterval(sweep);
    await Promise.all([...sessions.keys()].map(close));
  });

  /** A new session of `caller`, its transport not yet initialized. */
  const open = async (caller: Caller): Promise<HttpSession> => {
    const session = new McpSession({
      runtime,
      catalog,
      userId: caller.userId,
      budgets,
      maxCalls: deps.maxCalls,
      draining: deps.draining,
      permissions: permissionsOf,
      version: deps.version,
      logger,
    });
    const entry: HttpSession = {
      session,
      userId: caller.userId,
      active: 0,
      seen: Date.now(),
      transport: new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        keepAliveMs: deps.keepAliveMs,
        onsessioninitialized: (id) => {
          sessions.set(id, entry);
        },
        // A DELETE from the client.
        onsessionclosed: (id) => close(id),
      }),
    };
    await session.server.connect(entry.transport);
    return entry;
  };

  app.route({
    method: ['GET', 'POST', 'DELETE'],
    url: MCP_PATH,
    // HEAD would run the handler, which writes its own response.
    exposeHeadRoute: false,
    onSend: async (_req, reply, payload) => {
      if (reply.statusCode === 401) void reply.header('www-authenticate', 'Bearer realm="axon"');
      return payload;
    },
    handler: async (req, reply) => {
      const caller = (req as FastifyRequest & { caller: Caller }).caller;
      const given = req.headers['mcp-session-id'];
      let entry: HttpSession;
      if (given !== undefined) {
        const found = typeof given === 'string' ? sessions.get(given) : undefined;
        // Another user's session is not there, for this caller.
        if (!found || found.userId !== caller.userId) {
          return rpcError(reply, 404, -32001, 'Session not found');
        }
        entry = found;
      } else if (req.method === 'POST' && isInitializeRequest(req.body)) {
        if (sessions.size + opening >= maxSessions) {
          return rpcError(
            reply.header('retry-after', '1'),
            429,
            MCP_REFUSED,
            `${maxSessions} MCP sessions are open, the bound: close one (DELETE /mcp) or wait`,
            { code: 'RATE_LIMITED', limit: 'mcp_sessions', max: maxSessions },
          );
        }
        opening += 1;
        try {
          entry = await open(caller);
        } finally {
          opening -= 1;
        }
      } else {
        return rpcError(
          reply,
          400,
          -32000,
          'Bad Request: Mcp-Session-Id header is required (initialize a session first)',
        );
      }
      entry.active += 1;
      entry.seen = Date.now();
      const raw = req.raw as IncomingMessage & { auth?: AuthInfo };
      raw.auth = { token: '', clientId: caller.userId, scopes: [...caller.permissions] };
      reply.hijack();
      const correlation = reply.getHeader('x-correlation-id');
      if (typeof correlation === 'string') reply.raw.setHeader('x-correlation-id', correlation);
      reply.raw.once('close', () => {
        entry.active -= 1;
        entry.seen = Date.now();
      });
      try {
        await entry.transport.handleRequest(raw, reply.raw, req.body);
      } catch (err) {
        logger.error({ err }, 'MCP: a request failed');
        if (!reply.raw.headersSent) reply.raw.writeHead(500).end();
      }
      // An initialize the transport refused opened no session: nothing to keep.
      if (entry.transport.sessionId === undefined) await entry.session.close();
      return reply;
    },
  });
}

/** The permissions of a request, from the key the route put in its `auth`. */
function permissionsOf(authInfo: AuthInfo | undefined): ReadonlySet<Permission> {
  const known = new Set<string>(PERMISSIONS);
  return new Set((authInfo?.scopes ?? []).filter((s): s is Permission => known.has(s)));
}
