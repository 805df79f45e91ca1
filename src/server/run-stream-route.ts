/**
 * @module `GET /v1/runs/{run_id}/stream`: a run's changes as Server-Sent Events, for pages
 * following a whole run (the trace UI's timeline) with one connection rather than one per
 * step or a poll. It opens with the run (`run`) and each of its steps (`step`, in creation
 * order) as `GET /v1/runs/{run_id}` and `GET /v1/runs/{run_id}/steps` answer them, then sends
 * a step again each time its body changes (a new step, a status, a start, an end, usage,
 * its first token) and the run each time its body does; it closes once the run has ended and
 * none of its steps is live. The server reads the run from its store every
 * {@link RUN_WATCH_MS} for it — the reader polls nothing. A reconnect starts again with the
 * whole state (frames carry ids, but `Last-Event-ID` is not needed to resume).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { NotFoundError } from '../errors/not-found-error.js';
import type { Logger } from '../observability/logger.js';
import type { Runtime } from '../runtime/runtime.js';
import { STEP_ENDED } from '../store/records.js';
import { mayUse } from './auth.js';
import { pathId } from './path-ids.js';
import { callerOf } from './routes.js';
import type { ServerMetrics } from './server-metrics.js';
import { sseHeaders, whileOpen, writeSse, type OpenStreams } from './sse.js';
import { takeStreamSlot, type StreamSlots } from './stream-slots.js';
import { runView, stepView } from './views.js';

/** How often a run's stream reads the run and its steps again, ms. */
export const RUN_WATCH_MS = 250;

/** Run statuses after which nothing of the run changes once its steps have ended. */
const RUN_ENDED: ReadonlySet<string> = new Set(['completed', 'cancelled', 'failed']);

/** One frame of a run's stream. */
export interface RunFrame {
  readonly id: number;
  readonly type: 'run' | 'step';
  readonly body: Record<string, unknown>;
}

/** What the route needs (the server's stream settings and bounds, as the step stream's). */
export interface RunStreamDeps {
  readonly runtime: Runtime;
  readonly keepAliveMs: number;
  readonly sseFlushMs: number;
  readonly logger: Logger;
  readonly streams: OpenStreams;
  readonly slots: StreamSlots;
  readonly metrics: ServerMetrics;
}

function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * The frames of run `runId`'s stream (see the module): pages of what changed since the last
 * read, never an empty one; it ends after the run has ended with no live step, when the run
 * is gone, or when `signal` aborts.
 */
export async function* watchRun(
  runtime: Runtime,
  runId: string,
  signal: AbortSignal,
  everyMs = RUN_WATCH_MS,
): AsyncGenerator<RunFrame[], void> {
  const sent = new Map<string, string>();
  let id = 0;
  while (!signal.aborted) {
    const run = await runtime.getRun(runId);
    if (!run) return;
    const steps = await runtime.listSteps(runId);
    const page: RunFrame[] = [];
    // Steps first: a page that ends the run says so last.
    for (const step of steps) {
      const body = stepView(step);
      const text = JSON.stringify(body);
      if (sent.get(step.step_id) === text) continue;
      sent.set(step.step_id, text);
      page.push({ id: ++id, type: 'step', body });
    }
    const runBody = runView(run);
    const runText = JSON.stringify(runBody);
    if (sent.get(runId) !== runText) {
      sent.set(runId, runText);
      page.push({ id: ++id, type: 'run', body: runBody });
    }
    if (page.length > 0) yield page;
    if (RUN_ENDED.has(run.status) && steps.every((s) => STEP_ENDED.has(s.status))) return;
    await wait(everyMs, signal);
  }
}

/** Registers `GET /v1/runs/{run_id}/stream` on `app`; another user's run is 404. */
export function registerRunStreamRoute(app: FastifyInstance, deps: RunStreamDeps): void {
  app.get('/v1/runs/:run_id/stream', async (req: FastifyRequest, reply: FastifyReply) => {
    const { run_id = '' } = req.params as Record<string, string>;
    const run = await deps.runtime.getRun(pathId('run', run_id));
    if (!run || !mayUse(callerOf(req), run.user_id)) throw new NotFoundError('run', run_id);
    const headers = { 'x-correlation-id': String(reply.getHeader('x-correlation-id') ?? '') };
    if (req.method === 'HEAD') {
      void reply.headers(sseHeaders(headers)).code(200).send();
      return reply;
    }
    const release = takeStreamSlot(deps, callerOf(req));
    reply.hijack();
    const open = whileOpen(reply.raw);
    const done = writeSse(
      reply.raw,
      {
        pages: watchRun(deps.runtime, run_id, open.signal),
        frame: (f) => `id: ${f.id}\nevent: ${f.type}\ndata: ${JSON.stringify(f.body)}\n\n`,
        type: (f) => f.type,
        last: () => false,
      },
      open.signal,
      {
        keepAliveMs: deps.keepAliveMs,
        flushMs: deps.sseFlushMs,
        headers,
        onError: (err) => {
          deps.logger.error({ err, run_id }, 'a run stream failed');
        },
      },
    ).finally(() => {
      open.stop();
      release();
    });
    deps.streams.add(reply.raw, done);
    await done;
  });
}
