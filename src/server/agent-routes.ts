/**
 * @module Durable agents over HTTP (API.md, "Durable agents"; issue 46):
 * `POST /v1/agents/{name}/{key}/messages`, `GET /v1/agents/{name}/{key}`, its `/stream`
 * (`agent-stream-route.ts`), `GET /v1/agents` and `POST /v1/events`. Actors and event waits
 * are the caller's own: its `user_id` is part of every actor's address, so two users' same
 * name and key are two actors, and an event wakes only the caller's waits. An admin key reads
 * any user's actors (`?user_id=`; the listing, every user's without it). Every refusal stores
 * nothing: an unknown agent (404), a bad key (400), a message failing the agent's input (422),
 * a full mailbox (429 `QUEUE_FULL`), a busy actor under `reject` (409).
 */
import type { WakeRecord } from '../store/actor-records.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { actorIdAt, checkAddress, type ActorAddress } from '../durable/actor-address.js';
import { viewActor, type ActorView } from '../durable/actor-view.js';
import { NotFoundError } from '../errors/not-found-error.js';
import type { Logger } from '../observability/logger.js';
import type { Runtime } from '../runtime/runtime.js';
import type { ActorRecord, ActorStatus } from '../store/actor-records.js';
import {
  AGENT_STATUSES,
  agentView,
  receiptView,
  signalView,
  type AgentStatus,
} from './agent-views.js';
import { agentResumeAt, serveAgentStream } from './agent-stream-route.js';
import { mayUse, type Caller } from './auth.js';
import { HttpError } from './http-errors.js';
import { callerOf, checkBody } from './routes.js';
import type { ServerMetrics } from './server-metrics.js';
import type { OpenStreams } from './sse.js';
import type { StreamSlots } from './stream-slots.js';

/** What the agents' routes need. */
export interface AgentRouteDeps {
  readonly runtime: Runtime;
  /** `: keep-alive` interval of SSE streams, ms. */
  readonly keepAliveMs: number;
  /** The least time between two socket writes of one stream, ms. */
  readonly sseFlushMs: number;
  readonly logger: Logger;
  /** Whether the server drains: messages and events are refused (503). */
  readonly draining: () => boolean;
  readonly streams: OpenStreams;
  readonly slots: StreamSlots;
  readonly metrics: ServerMetrics;
}

/** The largest event `data` `POST /v1/events` takes, as JSON bytes (413 past it). */
export const MAX_EVENT_BYTES = 64 * 1024;
/** How many actors `GET /v1/agents` answers without a `limit`; the most it takes. */
export const DEFAULT_AGENT_LIMIT = 50;
export const MAX_AGENT_LIMIT = 500;

/** Where each status on the wire is in the store's index (see docs/http-api.md). */
const STORED: Readonly<Record<AgentStatus, ActorStatus>> = {
  asleep: 'idle',
  awake: 'idle',
  busy: 'live',
  waiting: 'waiting',
};

const userIdSchema = z.string().min(1).max(256);
/** The body of `POST /v1/agents/{name}/{key}/messages` (`message` required, any JSON). */
export const messageBodySchema = z.strictObject({
  message: z.unknown(),
  client_token: z.string().min(1).max(256).optional(),
});
/** The body of `POST /v1/events` (`data` absent: `null`). */
export const eventBodySchema = z.strictObject({ name: z.string(), data: z.unknown().optional() });
const viewQuerySchema = z.strictObject({ user_id: userIdSchema.optional() });
const streamQuerySchema = z.strictObject({
  user_id: userIdSchema.optional(),
  last_event_id: z.string().optional(),
});
const listQuerySchema = z.strictObject({
  name: z.string().min(1).max(256).optional(),
  status: z
    .string()
    .transform((s) => s.split(',').map((x) => x.trim()))
    .pipe(z.array(z.enum(AGENT_STATUSES)).min(1))
    .optional(),
  key_prefix: z.string().min(1).max(128).optional(),
  before: z
    .string()
    .regex(/^actor_[0-9a-f]{32}$/, 'the `next` of the page before')
    .optional(),
  limit: z.coerce.number().int().min(1).max(MAX_AGENT_LIMIT).default(DEFAULT_AGENT_LIMIT),
  user_id: userIdSchema.optional(),
});
/** The body of a POST that takes none. */
const noBodySchema = z.strictObject({});

