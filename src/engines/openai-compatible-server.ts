/**
 * @module A local OpenAI-compatible HTTP server in front of any engine (the scripted one by
 * default): `POST /v1/chat/completions`, streamed the way the real API streams — content
 * deltas, tool-call deltas, a finish reason, a usage chunk, `[DONE]` — or answered whole.
 * It can also misbehave on purpose (429 with `Retry-After`, 500, a malformed chunk, a
 * connection reset mid-stream, silence), so clients can be tested against what real
 * endpoints do. Also `POST /v1/embeddings`, answered with deterministic vectors (see
 * {@link embed}). Tests, demos and `bench:engine` use it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { ChatMessage, ChatRequest, ChatToolCall, Engine } from './chat-request.js';
import { createScriptedEngine } from './scripted-engine.js';

/** A misbehaviour for one request. */
export type ServerFault =
  /** Answer 429 with `Retry-After: seconds`. */
  | { readonly kind: 'rate_limit'; readonly retryAfterSeconds: number }
  /** Answer with an HTTP error (default 500). */
  | { readonly kind: 'http_error'; readonly status?: number }
  /** Stream `afterTokens` tokens, then a chunk that is not JSON. */
  | { readonly kind: 'malformed_chunk'; readonly afterTokens: number }
  /** Stream `afterTokens` tokens, then reset the connection. */
  | { readonly kind: 'reset'; readonly afterTokens: number }
  /** Stream `afterTokens` tokens, then send nothing more (the connection stays open). */
  | { readonly kind: 'silence'; readonly afterTokens: number };

/** Options of {@link startOpenAICompatibleServer}. */
export interface OpenAICompatibleServerOptions {
  /** Answers requests; default the scripted engine with no delay. */
  readonly engine?: Engine;
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** Default 0 (any free port). */
  readonly port?: number;
  /** When set, requests must carry `Authorization: Bearer <apiKey>` (401 otherwise). */
  readonly apiKey?: string;
}

/** A request the server received. */
export interface ReceivedRequest {
  readonly method: string;
  readonly path: string;
  readonly body: unknown;
}

/** A running server. */
export interface OpenAICompatibleServer {
  /** The base URL to give a client, with its `/v1`. */
  readonly baseURL: string;
  /** Every request received, in order. */
  readonly requests: readonly ReceivedRequest[];
  /** Queues faults: each next request gets the next one, until the queue is empty. */
  fault(...faults: ServerFault[]): void;
  /** Stops listening and drops open connections. */
  close(): Promise<void>;
}

interface WireToolCall {
  readonly id?: string;
  readonly function?: { readonly name?: string; readonly arguments?: string };
}

interface WireMessage {
  readonly role?: unknown;
  readonly content?: unknown;
  readonly tool_call_id?: unknown;
  readonly tool_calls?: readonly WireToolCall[];
}

interface WireBody {
  readonly model?: unknown;
  readonly messages?: unknown;
  readonly stream?: unknown;
  readonly stream_options?: { readonly include_usage?: unknown };
  readonly max_tokens?: unknown;
  readonly max_completion_tokens?: unknown;
  readonly temperature?: unknown;
  readonly top_p?: unknown;
  readonly stop?: unknown;
  readonly seed?: unknown;
  readonly tools?: readonly {
    readonly function?: { readonly name?: string; readonly parameters?: Record<string, unknown> };
  }[];
}

const ROLES = new Set(['system', 'user', 'assistant', 'tool']);

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part: unknown) => (part as { text?: unknown } | null)?.text)
      .filter((t): t is string => typeof t === 'string')
      .join('');
  }
  return '';
}

