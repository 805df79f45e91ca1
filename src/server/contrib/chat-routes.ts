/**
 * @module The front door over HTTP, shared by the bridges: with `orchestrator` in a bridge's
 * options, `POST /v1/chat` answers a chat message with the orchestrator's formatted response
 * and `POST /v1/chat/stream` streams it as Server-Sent Events (`sseChunk` frames). Here are
 * the framework-neutral parts: the option's check, the body's parse, the context of a
 * message, the JSON reply and the SSE frames. Each bridge reads the body and writes the
 * answer its framework's way.
 */
import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import type { ExecContext } from '../../context/exec-context.js';
import { CancelledError } from '../../errors/cancelled-error.js';
import type { HandleOptions, Orchestrator } from '../../orchestrator/orchestrator.js';
import type { Channel, MediaBlock } from '../../orchestrator/responder.js';
import { sseChunk } from '../../orchestrator/stream-chunks.js';
import type { Runtime } from '../../runtime/runtime.js';
import { zodIssues } from '../../tools/zod-issues.js';
import { HttpError, type ErrorBody } from '../http-errors.js';
import { parseJsonBody } from '../json-body.js';
import { drained, sseHeaders } from '../sse.js';
import { refusal } from './bridge-support.js';
import type { AxonRequest, HeaderLookup } from './request-context.js';

/** What the chat routes need of an orchestrator (`createOrchestrator(...)` has both). */
export type ChatOrchestrator = Pick<Orchestrator, 'handle' | 'stream'>;

/** The chat option every bridge takes besides {@link RequestContextOptions}. */
export interface ChatRouteOptions {
  /**
   * Serve the front door: `POST /v1/chat` and `POST /v1/chat/stream` under the bridge's
   * mount path, answered by this orchestrator. Default none (the bridge only attaches the
   * context).
   */
  readonly orchestrator?: ChatOrchestrator;
}

/** The path of the JSON route, below the bridge's mount path. */
export const CHAT_PATH = '/v1/chat';
/** The path of the SSE route, below the bridge's mount path. */
export const CHAT_STREAM_PATH = '/v1/chat/stream';
/** The largest chat body taken, bytes (`axon serve`'s default `body_limit_bytes`). */
export const CHAT_BODY_LIMIT = 1_048_576;

/** Which chat route a request is for, or `null` for none. */
export type ChatRoute = 'chat' | 'stream';

/** A chat request's body, checked. */
export interface ChatRequest {
  readonly message: string;
  readonly channel?: Channel;
  /** The session the message belongs to: the context's `sessionId` (and memory's session). */
  readonly sessionId?: string;
  /**
   * The run to handle the message in, its calls recorded or replayed under the client token
   * (docs/orchestrator.md, "Record and replay"); the run must be the caller's.
   */
  readonly run?: { readonly runId: string; readonly clientToken: string };
}

/** `POST /v1/chat`'s answer. */
export interface ChatReply {
  readonly text: string;
  readonly channel: string;
  readonly media: readonly MediaBlock[];
  readonly metadata: Readonly<Record<string, unknown>>;
  /** The route taken, or `null` when the request ended before routing. */
  readonly route: {
    readonly intent: string;
    readonly confidence: number;
    readonly handler: string | null;
  } | null;
  /** The handler's result status (`success`, `wrong_handler`, `error`, …), or `null`. */
  readonly status: string | null;
}

const channelSchema = z.strictObject({
  name: z.string().min(1),
  supportsMarkdown: z.boolean(),
  supportsMedia: z.boolean(),
  maxLength: z.number().int().positive().nullable(),
});

const chatBodySchema = z.strictObject({
  message: z.string(),
  channel: channelSchema.optional(),
  session_id: z.string().min(1).max(256).optional(),
  run: z
    .strictObject({
      run_id: z.string().min(1).max(256),
      client_token: z.string().min(1).max(256),
    })
    .optional(),
});

/**
 * `options.orchestrator` checked: `null` when absent. Throws a `TypeError` naming the option
 * when it is not an object with `handle` and `stream`.
 */
export function chatOrchestratorOf(
  options: ChatRouteOptions,
  where: string,
): ChatOrchestrator | null {
  const given: unknown = options.orchestrator;
  if (given === undefined) return null;
  const o = typeof given === 'object' && given !== null ? (given as Partial<ChatOrchestrator>) : {};
  if (typeof o.handle !== 'function' || typeof o.stream !== 'function') {
    throw new TypeError(
      `${where}: orchestrator must have handle(message, options) and stream(message, options) (createOrchestrator)`,
    );
  }
  return given as ChatOrchestrator;
}

/** The chat route of a `method` request to `path` (relative to the mount path), if any. */
export function chatRouteOf(method: string, path: string): ChatRoute | null {
  if (method !== 'POST') return null;
  // A trailing slash is the same route, as it is for Express and Fastify by default.
  const p = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  return p === CHAT_PATH ? 'chat' : p === CHAT_STREAM_PATH ? 'stream' : null;
}

