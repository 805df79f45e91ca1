/**
 * @module `GET /v1/agents/{name}/{key}/stream` (API.md, "Durable agents"; issue 46): the events
 * of an actor's messages as Server-Sent Events, message after message in the order they were
 * handled (which is the order they were accepted), each frame's `data` the step event's with
 * the message's id (`message_id`). A frame's id is `<n>.<seq>`: the message's place among the
 * actor's messages (1, 2, 3, …) and the event's `seq` in its step's log — so `Last-Event-ID`
 * resumes after it, across messages, as a step's stream resumes after a `seq`.
 *
 * The stream does not end with a message: having sent what the actor's messages logged, it
 * follows the actor, and sends the next message's events as they are logged, until the
 * client goes (or the server drains). While nothing comes, `: keep-alive` comments keep it
 * open; each open stream holds one of the server's stream slots.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ActorStore } from '../store/actor-store.js';
import type { Runtime } from '../runtime/runtime.js';
import type { StepEvent } from '../streams/events.js';
import { HttpError } from './http-errors.js';
import { sseData, sseHeaders, whileOpen, writeSse, type OpenStreams } from './sse.js';
import { takeStreamSlot, type StreamSlots } from './stream-slots.js';
import type { ServerMetrics } from './server-metrics.js';
import type { Logger } from '../observability/logger.js';
import type { Caller } from './auth.js';

/** How often a stream that has sent every message looks for a new one, ms. */
export const AGENT_POLL_MS = 200;
/** How often such a stream lists the actor's messages again whatever it saw, ms. */
const RELIST_MS = 5_000;

/** Where a reader resumes: after event `seq` of message `n` (`0.0`: from the first message). */
export interface AgentCursor {
  readonly n: number;
  readonly seq: number;
}

/** One frame of an actor's stream: an event of its `n`-th message. */
export interface AgentFrame {
  readonly n: number;
  readonly messageId: string;
  readonly event: StepEvent;
}

/** Parses a frame id (`Last-Event-ID`): `<n>.<seq>`; `null` when it is not one. */
export function parseAgentCursor(id: string): AgentCursor | null {
  const m = /^(\d{1,9})\.(\d{1,12})$/.exec(id);
  return m ? { n: Number(m[1]), seq: Number(m[2]) } : null;
}

/** The actor followed. */
export interface FollowedActor {
  readonly actorId: string;
  readonly runId: string;
}

