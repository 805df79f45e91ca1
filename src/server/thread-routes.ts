/**
 * @module Workflows and threads over HTTP (issue 21), in API.md's style:
 * `GET /v1/workflows`, `GET /v1/workflows/{name}`, `POST /v1/workflows/{name}/threads`,
 * `GET /v1/threads[?workflow=&status=&limit=]`, `GET /v1/threads/{id}`,
 * `GET /v1/threads/{id}/stream` (SSE: the turns' step events in order, ids `<turn>.<seq>`,
 * resumed after `Last-Event-ID`) and `POST /v1/threads/{id}/kill`. Documented in
 * docs/http-api.md, "Workflows and threads".
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { NotFoundError } from '../errors/not-found-error.js';
import {
  THREAD_STATUSES,
  type ThreadStatus,
  type ThreadView,
} from '../workflows/thread-records.js';
import {
  followThread,
  parseThreadCursor,
  type ThreadCursor,
  type ThreadFrame,
} from '../workflows/thread-stream.js';
import { threadTriggerSchema } from '../workflows/workflow-definition.js';
import type { WorkflowEngine } from '../workflows/workflow-engine.js';
import { isIdOf } from '../context/id-source.js';
import { mayUse } from './auth.js';
import { HttpError } from './http-errors.js';
import { pathId } from './path-ids.js';
import { callerOf, checkBody } from './routes.js';
import type { ServerMetrics } from './server-metrics.js';
import { takeStreamSlot, type StreamSlots } from './stream-slots.js';
import type { Logger } from '../observability/logger.js';
import {
  sseData,
  sseHeaders,
  whileOpen,
  writeSse,
  type OpenStreams,
  type SseSource,
} from './sse.js';

/** What the thread routes need. */
export interface ThreadRouteDeps {
  readonly engine: WorkflowEngine;
  /** `: keep-alive` interval of SSE streams, ms. */
  readonly keepAliveMs: number;
  /** The least time between two socket writes of one stream, ms (`ServerOptions.sseFlushMs`). */
  readonly sseFlushMs: number;
  /** Where a stream's failure is logged. */
  readonly logger: Logger;
  /** Whether the server is draining: new threads are refused (503). */
  readonly draining: () => boolean;
  readonly streams: OpenStreams;
  /** The bounds of open streams, in all and per user (429 past them). */
  readonly slots: StreamSlots;
  readonly metrics: ServerMetrics;
}

const listQuerySchema = z.strictObject({
  workflow: z.string().min(1).optional(),
  status: z
    .string()
    .transform((s) => s.split(','))
    .pipe(z.array(z.enum(THREAD_STATUSES as [ThreadStatus, ...ThreadStatus[]])))
    .optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
  before: z
    .string()
    .refine((id) => isIdOf('run', id), 'a thread id')
    .optional(),
});
const streamQuerySchema = z.strictObject({ last_event_id: z.string().optional() });

type Params = Record<string, string>;

function resumeAt(req: FastifyRequest): ThreadCursor {
  const query = checkBody(streamQuerySchema, 'stream query', req.query);
  const header = req.headers['last-event-id'];
  const given = ((Array.isArray(header) ? header[0] : header) ?? query.last_event_id)?.trim();
  if (given === undefined || given === '') return { turn: 0, seq: 0 };
  const cursor = parseThreadCursor(given);
  if (!cursor) {
    throw new HttpError(
      400,
      'INVALID_PARAMS',
      'Last-Event-ID of a thread stream is <turn>.<seq> (two whole numbers)',
      { last_event_id: given.slice(0, 64) },
    );
  }
  return cursor;
}