/**
 * A request body's bytes, at most {@link CHAT_BODY_LIMIT}: 413 `PAYLOAD_TOO_LARGE` past it
 * (and at once when `Content-Length` says so).
 */
export async function readChatBody(
  body: AsyncIterable<Uint8Array> | null,
  headers: HeaderLookup,
): Promise<Buffer> {
  const tooLarge = (): HttpError =>
    new HttpError(413, 'PAYLOAD_TOO_LARGE', 'the body is larger than the server takes', {
      limit_bytes: CHAT_BODY_LIMIT,
    });
  const declared = Number(headers('content-length') ?? 0);
  if (declared > CHAT_BODY_LIMIT) throw tooLarge();
  if (body === null) return Buffer.alloc(0);
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const part of body) {
    size += part.byteLength;
    if (size > CHAT_BODY_LIMIT) throw tooLarge();
    parts.push(part);
  }
  return Buffer.concat(parts);
}

/**
 * The chat request of a body — its bytes (then parsed as `axon serve` parses JSON), or the
 * value a framework's own parser already made. 415 when the body says it is not JSON, 400
 * `INVALID_PARAMS` listing each problem (`details.issues[].path`, e.g. `["message"]`).
 */
export function parseChatBody(body: unknown, headers: HeaderLookup): ChatRequest {
  let value: unknown = body;
  if (Buffer.isBuffer(body)) {
    const type = headers('content-type');
    if (body.length > 0 && type !== undefined && !isJsonType(type)) {
      throw new HttpError(415, 'INVALID_PARAMS', 'the body must be application/json');
    }
    value = parseJsonBody(body);
  }
  const parsed = chatBodySchema.safeParse(value);
  if (!parsed.success) {
    const issues = zodIssues(parsed.error);
    // What the message names: each field at fault (an unknown field by its own name).
    const fields = [
      ...new Set(
        parsed.error.issues.flatMap((i) =>
          i.code === 'unrecognized_keys' ? i.keys : [i.path.map(String).join('.') || 'body'],
        ),
      ),
    ];
    throw new HttpError(400, 'INVALID_PARAMS', `the chat body is not valid: ${fields.join(', ')}`, {
      issues,
    });
  }
  const { message, channel, session_id, run } = parsed.data;
  return {
    message,
    ...(channel === undefined ? {} : { channel }),
    ...(session_id === undefined ? {} : { sessionId: session_id }),
    ...(run === undefined ? {} : { run: { runId: run.run_id, clientToken: run.client_token } }),
  };
}

function isJsonType(type: string): boolean {
  const essence = type.split(';')[0]?.trim().toLowerCase() ?? '';
  return essence === 'application/json' || /^application\/[\w.+-]+\+json$/.test(essence);
}

/**
 * The context a chat message runs under: the request's own, or — when the body names a
 * session other than the context's — a context like it (caller, permissions, memory scope,
 * metadata, trace, deadline, budgets drawn on it too) in that session, cancelled with it.
 * `release` detaches a made context once the message is answered.
 */
export function chatContext(
  runtime: Pick<Runtime, 'createContext'>,
  axon: AxonRequest,
  chat: ChatRequest,
): { readonly ctx: ExecContext; readonly release: () => void } {
  const base = axon.ctx;
  if (chat.sessionId === undefined || chat.sessionId === base.sessionId) {
    return { ctx: base, release: () => undefined };
  }
  const remaining = base.remainingMs();
  const ctx = runtime.createContext({
    name: base.name,
    userId: base.userId,
    sessionId: chat.sessionId,
    permissions: base.permissions,
    memoryScope: base.memoryScope,
    ledgerParent: base.ledger,
    metadata: base.metadata,
    traceId: base.traceId,
    signal: base.signal,
    ...(remaining === null ? {} : { timeoutMs: Math.max(1, remaining) }),
    ...(base.tap === null ? {} : { tap: base.tap }),
  });
  return {
    ctx,
    release: () => {
      ctx.dispose();
    },
  };
}

function handleOptions(ctx: ExecContext, chat: ChatRequest): HandleOptions {
  const channel = chat.channel === undefined ? {} : { channel: chat.channel };
  if (!chat.run) return { ctx, ...channel };
  // Inside a run the context is the run's: the request gives who asks, and its limits.
  const remaining = ctx.remainingMs();
  return {
    ...channel,
    run: chat.run,
    context: {
      name: ctx.name,
      userId: ctx.userId,
      sessionId: ctx.sessionId,
      memoryScope: ctx.memoryScope,
      permissions: ctx.permissions,
      metadata: ctx.metadata,
      signal: ctx.signal,
      ...(remaining === null ? {} : { timeoutMs: Math.max(1, remaining) }),
    },
  };
}