/** What following an actor needs. */
export interface FollowAgentDeps {
  readonly runtime: Runtime;
  readonly actors: ActorStore;
  /** Whether the server drains: a stream with nothing left to send ends. */
  readonly draining: () => boolean;
  /** Default {@link AGENT_POLL_MS}. */
  readonly pollMs?: number;
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

/** The actor's messages, in the order accepted: the top steps of its run. */
async function messagesOf(runtime: Runtime, runId: string): Promise<string[]> {
  const steps = await runtime.listSteps(runId);
  return steps.filter((s) => s.parent_step_id === null).map((s) => s.step_id);
}

/**
 * What changes when a message comes or ends: the actor's status and last write, and its
 * first open message (a message accepted does not touch the actor's record, but opens one).
 */
async function marker(actors: ActorStore, actorId: string): Promise<string> {
  const [actor, open] = await Promise.all([
    actors.getActor(actorId),
    actors.openMessages(actorId, 1),
  ]);
  return `${actor?.status ?? ''}|${actor?.updated_at ?? ''}|${open[0]?.step_id ?? ''}`;
}

/**
 * The frames of the actor's messages after `after`, a page (one read of a message's log) at
 * a time, then those of each message accepted later; it ends when `signal` aborts, or when
 * the server drains with nothing left to send. A cursor past the actor's messages is 400.
 */
export async function* followAgent(
  deps: FollowAgentDeps,
  actor: FollowedActor,
  after: AgentCursor,
  signal: AbortSignal,
): AsyncGenerator<AgentFrame[], void> {
  const { runtime, actors } = deps;
  const pollMs = deps.pollMs ?? AGENT_POLL_MS;
  let seen = await marker(actors, actor.actorId);
  let known = await messagesOf(runtime, actor.runId);
  let n = Math.max(1, after.n);
  let afterSeq = after.n >= 1 ? after.seq : 0;
  let idle = 0;
  while (!signal.aborted) {
    const messageId = known[n - 1];
    if (messageId !== undefined) {
      for await (const page of runtime.followStepPages(messageId, { afterSeq, signal })) {
        const at = n;
        yield page.map((event) => ({ n: at, messageId, event }));
      }
      n += 1;
      afterSeq = 0;
      continue;
    }
    if (deps.draining()) return;
    await wait(pollMs, signal);
    const now = await marker(actors, actor.actorId);
    idle += pollMs;
    // A message accepted and ended between two looks changes the actor's last write; a
    // listing now and then anyway covers two writes within one millisecond.
    if (now !== seen || idle >= RELIST_MS) {
      seen = now;
      idle = 0;
      known = await messagesOf(runtime, actor.runId);
    }
  }
}

/** One SSE frame of an actor's stream. */
export function agentFrame(f: AgentFrame): string {
  const data = { ...sseData(f.event), message_id: f.messageId };
  return `id: ${f.n}.${f.event.seq}\nevent: ${f.event.type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The cursor of a stream request: `Last-Event-ID`, else `?last_event_id=`; `0.0` with neither. */
export function agentResumeAt(req: FastifyRequest, fromQuery: string | undefined): AgentCursor {
  const header = req.headers['last-event-id'];
  const given = ((Array.isArray(header) ? header[0] : header) ?? fromQuery)?.trim();
  if (given === undefined || given === '') return { n: 0, seq: 0 };
  const cursor = parseAgentCursor(given);
  if (!cursor) {
    throw new HttpError(
      400,
      'INVALID_PARAMS',
      "Last-Event-ID of an agent's stream is <n>.<seq> (two whole numbers)",
      { param: 'last_event_id', last_event_id: given.slice(0, 64) },
    );
  }
  return cursor;
}

/** What serving an actor's stream needs (the server's stream settings and bounds). */
export interface AgentStreamDeps {
  readonly runtime: Runtime;
  readonly keepAliveMs: number;
  readonly sseFlushMs: number;
  readonly logger: Logger;
  readonly streams: OpenStreams;
  readonly slots: StreamSlots;
  readonly metrics: ServerMetrics;
  readonly draining: () => boolean;
}

/** Serves the actor's stream from `after` on (the route's ownership checks done). */
export async function serveAgentStream(
  deps: AgentStreamDeps,
  caller: Caller,
  actor: FollowedActor,
  after: AgentCursor,
  reply: FastifyReply,
  method: string,
): Promise<FastifyReply | undefined> {
  if (after.n > 0) {
    const count = (await messagesOf(deps.runtime, actor.runId)).length;
    if (after.n > count) {
      throw new HttpError(
        400,
        'INVALID_PARAMS',
        `Last-Event-ID names message ${after.n}; the actor has ${count}`,
        { param: 'last_event_id', messages: count },
      );
    }
  }
  const headers = { 'x-correlation-id': String(reply.getHeader('x-correlation-id') ?? '') };
  if (method === 'HEAD') {
    void reply.headers(sseHeaders(headers)).code(200).send();
    return reply;
  }
  const release = takeStreamSlot(deps, caller);
  reply.hijack();
  const open = whileOpen(reply.raw);
  const done = writeSse(
    reply.raw,
    {
      pages: followAgent(
        { runtime: deps.runtime, actors: deps.runtime.durable.actors, draining: deps.draining },
        actor,
        after,
        open.signal,
      ),
      frame: agentFrame,
      type: (f) => f.event.type,
      last: (f) => f.event.type === 'end' || f.event.type === 'error',
    },
    open.signal,
    {
      keepAliveMs: deps.keepAliveMs,
      flushMs: deps.sseFlushMs,
      headers,
      onDrop: (type) => {
        deps.metrics.dropped.inc({ type });
      },
      onError: (err) => {
        deps.logger.error({ err, actor_id: actor.actorId }, "an agent's stream failed");
      },
    },
  ).finally(() => {
    open.stop();
    release();
  });
  deps.streams.add(reply.raw, done);
  await done;
  return undefined;
}