/** One SSE frame of a thread's stream: a turn's event (with its turn and role), or its end. */
function threadFrame(f: ThreadFrame): string {
  const [event, data] =
    f.kind === 'turn_event'
      ? [f.event.type, { ...sseData(f.event), turn: f.turn, role: f.role }]
      : ['thread_end', threadBody(f.thread)];
  return `id: ${f.id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** A thread's frames after `after` as the pages the stream writer reads (a frame a page). */
function threadSource(
  engine: WorkflowEngine,
  id: string,
  after: ThreadCursor,
  signal: AbortSignal,
): SseSource<ThreadFrame> {
  return {
    pages: (async function* () {
      for await (const f of followThread(engine, id, after, signal)) yield [f];
    })(),
    frame: threadFrame,
    type: (f) => (f.kind === 'turn_event' ? f.event.type : 'thread_end'),
    last: (f) => f.kind === 'thread_end',
  };
}

/** A thread as the API answers it: its owner is not shown (as a Run's is not). */
function threadBody(t: ThreadView): Omit<ThreadView, 'user_id'> {
  const { user_id: _owner, ...body } = t;
  return body;
}

/** Registers the routes of the module on `app`. */
export function registerThreadRoutes(app: FastifyInstance, deps: ThreadRouteDeps): void {
  const { engine } = deps;

  /** Thread `id` if the caller may see it; 404 otherwise. */
  async function ownThread(req: FastifyRequest, id: string): Promise<ThreadView> {
    // A thread's id is its run's.
    const t = await engine.thread(pathId('run', id));
    if (!t || !mayUse(callerOf(req), t.user_id)) throw new NotFoundError('thread', id);
    return t;
  }

  app.get('/v1/workflows', () => engine.list());
  app.get('/v1/workflows/:name', (req) => engine.get((req.params as Params)['name'] ?? ''));

  app.post('/v1/workflows/:name/threads', async (req, reply) => {
    const name = (req.params as Params)['name'] ?? '';
    engine.get(name);
    const body = checkBody(threadTriggerSchema, 'thread', req.body);
    if (deps.draining()) {
      throw new HttpError(503, 'POOL_UNAVAILABLE', 'the server is draining: no new threads');
    }
    const t = await engine.trigger(name, body.input, { userId: callerOf(req).userId });
    return reply.code(201).send(threadBody(t));
  });

  app.get('/v1/threads', async (req) => {
    const q = checkBody(listQuerySchema, 'threads query', req.query);
    const caller = callerOf(req);
    // The page goes on after a thread the caller may read, as reading it would.
    if (q.before !== undefined) await ownThread(req, q.before);
    const threads = await engine.threads({
      ...(q.before === undefined ? {} : { before: q.before }),
      ...(q.workflow === undefined ? {} : { workflow: q.workflow }),
      ...(q.status === undefined ? {} : { status: q.status }),
      ...(caller.permissions.has('admin') ? {} : { userId: caller.userId }),
      limit: q.limit,
    });
    return threads.map(threadBody);
  });

  app.get('/v1/threads/:id', async (req) =>
    threadBody(await ownThread(req, (req.params as Params)['id'] ?? '')),
  );

  app.post('/v1/threads/:id/kill', async (req) => {
    const id = (req.params as Params)['id'] ?? '';
    await ownThread(req, id);
    return threadBody(await engine.kill(id));
  });

  app.get('/v1/threads/:id/stream', async (req, reply: FastifyReply) => {
    const id = (req.params as Params)['id'] ?? '';
    await ownThread(req, id);
    const after = resumeAt(req);
    if (req.method === 'HEAD') {
      const headers = sseHeaders({
        'x-correlation-id': String(reply.getHeader('x-correlation-id') ?? ''),
      });
      void reply.headers(headers).code(200).send();
      return reply;
    }
    const release = takeStreamSlot(deps, callerOf(req));
    reply.hijack();
    const res = reply.raw;
    const open = whileOpen(res);
    const done = writeSse(res, threadSource(engine, id, after, open.signal), open.signal, {
      keepAliveMs: deps.keepAliveMs,
      flushMs: deps.sseFlushMs,
      headers: { 'x-correlation-id': String(reply.getHeader('x-correlation-id') ?? '') },
      onDrop: (type) => {
        deps.metrics.dropped.inc({ type });
      },
      onError: (err) => {
        deps.logger.error({ err, thread: id }, 'a thread stream failed');
      },
    }).finally(() => {
      open.stop();
      release();
    });
    deps.streams.add(res, done);
    await done;
  });
}