/** `POST /v1/chat`: handles the message and answers {@link ChatReply}. Never rejects. */
export async function answerChat(
  orchestrator: ChatOrchestrator,
  ctx: ExecContext,
  chat: ChatRequest,
): Promise<ChatReply> {
  const { response, route, result } = await orchestrator.handle(
    chat.message,
    handleOptions(ctx, chat),
  );
  return {
    text: response.text,
    channel: response.channel,
    media: response.media,
    metadata: response.metadata,
    route:
      route === null
        ? null
        : { intent: route.intent, confidence: route.confidence, handler: route.bestHandler },
    status: result?.status ?? null,
  };
}

/** What a chat route answers: a JSON body with its status, or SSE frames. */
export type ChatAnswer =
  | {
      readonly type: 'json';
      readonly status: number;
      readonly body: ChatReply | ErrorBody;
      /** `Retry-After` seconds of a 429, else `null`. */
      readonly retryAfterS: number | null;
    }
  | { readonly type: 'stream'; readonly frames: AsyncGenerator<string, void, undefined> };

/** What {@link chatAnswer} needs of the request besides its route. */
export interface ChatExchange {
  readonly orchestrator: ChatOrchestrator;
  readonly runtime: Pick<Runtime, 'createContext' | 'logger'>;
  readonly axon: AxonRequest;
  readonly headers: HeaderLookup;
  /** The body: its bytes, or what the framework's own parser made of it. */
  readonly body: () => Promise<unknown>;
  /** Aborts when the client goes away before the response is finished. */
  readonly closed: AbortSignal;
}

/**
 * The answer of a chat `route`: the body read and checked (a refusal is API.md's error body),
 * then `POST /v1/chat`'s {@link ChatReply}, or `POST /v1/chat/stream`'s frames. Never
 * rejects.
 */
export async function chatAnswer(route: ChatRoute, exchange: ChatExchange): Promise<ChatAnswer> {
  const { orchestrator, runtime, axon, headers } = exchange;
  let chat: ChatRequest;
  try {
    chat = parseChatBody(await exchange.body(), headers);
  } catch (err) {
    const { status, body, retryAfterS } = refusal(err, axon.correlationId, runtime.logger);
    return { type: 'json', status, body, retryAfterS };
  }
  const { ctx, release } = chatContext(runtime, axon, chat);
  if (route === 'stream') {
    return {
      type: 'stream',
      frames: chatFrames(ctx, chat, exchange, release),
    };
  }
  try {
    // `handle` never rejects (a failure is formatted as the response); a broken
    // orchestrator that does is answered like any refusal.
    return {
      type: 'json',
      status: 200,
      body: await answerChat(orchestrator, ctx, chat),
      retryAfterS: null,
    };
  } catch (err) {
    const { status, body, retryAfterS } = refusal(err, axon.correlationId, runtime.logger);
    return { type: 'json', status, body, retryAfterS };
  } finally {
    release();
  }
}

/**
 * `POST /v1/chat/stream`'s frames: one `sseChunk` per chunk, the last `event: done` with the
 * response. A failure of the stream itself (not of the handler, which the done frame
 * carries) ends it with an `event: error` frame holding API.md's error body. When `closed`
 * aborts the context is cancelled, so an invocation waiting on anything ends; returning the
 * iteration returns the orchestrator's, which cancels the invocation too.
 */
async function* chatFrames(
  ctx: ExecContext,
  chat: ChatRequest,
  { orchestrator, axon, runtime, closed }: ChatExchange,
  release: () => void,
): AsyncGenerator<string, void, undefined> {
  const cancel = (): void => {
    ctx.cancel(new CancelledError('the client closed the chat stream'));
  };
  closed.addEventListener('abort', cancel, { once: true });
  try {
    if (closed.aborted) cancel();
    for await (const chunk of orchestrator.stream(chat.message, handleOptions(ctx, chat))) {
      yield sseChunk(chunk);
    }
  } catch (err) {
    const { body } = refusal(err, axon.correlationId, runtime.logger);
    yield `event: error\ndata: ${JSON.stringify(body)}\n\n`;
  } finally {
    closed.removeEventListener('abort', cancel);
    release();
  }
}

/** The response headers of the SSE route. */
export function chatStreamHeaders(correlationId: string): Record<string, string> {
  return sseHeaders({ 'x-correlation-id': correlationId });
}

/**
 * Writes `frames` to a Node response as SSE, honouring `write()` backpressure, until they
 * end or `closed` aborts; then returns the iteration and ends the response.
 */
export async function writeChatStream(
  res: ServerResponse,
  frames: AsyncGenerator<string, void, undefined>,
  closed: AbortSignal,
  headers: Readonly<Record<string, string>>,
): Promise<void> {
  res.writeHead(200, headers);
  res.flushHeaders();
  try {
    for await (const frame of frames) {
      if (closed.aborted) break;
      if (!res.write(frame) && !(await drained(res, closed))) break;
    }
  } finally {
    // `break` has returned `frames`; an error has too. The response ends either way.
    if (!res.writableEnded) res.end();
  }
}