type Params = Record<string, string>;

/**
 * Whose actors a request reads: the caller's own, or — for an admin key — the user `asked`
 * names. A key without `admin` naming another user is 403.
 */
export function readerOf(caller: Caller, asked: string | undefined): string {
  if (asked === undefined || asked === caller.userId) return caller.userId;
  if (!caller.permissions.has('admin')) {
    throw new HttpError(403, 'FORBIDDEN', "only an admin key reads another user's agents", {
      param: 'user_id',
    });
  }
  return asked;
}

/** Registers the routes of the module on `app`. */
export function registerAgentRoutes(app: FastifyInstance, deps: AgentRouteDeps): void {
  const { runtime } = deps;
  const durable = runtime.durable;

  /** The address of the path's actor, for user `userId`: 404 unknown agent, 400 bad key. */
  const addressOf = (req: FastifyRequest, userId: string): ActorAddress => {
    const { name = '', key = '' } = req.params as Params;
    durable.definition(name);
    return checkAddress({ name, key, userId });
  };

  const refuseWhileDraining = (what: string): void => {
    if (deps.draining()) {
      throw new HttpError(
        503,
        'POOL_UNAVAILABLE',
        `the server is draining: it takes no new ${what}`,
      );
    }
  };

  app.post('/v1/agents/:name/:key/messages', async (req, reply) => {
    const address = addressOf(req, callerOf(req).userId);
    // `message` is required (zod: a missing key is an issue at its path).
    const body = checkBody(messageBodySchema, 'message', req.body);
    refuseWhileDraining('messages');
    const receipt = await durable.send(
      address,
      body.message,
      body.client_token === undefined ? {} : { clientToken: body.client_token },
    );
    return reply.code(receipt.created ? 202 : 200).send(receiptView(receipt));
  });

  app.get('/v1/agents/:name/:key', async (req) => {
    const q = checkBody(viewQuerySchema, 'agent query', req.query);
    const userId = readerOf(callerOf(req), q.user_id);
    const address = addressOf(req, userId);
    const view = await durable.view(address);
    if (!view) throw new NotFoundError('actor', `${address.name}/${address.key}`);
    return agentView(view, userId);
  });

  // Not in API.md (docs/http-api.md, "What the server adds"): what the actor waits for — its
  // timers, event waits and reminders — for the trace UI's and the CLI's view of it.
  app.get('/v1/agents/:name/:key/wakes', async (req) => {
    const q = checkBody(viewQuerySchema, 'agent query', req.query);
    const address = addressOf(req, readerOf(callerOf(req), q.user_id));
    const actorId = actorIdAt(address);
    if (!(await durable.actors.getActor(actorId))) {
      throw new NotFoundError('actor', `${address.name}/${address.key}`);
    }
    return { wakes: (await durable.actors.actorWakes(actorId)).map(wakeView) };
  });

  app.get('/v1/agents/:name/:key/stream', async (req, reply: FastifyReply) => {
    const q = checkBody(streamQuerySchema, 'stream query', req.query);
    const caller = callerOf(req);
    const address = addressOf(req, readerOf(caller, q.user_id));
    const after = agentResumeAt(req, q.last_event_id);
    const actorId = actorIdAt(address);
    const actor = await durable.actors.getActor(actorId);
    if (!actor) throw new NotFoundError('actor', `${address.name}/${address.key}`);
    return serveAgentStream(
      deps,
      caller,
      { actorId, runId: actor.run_id },
      after,
      reply,
      req.method,
    );
  });

  app.get('/v1/agents', async (req) => {
    const q = checkBody(listQuerySchema, 'agents query', req.query);
    const caller = callerOf(req);
    const admin = caller.permissions.has('admin');
    // An admin reads every user's actors unless it names one.
    const userId = q.user_id === undefined && admin ? undefined : readerOf(caller, q.user_id);
    if (q.before !== undefined) {
      const from = await durable.actors.getActor(q.before);
      // The page goes on after an actor the caller may read, as reading it would.
      if (!from || !mayUse(caller, from.user_id)) throw new NotFoundError('actor', q.before);
    }
    const wanted = q.status === undefined ? null : new Set<AgentStatus>(q.status);
    const records = await durable.actors.pageActors({
      ...(userId === undefined ? {} : { userId }),
      ...(q.name === undefined ? {} : { name: q.name }),
      ...(q.key_prefix === undefined ? {} : { keyPrefix: q.key_prefix }),
      ...(wanted === null ? {} : { status: [...new Set([...wanted].map((s) => STORED[s]))] }),
      ...(q.before === undefined ? {} : { before: q.before }),
      limit: q.limit,
    });
    const agents: Record<string, unknown>[] = [];
    for (const record of records) {
      const view = await currentView(runtime, record);
      // Shown as it is now: one whose status changed since the index was read, or that is
      // awake here when asleep was asked (both are idle in the store), is left out.
      if (view && (wanted === null || wanted.has(view.status))) {
        agents.push(agentView(view, record.user_id));
      }
    }
    const last = records.at(-1);
    return { agents, next: records.length === q.limit && last ? last.actor_id : null };
  });

  app.post('/v1/events', async (req, reply) => {
    const body = checkBody(eventBodySchema, 'event', req.body);
    const data = body.data ?? null;
    const bytes = Buffer.byteLength(JSON.stringify(data));
    if (bytes > MAX_EVENT_BYTES) {
      throw new HttpError(
        413,
        'PAYLOAD_TOO_LARGE',
        `an event's data is ${bytes} bytes of JSON; the most is ${MAX_EVENT_BYTES}`,
        { param: 'data', bytes, limit_bytes: MAX_EVENT_BYTES },
      );
    }
    refuseWhileDraining('events');
    const result = await durable.signal(callerOf(req).userId, body.name, data);
    return reply.code(202).send(signalView(result));
  });

  app.post('/v1/agents/:name/:key/cancel', async (req, reply) => {
    checkBody(noBodySchema, 'cancel', req.body ?? {});
    const address = addressOf(req, callerOf(req).userId);
    const cancelled = await durable.cancel(address);
    return reply.code(202).send({ cancelled });
  });
}