/** The engine request of a body, or a message saying what is wrong with it. */
function toChatRequest(body: WireBody): ChatRequest | string {
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    return "'messages' must be a non-empty array";
  }
  const messages: ChatMessage[] = [];
  for (const [i, raw] of (body.messages as WireMessage[]).entries()) {
    if (typeof raw.role !== 'string' || !ROLES.has(raw.role)) {
      return `messages[${i}].role must be one of system, user, assistant, tool`;
    }
    const calls: ChatToolCall[] = (raw.tool_calls ?? []).map((c) => ({
      id: c.id ?? '',
      name: c.function?.name ?? '',
      arguments: c.function?.arguments ?? '',
    }));
    messages.push({
      role: raw.role as ChatMessage['role'],
      content: contentText(raw.content),
      ...(typeof raw.tool_call_id === 'string' ? { tool_call_id: raw.tool_call_id } : {}),
      ...(calls.length > 0 ? { tool_calls: calls } : {}),
    });
  }
  const maxTokens = body.max_completion_tokens ?? body.max_tokens;
  const stop = typeof body.stop === 'string' ? [body.stop] : body.stop;
  return {
    messages,
    ...(typeof body.model === 'string' ? { model: body.model } : {}),
    params: {
      ...(typeof maxTokens === 'number' ? { max_tokens: maxTokens } : {}),
      ...(typeof body.temperature === 'number' ? { temperature: body.temperature } : {}),
      ...(typeof body.top_p === 'number' ? { top_p: body.top_p } : {}),
      ...(Array.isArray(stop)
        ? { stop: stop.filter((s): s is string => typeof s === 'string') }
        : {}),
    },
    ...(typeof body.seed === 'number' ? { seed: body.seed } : {}),
    ...(body.tools?.length
      ? {
          tools: body.tools.map((t) => ({
            name: t.function?.name ?? '',
            parameters: t.function?.parameters ?? {},
          })),
        }
      : {}),
  };
}

function sendError(res: ServerResponse, status: number, message: string, type: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { message, type, param: null, code: null } }));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Starts an OpenAI-compatible server on a local port.
 *
 * @example
 * const server = await startOpenAICompatibleServer();
 * const engine = createOpenAIEngine({ baseURL: server.baseURL, model: 'scripted' });
 * server.fault({ kind: 'rate_limit', retryAfterSeconds: 1 }); // the next request gets a 429
 */
