/**
 * @module A front-door request before its stages: what `handle` and `stream` take
 * ({@link HandleOptions}), the refusal of what they cannot take, and the request's span and
 * context — its own, the caller's, or one inside a run (`runtime.joinRun`).
 */
import { context as otelContext, trace, type Span } from '@opentelemetry/api';
import type { CreateContextOptions } from '../context/context-options.js';
import type { ExecContext } from '../context/exec-context.js';
import { formatTraceparent } from '../context/traceparent.js';
import type { ChatMessage } from '../engines/chat-request.js';
import { toAxonError } from '../errors/to-error-payload.js';
import type { Runtime } from '../runtime/runtime.js';
import { RUN_JOIN_KEYS } from '../steps/run-join.js';
import type { StreamItem } from '../streams/events.js';
import type { Channel } from './responder.js';

/** Options of one request. */
export interface HandleOptions {
  /**
   * The request's context; default a new one from the runtime, made with `context`. With a
   * context of its own the request's spans are children of its span.
   */
  readonly ctx?: ExecContext;
  /** Who asks and within what (user, session, memory scope, budgets, …), for the context made. */
  readonly context?: Omit<CreateContextOptions, 'clock' | 'ids' | 'traceId' | 'remoteParent'>;
  /** Where the response goes; default {@link DEFAULT_CHANNEL}. */
  readonly channel?: Channel;
  /**
   * Told each event of the invocation's steps as it happens (tokens, narration, tool calls,
   * nested by actor path), as `runtime.stream` gives them. A throwing observer is logged and
   * the request goes on.
   */
  readonly onEvent?: (item: StreamItem) => void;
  /**
   * Handle the request inside run `runId` (made with `runtime.createRun`), its model and
   * tool calls numbered under `clientToken`: the router's, the responder's and those of
   * every agent invoked are recorded in a `record` run and served from the recorded run in
   * `replay` and `strict_replay` (NERVE-4021, NERVE-4022), so the request replays with the
   * same route and answer. The invocation's steps are the run's; the run stays open. With it,
   * `context` may name only who asks (see {@link RUN_CONTEXT_KEYS}), and `ctx` is refused.
   * An unknown run (or another user's) or one that ended fails the request at stage `run`.
   */
  readonly run?: { readonly runId: string; readonly clientToken: string };
  /**
   * The conversation before `message`, as the caller holds it (an OpenAI client sends it
   * whole with each message): the handler's `input.history` instead of the conversation
   * memory recalls. Memory is still asked and still stores the exchange. Each message's
   * `role` is `system`, `user` or `assistant` and its `content` a string; anything else is a
   * `TypeError`.
   */
  readonly history?: readonly ChatMessage[];
}

/** What `context` may hold when a request is handled inside a run (`HandleOptions.run`). */
export const RUN_CONTEXT_KEYS: readonly string[] = RUN_JOIN_KEYS;

/**
 * The request's span `name` (a child of `options.ctx`'s span when given) and its context:
 * `options.ctx`, or one made of `options.context` whose parent is that span, so every span
 * of the request (the stages, the invocation's steps) is in its tree; with `options.run`,
 * a context inside that run (`runtime.joinRun`), or, when the run refuses, a plain one and
 * the refusal, which fails the request at its first stage.
 */
export async function openRequest(
  runtime: Runtime,
  name: string,
  options: HandleOptions,
): Promise<Request> {
  const given = options.ctx;
  const parent = given?.span
    ? trace.setSpan(otelContext.active(), given.span)
    : otelContext.active();
  const span = runtime.tracer.startSpan(name, {}, parent);
  const sc = span.spanContext();
  // Without a tracer provider the span is a no-op with no valid ids: nothing to join.
  const remoteParent = trace.isSpanContextValid(sc)
    ? { traceId: sc.traceId, spanId: sc.spanId, sampled: (sc.traceFlags & 1) === 1 }
    : null;
  if (given) return { ctx: given, span, release: noRelease, refused: null };
  const joined = remoteParent ? { traceId: remoteParent.traceId, remoteParent } : {};
  const { run } = options;
  if (!run) {
    const ctx = runtime.createContext({ ...options.context, ...joined });
    return { ctx, span, release: noRelease, refused: null };
  }
  try {
    const inRun = await runtime.joinRun(run.runId, run.clientToken, {
      ...options.context,
      ...(remoteParent ? { traceparent: formatTraceparent(remoteParent) } : {}),
    });
    return { ctx: inRun.ctx, span, release: inRun.release, refused: null };
  } catch (refused) {
    const ctx = runtime.createContext({ ...options.context, ...joined });
    return { ctx, span, release: noRelease, refused: toAxonError(refused) };
  }
}

/** A request's context and span, and what to do when it has ended. */
export interface Request {
  readonly ctx: ExecContext;
  readonly span: Span;
  /** Gives back the request's share of its run's ledger (`HandleOptions.run`). */
  readonly release: () => void;
  /** Why the run of `HandleOptions.run` refused the request, or `null`. */
  readonly refused: Error | null;
}

function noRelease(): void {}

/** Refuses what `handle` and `stream` cannot take (a programming error, not a request's). */
export function checkRequest(message: unknown, options: HandleOptions): void {
  if (typeof message !== 'string') {
    throw new TypeError(`orchestrator: message must be a string, got ${typeof message}`);
  }
  if (options.ctx !== undefined && options.context !== undefined) {
    throw new TypeError('orchestrator: give ctx or context, not both');
  }
  checkHistory(options.history);
  const { run } = options;
  if (run !== undefined) {
    if (options.ctx !== undefined) {
      throw new TypeError(
        'orchestrator: a request inside a run makes its own context: give context, not ctx',
      );
    }
    if (typeof run.runId !== 'string' || typeof run.clientToken !== 'string') {
      throw new TypeError('orchestrator: run needs a runId and a clientToken, both strings');
    }
    const others = Object.keys(options.context ?? {}).filter((k) => !RUN_CONTEXT_KEYS.includes(k));
    if (others.length > 0) {
      throw new TypeError(
        `orchestrator: inside a run the context is the run's; context may not set ${others.join(', ')} (it may set ${RUN_CONTEXT_KEYS.join(', ')})`,
      );
    }
  }
}

const HISTORY_ROLES: ReadonlySet<string> = new Set(['system', 'user', 'assistant']);

/** Refuses a `history` option that is not a list of plain chat messages. */
function checkHistory(history: unknown): void {
  if (history === undefined) return;
  if (!Array.isArray(history)) throw new TypeError('orchestrator: history must be an array');
  history.forEach((m: unknown, i) => {
    const { role, content } = (typeof m === 'object' && m !== null ? m : {}) as Record<
      string,
      unknown
    >;
    if (typeof role !== 'string' || !HISTORY_ROLES.has(role) || typeof content !== 'string') {
      throw new TypeError(
        `orchestrator: history[${i}] must be { role: system | user | assistant, content: string }`,
      );
    }
  });
}
