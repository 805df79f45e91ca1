/**
 * @module The `/v1` routes of API.md over the runtime's run operations: flows, runs, steps
 * and their SSE stream, facts, checkpoints, pools. Bodies are checked with the runtime's own
 * zod schemas first (a malformed body is 400 `INVALID_PARAMS`; what the runtime then refuses
 * keeps its code); a caller reaches only its own runs and their steps and facts (404
 * otherwise, as for an id that does not exist).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { isIdOf } from '../context/id-source.js';
import { NotFoundError } from '../errors/not-found-error.js';
import { QueueFullError } from '../errors/queue-full-error.js';
import type { Logger } from '../observability/logger.js';
import type { RunRecord, StepRecord } from '../store/records.js';
import { zodIssues } from '../tools/zod-issues.js';
import { factInputSchema } from '../runs/facts.js';
import { flowInputSchema, runInputSchema } from '../runs/flow-api.js';
import { stepSubmissionSchema, type SubmittedStep } from '../steps/step-submission.js';
import type { Runtime } from '../runtime/runtime.js';
import { mayUse, type Caller } from './auth.js';
import { HttpError } from './http-errors.js';
import { pathHash, pathId } from './path-ids.js';
import type { ServerMetrics } from './server-metrics.js';
import { serveSse, sseHeaders, whileOpen, type OpenStreams } from './sse.js';
import { takeStreamSlot, type StreamSlots } from './stream-slots.js';
import { checkpointView, factView, flowView, runView, stepView } from './views.js';

/** What the routes need. */
export interface RouteDeps {
  readonly runtime: Runtime;
  readonly metrics: ServerMetrics;
  /** `: keep-alive` interval of SSE streams, ms. */
  readonly keepAliveMs: number;
  /** The least time between two socket writes of one stream, ms (`ServerOptions.sseFlushMs`). */
  readonly sseFlushMs: number;
  /** Steps of one run submitted over HTTP and not ended, at most (429 `QUEUE_FULL` past it). */
  readonly maxStepsPerRun: number;
  /** Whether the server is draining: new steps are refused (503). */
  readonly draining: () => boolean;
  /** Open SSE streams, so a close can wait for them and then cut what is left. */
  readonly streams: OpenStreams;
  /** The bounds of open streams, in all and per user (429 past them). */
  readonly slots: StreamSlots;
  /** Where a stream's failure is logged. */
  readonly logger: Logger;
}

/** `body` checked with `schema`, or 400 `INVALID_PARAMS` listing each problem. */
export function checkBody<T>(schema: z.ZodType<T>, subject: string, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    throw new HttpError(400, 'INVALID_PARAMS', `the ${subject} body is not valid`, {
      issues: zodIssues(parsed.error),
    });
  }
  return parsed.data;
}

const factQuerySchema = z.strictObject({
  type: z.string().min(1).optional(),
  after: z
    .string()
    .refine((v) => isIdOf('fact', v), 'must be a fact id (fact_ and hex digits)')
    .optional(),
  limit: z.coerce.number().int().min(1).max(10_000).optional(),
});
const checkpointBodySchema = z.strictObject({ label: z.string().max(256).optional() });
/** The body of a POST that takes none: nothing, `null` or `{}` (unknown fields are 400). */
const noBodySchema = z.strictObject({});
const lastEventIdSchema = z.string().regex(/^\d{1,15}$/);
const streamQuerySchema = z.strictObject({ last_event_id: z.string().optional() });

/**
 * The `seq` a stream resumes after: the `Last-Event-ID` header (what an EventSource sends when
 * it reconnects), else the `last_event_id` query parameter (what a page can put in the URL
 * of a new EventSource, which cannot set headers); 0 with neither. 400 when not a seq.
 */
function resumeAfter(req: FastifyRequest): number {
  const query = checkBody(streamQuerySchema, 'stream query', req.query);
  const header = req.headers['last-event-id'];
  const given = (Array.isArray(header) ? header[0] : header) ?? query.last_event_id;
  if (given === undefined || given.trim() === '') return 0;
  if (!lastEventIdSchema.safeParse(given.trim()).success) {
    throw new HttpError(400, 'INVALID_PARAMS', 'Last-Event-ID must be a seq (a whole number)', {
      last_event_id: given.slice(0, 64),
    });
  }
  return Number(given.trim());
}

/** The caller of a request (set by the auth hook). */
export function callerOf(req: FastifyRequest): Caller {
  return (req as FastifyRequest & { caller: Caller }).caller;
}

type Params = Record<string, string>;

