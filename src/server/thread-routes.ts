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
import { followThread, parseThreadCursor, type ThreadCursor } from '../workflows/thread-stream.js';
import { threadTriggerSchema } from '../workflows/workflow-definition.js';
import type { WorkflowEngine } from '../workflows/workflow-engine.js';
import { mayUse } from './auth.js';
import { HttpError } from './http-errors.js';
import { pathId } from './path-ids.js';
import { callerOf, checkBody, takeStreamSlot } from './routes.js';
import type { ServerMetrics } from './server-metrics.js';
import type { StreamSlots } from './stream-slots.js';
import { drained, sseData, sseHeaders, type OpenStreams, type SseEnd } from './sse.js';

/** What the thread routes need. */
export interface ThreadRouteDeps {
  readonly engine: WorkflowEngine;
  /** `: keep-alive` interval of SSE streams, ms. */
  readonly keepAliveMs: number;
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

/** One SSE frame of a thread's stream. */
function threadFrame(id: string, event: string, data: unknown): string {
  return `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
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
    const threads = await engine.threads({
      ...(q.workflow === undefined ? {} : { workflow: q.workflow }),
      ...(q.status === undefined ? {} : { status: q.status }),
      owner: (userId) => mayUse(caller, userId),
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
    const headers = sseHeaders({
      'x-correlation-id': String(reply.getHeader('x-correlation-id') ?? ''),
    });
    if (req.method === 'HEAD') {
      void reply.headers(headers).code(200).send();
      return reply;
    }
    const release = takeStreamSlot(deps, callerOf(req));
    reply.hijack();
    const res = reply.raw;
    const gone = new AbortController();
    const onClose = (): void => {
      gone.abort();
    };
    res.once('close', onClose);
    res.writeHead(200, headers);
    const keepAlive = setInterval(() => {
      res.write(': keep-alive\n\n');
    }, deps.keepAliveMs);
    keepAlive.unref();
    const done = (async (): Promise<SseEnd> => {
      try {
        for await (const f of followThread(engine, id, after, gone.signal)) {
          const frame =
            f.kind === 'turn_event'
              ? threadFrame(f.id, f.event.type, {
                  ...sseData(f.event),
                  turn: f.turn,
                  role: f.role,
                })
              : threadFrame(f.id, 'thread_end', threadBody(f.thread));
          if (!res.write(frame) && !(await drained(res, gone.signal))) return 'disconnected';
        }
        return gone.signal.aborted ? 'disconnected' : 'ended';
      } catch (err) {
        req.log.error({ err, thread: id }, 'a thread stream failed');
        return 'failed';
      } finally {
        clearInterval(keepAlive);
        res.off('close', onClose);
        res.end();
        release();
      }
    })();
    deps.streams.add(res, done);
    await done;
  });
}