/** The actor of `record` as it is now (`null` if gone), whether its agent is registered or not. */
async function currentView(runtime: Runtime, record: ActorRecord): Promise<ActorView | null> {
  const durable = runtime.durable;
  if (durable.list().some((d) => d.name === record.name)) {
    return durable.view({ name: record.name, key: record.key, userId: record.user_id });
  }
  return viewActor(durable.actors, record.actor_id, undefined);
}

/**
 * A wake as the API shows it, times as ISO strings: `kind` (`sleep`, `event`, `reminder`),
 * `status`, `due_at`, the `event` and its `match`, a reminder's `name`, `every_ms` and
 * `message`, the waiting message's `step_id`, `fired_at`, `timed_out`.
 */
function wakeView(w: WakeRecord): Record<string, unknown> {
  const iso = (ms: number | null): string | null =>
    ms === null ? null : new Date(ms).toISOString();
  return {
    wake_id: w.wake_id,
    kind: w.kind,
    status: w.status,
    due_at: iso(w.due_at),
    event: w.event,
    name: w.name,
    match: w.match,
    every_ms: w.every_ms,
    step_id: w.step_id,
    message: w.kind === 'reminder' ? w.message : null,
    fired_at: iso(w.fired_at),
    timed_out: w.timed_out,
  };
}