export function registerRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { runtime } = deps;
  const inFlight = new Map<string, number>();

  /** The run `runId` if the caller may use it; 404 otherwise. */
  async function ownRun(req: FastifyRequest, runId: string): Promise<RunRecord> {
    const run = await runtime.getRun(pathId('run', runId));
    if (!run || !mayUse(callerOf(req), run.user_id)) throw new NotFoundError('run', runId);
    return run;
  }

  /** The step `stepId` if the caller may use its run; 404 otherwise. */
  async function ownStep(req: FastifyRequest, stepId: string): Promise<StepRecord> {
    const step = await runtime.getStep(pathId('step', stepId));
    const run = step ? await runtime.getRun(step.run_id) : null;
    if (!step || !run || !mayUse(callerOf(req), run.user_id)) {
      throw new NotFoundError('step', stepId);
    }
    return step;
  }

  // A flow is its content (NERVE-4001: ast, tools, config), not its name: the same content
  // posted under another name is the flow stored before, with its own name, and `posted_name`
  // says the name posted was not kept.
  app.post('/v1/flows', async (req, reply) => {
    const posted = checkBody(flowInputSchema, 'flow', req.body);
    const { flow, created } = await runtime.createFlow(req.body);
    return reply.code(created ? 201 : 200).send({
      flow_id: flow.flow_id,
      hash: flow.hash,
      name: flow.name,
      ...(flow.name === posted.name ? {} : { posted_name: posted.name }),
    });
  });

  app.get('/v1/flows/:flow_id', async (req) => {
    const { flow_id } = req.params as Params;
    const flow = await runtime.getFlow(pathId('flow', flow_id));
    if (!flow) throw new NotFoundError('flow', flow_id ?? '');
    return flowView(flow);
  });

  // `::` is a literal colon in the router: the path is `/v1/flows:by-hash/{hash}`.
  app.get('/v1/flows::by-hash/:hash', async (req) => {
    const { hash } = req.params as Params;
    const flow = await runtime.getFlowByHash(pathHash(hash));
    if (!flow) throw new NotFoundError('flow', hash ?? '');
    return flowView(flow);
  });

  app.post('/v1/flows/:flow_id/runs', async (req, reply) => {
    const { flow_id } = req.params as Params;
    const body = req.body ?? {};
    const input = checkBody(runInputSchema, 'run', body);
    if (input.replay_of !== null) pathId('run', input.replay_of);
    const caller = callerOf(req);
    const run = await runtime.createRun(pathId('flow', flow_id), body, {
      userId: caller.userId,
      // `replay_of` names a run: the caller must be able to read it (404 otherwise).
      mayRead: (owner) => mayUse(caller, owner),
    });
    return reply.code(201).send(runView(run));
  });

  app.get('/v1/runs/:run_id', async (req) => {
    const { run_id } = req.params as Params;
    return runView(await ownRun(req, run_id ?? ''));
  });

  app.post('/v1/runs/:run_id/cancel', async (req, reply) => {
    const { run_id } = req.params as Params;
    checkBody(noBodySchema, 'cancel', req.body ?? {});
    await ownRun(req, run_id ?? '');
    const { status } = await runtime.cancelRun(run_id ?? '');
    return reply.code(202).send({ status });
  });

  app.post('/v1/runs/:run_id/complete', async (req) => {
    const { run_id } = req.params as Params;
    checkBody(noBodySchema, 'complete', req.body ?? {});
    await ownRun(req, run_id ?? '');
    return runView(await runtime.completeRun(run_id ?? ''));
  });

  app.post('/v1/runs/:run_id/steps', async (req, reply) => {
    const { run_id = '' } = req.params as Params;
    const request = checkBody(stepSubmissionSchema, 'step', req.body);
    const run = await ownRun(req, run_id);
    if (deps.draining()) {
      throw new HttpError(503, 'POOL_UNAVAILABLE', 'the server is draining: it takes no new steps');
    }
    const open = inFlight.get(run_id) ?? 0;
    if (open >= deps.maxStepsPerRun) {
      throw new QueueFullError(
        `run ${run_id} has ${open} steps running, its bound; submit more as they end`,
        { details: { run_id, max_steps: deps.maxStepsPerRun, retry_after_ms: 1_000 } },
      );
    }
    // The slot is taken before the submission is awaited: concurrent submissions all see it.
    inFlight.set(run_id, open + 1);
    const release = (): void => {
      const left = (inFlight.get(run_id) ?? 1) - 1;
      if (left > 0) inFlight.set(run_id, left);
      else inFlight.delete(run_id);
    };
    let submitted: SubmittedStep;
    try {
      const traceparent = req.headers['traceparent'];
      // The body parsed and the run read above are the submission's: neither again.
      submitted = await runtime.submitReadStep(run, request, {
        traceparent: typeof traceparent === 'string' ? traceparent : undefined,
      });
    } catch (err) {
      release();
      throw err;
    }
    if (submitted.created) {
      const { step_id } = submitted;
      void submitted.done.then(async (status) => {
        release();
        // `null`: the record could not be read when the step ended; read it once more.
        const ended = status ?? (await runtime.getStep(step_id).catch(() => null))?.status;
        deps.metrics.steps.inc({ type: request.type, status: ended ?? 'unknown' });
      });
    } else {
      release();
    }
    return reply
      .code(submitted.created ? 201 : 200)
      .send({ step_id: submitted.step_id, status: submitted.status });
  });

  app.get('/v1/steps/:step_id', async (req) => {
    const { step_id } = req.params as Params;
    return stepView(await ownStep(req, step_id ?? ''));
  });

  app.post('/v1/steps/:step_id/cancel', async (req, reply) => {
    const { step_id } = req.params as Params;
    checkBody(noBodySchema, 'cancel', req.body ?? {});
    await ownStep(req, step_id ?? '');
    const { status } = await runtime.cancelStep(step_id ?? '');
    return reply.code(202).send({ status });
  });

  app.get('/v1/steps/:step_id/stream', async (req, reply: FastifyReply) => {
    const { step_id = '' } = req.params as Params;
    await ownStep(req, step_id);
    const afterSeq = resumeAfter(req);
    const correlation = {
      'x-correlation-id': String(reply.getHeader('x-correlation-id') ?? ''),
      // API.md's `Connection: keep-alive`, unless the client asked to close (setting the
      // header would otherwise make Node keep a connection the client wants closed).
      ...(/\bclose\b/i.test(req.headers.connection ?? '') ? { connection: 'close' } : {}),
    };
    // HEAD (Fastify answers it with the GET handler): the headers of the stream, no stream.
    if (req.method === 'HEAD') {
      void reply.headers(sseHeaders(correlation)).code(200).send();
      return reply;
    }
    const release = takeStreamSlot(deps, callerOf(req));
    reply.hijack();
    const open = whileOpen(reply.raw);
    const done = serveSse(
      reply.raw,
      (id, o) => runtime.followStepPages(id, o),
      step_id,
      afterSeq,
      open.signal,
      {
        keepAliveMs: deps.keepAliveMs,
        flushMs: deps.sseFlushMs,
        headers: correlation,
        onDrop: (type) => {
          deps.metrics.dropped.inc({ type });
        },
        onError: (err) => {
          deps.logger.error({ err, step_id }, 'a step stream failed');
        },
      },
    ).finally(() => {
      open.stop();
      release();
    });
    deps.streams.add(reply.raw, done);
    await done;
  });

  app.get('/v1/runs/:run_id/facts', async (req) => {
    const { run_id = '' } = req.params as Params;
    const query = checkBody(factQuerySchema, 'facts query', req.query);
    await ownRun(req, run_id);
    const facts = await runtime.listFacts(run_id, {
      ...(query.type === undefined ? {} : { type: query.type }),
      ...(query.after === undefined ? {} : { after: query.after }),
      ...(query.limit === undefined ? {} : { limit: query.limit }),
    });
    return facts.map(factView);
  });

  app.post('/v1/runs/:run_id/facts', async (req, reply) => {
    const { run_id = '' } = req.params as Params;
    checkBody(factInputSchema, 'fact', req.body);
    await ownRun(req, run_id);
    return reply.code(201).send(factView(await runtime.appendFact(run_id, req.body)));
  });

  app.post('/v1/runs/:run_id/checkpoint', async (req, reply) => {
    const { run_id = '' } = req.params as Params;
    const body = checkBody(checkpointBodySchema, 'checkpoint', req.body ?? {});
    await ownRun(req, run_id);
    const checkpoint = await runtime.checkpoint(
      run_id,
      body.label === undefined ? {} : { label: body.label },
    );
    return reply.code(201).send(checkpointView(checkpoint));
  });

  app.get('/v1/runs/:run_id/checkpoints', async (req) => {
    const { run_id = '' } = req.params as Params;
    await ownRun(req, run_id);
    return (await runtime.listCheckpoints(run_id)).map(checkpointView);
  });

  app.get('/v1/pools', () => runtime.listPools());

  app.get('/v1/pools/:pool_id', (req) => {
    const { pool_id = '' } = req.params as Params;
    const pool = runtime.getPool(pool_id);
    if (!pool) throw new NotFoundError('pool', pool_id);
    return pool;
  });

  // No provisioner can be configured yet: 501 for every caller that may write (API.md).
  app.post('/v1/pools/provision', () => {
    throw new HttpError(501, 'NOT_IMPLEMENTED', 'no provisioner is configured');
  });
}