export async function startOpenAICompatibleServer(
  options: OpenAICompatibleServerOptions = {},
): Promise<OpenAICompatibleServer> {
  const engine = options.engine ?? createScriptedEngine({ tokenDelayMs: 0 });
  const requests: ReceivedRequest[] = [];
  const faults: ServerFault[] = [];
  const sockets = new Set<Socket>();
  let counter = 0;

  async function chat(
    body: WireBody,
    res: ServerResponse,
    fault: ServerFault | undefined,
  ): Promise<void> {
    const request = toChatRequest(body);
    if (typeof request === 'string') {
      sendError(res, 400, request, 'invalid_request_error');
      return;
    }
    if (fault?.kind === 'rate_limit') {
      res.writeHead(429, {
        'content-type': 'application/json',
        'retry-after': String(fault.retryAfterSeconds),
      });
      res.end(
        JSON.stringify({
          error: {
            message: 'Rate limit reached',
            type: 'requests',
            param: null,
            code: 'rate_limit_exceeded',
          },
        }),
      );
      return;
    }
    if (fault?.kind === 'http_error') {
      sendError(
        res,
        fault.status ?? 500,
        'The server had an error while processing your request.',
        'server_error',
      );
      return;
    }
    const id = `chatcmpl-${++counter}`;
    const created = Math.floor(Date.now() / 1000);
    const model = request.model ?? engine.defaultModel;
    const controller = new AbortController();
    res.on('close', () => {
      controller.abort();
    });
    const stream = engine.stream(request, { signal: controller.signal });
    const tokens: string[] = [];
    const streaming = body.stream === true;
    const chunk = (delta: Record<string, unknown>, finish: string | null): string =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_axon', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
    if (streaming) {
      res.writeHead(200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
      });
      res.write(chunk({ role: 'assistant', content: '' }, null));
    }
    let r = await stream.next();
    while (!r.done) {
      if (streaming && fault && 'afterTokens' in fault && tokens.length === fault.afterTokens) {
        // Let what was written reach the client first, as it would from a real server.
        await new Promise((resolve) => setTimeout(resolve, 25));
        if (fault.kind === 'malformed_chunk') {
          res.write('data: {"id": "broken", "choices": [\n\n');
          res.end();
        } else if (fault.kind === 'reset') {
          res.socket?.resetAndDestroy();
        }
        // 'silence': nothing more, ever; close() drops the connection.
        await stream.return(undefined as never);
        return;
      }
      tokens.push(r.value);
      if (streaming && !res.write(chunk({ content: r.value }, null))) {
        await new Promise((resolve) => res.once('drain', resolve));
      }
      r = await stream.next();
    }
    const reply = r.value;
    const finish = reply.toolCalls.length > 0 ? 'tool_calls' : (reply.finishReason ?? 'stop');
    const usage = {
      prompt_tokens: reply.tokensIn,
      completion_tokens: reply.tokensOut,
      total_tokens: reply.tokensIn + reply.tokensOut,
    };
    if (!streaming) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id,
          object: 'chat.completion',
          created,
          model: reply.model,
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: tokens.join(''),
                ...(reply.toolCalls.length > 0
                  ? {
                      tool_calls: reply.toolCalls.map((c) => ({
                        id: c.id,
                        type: 'function',
                        function: { name: c.name, arguments: c.arguments },
                      })),
                    }
                  : {}),
              },
              finish_reason: finish,
            },
          ],
          usage,
        }),
      );
      return;
    }
    // Tool calls stream as the real API does: the id and name first, the arguments in pieces.
    for (const [index, call] of reply.toolCalls.entries()) {
      res.write(
        chunk(
          {
            tool_calls: [
              {
                index,
                id: call.id,
                type: 'function',
                function: { name: call.name, arguments: '' },
              },
            ],
          },
          null,
        ),
      );
      for (let at = 0; at < call.arguments.length; at += 8) {
        res.write(
          chunk(
            { tool_calls: [{ index, function: { arguments: call.arguments.slice(at, at + 8) } }] },
            null,
          ),
        );
      }
    }
    res.write(chunk({}, finish));
    if ((body.stream_options?.include_usage ?? false) === true) {
      res.write(
        `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`,
      );
    }
    res.end('data: [DONE]\n\n');
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const text = await readBody(req);
    let body: unknown = null;
    if (text !== '') {
      try {
        body = JSON.parse(text);
      } catch {
        requests.push({ method: req.method ?? 'GET', path, body: text });
        sendError(res, 400, 'the body is not valid JSON', 'invalid_request_error');
        return;
      }
    }
    requests.push({ method: req.method ?? 'GET', path, body });
    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      sendError(res, 401, 'Incorrect API key provided.', 'invalid_request_error');
      return;
    }
    if (req.method === 'GET' && path === '/v1/models') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          object: 'list',
          data: [{ id: engine.defaultModel, object: 'model', created: 0, owned_by: 'axon' }],
        }),
      );
      return;
    }
    if (req.method === 'POST' && path === '/v1/embeddings') {
      const input = (body as { input?: unknown } | null)?.input;
      const texts = typeof input === 'string' ? [input] : input;
      if (!Array.isArray(texts) || !texts.every((t) => typeof t === 'string')) {
        sendError(
          res,
          400,
          'input must be a string or an array of strings',
          'invalid_request_error',
        );
        return;
      }
      const model = (body as { model?: unknown }).model;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          object: 'list',
          model: typeof model === 'string' ? model : 'text-embedding-3-small',
          data: texts.map((t, index) => ({ object: 'embedding', index, embedding: embed(t) })),
          usage: { prompt_tokens: 0, total_tokens: 0 },
        }),
      );
      return;
    }
    if (req.method === 'POST' && path === '/v1/chat/completions') {
      if (typeof body !== 'object' || body === null) {
        sendError(res, 400, 'the body must be a JSON object', 'invalid_request_error');
        return;
      }
      await chat(body, res, faults.shift());
      return;
    }
    sendError(res, 404, `no route ${req.method ?? ''} ${path}`, 'invalid_request_error');
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) res.destroy();
      else sendError(res, 500, err instanceof Error ? err.message : String(err), 'server_error');
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    baseURL: `http://${host}:${address.port}/v1`,
    requests,
    fault(...more: ServerFault[]) {
      faults.push(...more);
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => {
          resolve();
        });
      }),
  };
}

/** Dimensions of the server's embeddings. */
export const SERVER_EMBEDDING_DIMENSIONS = 64;

/**
 * The server's embedding of `text`: each word adds ±1 at a position its hash picks, in 64
 * dimensions — deterministic, so a client can be tested end to end; not a model.
 */
function embed(text: string): number[] {
  const v = new Array<number>(SERVER_EMBEDDING_DIMENSIONS).fill(0);
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    let h = 0x811c9dc5;
    for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 0x01000193);
    h >>>= 0;
    v[h % SERVER_EMBEDDING_DIMENSIONS] =
      (v[h % SERVER_EMBEDDING_DIMENSIONS] ?? 0) + (h & 1 ? -1 : 1);
  }
  return v;
}
