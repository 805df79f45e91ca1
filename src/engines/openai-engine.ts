/**
 * @module The OpenAI-compatible engine binding, on the official `openai` SDK: any endpoint
 * that speaks the chat completions API (OpenAI, vLLM, llama.cpp server, Ollama, …), streamed
 * with usage and tool calls, every failure a typed error.
 */
import OpenAI, {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
} from 'openai';
import { CancelledError } from '../errors/cancelled-error.js';
import { EngineError } from '../errors/engine-error.js';
import { RateLimitedError } from '../errors/rate-limited-error.js';
import { TimeoutError } from '../errors/timeout-error.js';
import { isAxonError } from '../errors/axon-error.js';
import {
  estimateRequestTokens,
  type ChatMessage,
  type ChatRequest,
  type ChatToolCall,
  type Engine,
  type EngineCallOptions,
  type EngineReply,
} from './chat-request.js';
import { checkPriceTable, PRICE_TABLE, type PriceTable } from './price-table.js';

/** Options of {@link createOpenAIEngine}. */
export interface OpenAIEngineOptions {
  /** The API's base URL, with its `/v1` (e.g. `http://127.0.0.1:8000/v1`). */
  readonly baseURL: string;
  /** The key sent as `Authorization: Bearer`; local servers often need none. */
  readonly apiKey?: string;
  /** The model of requests that name none. */
  readonly model: string;
  /** The engine's name in provenance and breakers; default `openai`. */
  readonly name?: string;
  /** Retries of a 408, 409, 429 or 5xx answer or a failed connection (the SDK's, honouring `Retry-After`); default 2. */
  readonly maxRetries?: number;
  /** How long to wait for the answer to begin, per attempt; default 60 000 ms. */
  readonly timeoutMs?: number;
  /** How long the stream may stay silent between chunks before the call fails; default 30 000 ms. */
  readonly idleTimeoutMs?: number;
  /** `max_tokens` when a request gives none (and what a budget reservation assumes); default 1 024. */
  readonly defaultMaxTokens?: number;
  /** Where costs come from; default {@link PRICE_TABLE}. */
  readonly priceTable?: PriceTable;
  /** Extra headers on every request. */
  readonly headers?: Readonly<Record<string, string>>;
}

const DEFAULTS = {
  name: 'openai',
  maxRetries: 2,
  timeoutMs: 60_000,
  idleTimeoutMs: 30_000,
  defaultMaxTokens: 1024,
} as const;

function positive(option: string, value: number, allowZero = false): number {
  if (!(Number.isFinite(value) && (allowZero ? value >= 0 : value > 0))) {
    throw new RangeError(
      `createOpenAIEngine: ${option} must be a number ${allowZero ? '>=' : '>'} 0, got ${value}`,
    );
  }
  return value;
}

type WireMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;

function toWireMessage(m: ChatMessage): WireMessage {
  switch (m.role) {
    case 'tool':
      return { role: 'tool', content: m.content, tool_call_id: m.tool_call_id ?? '' };
    case 'assistant':
      return {
        role: 'assistant',
        content: m.content,
        ...(m.tool_calls?.length
          ? {
              tool_calls: m.tool_calls.map((c) => ({
                id: c.id,
                type: 'function' as const,
                function: { name: c.name, arguments: c.arguments },
              })),
            }
          : {}),
      };
    default:
      return { role: m.role, content: m.content };
  }
}

/** A tool call being assembled from its streamed pieces. */
interface PartialCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * An engine on an OpenAI-compatible chat completions endpoint. Streams with
 * `stream_options.include_usage`, so token counts are the endpoint's own; passes the seed
 * through; assembles streamed tool calls. Failures are typed: a 429 that outlasts the
 * retries is `RateLimitedError` (with `retryAfterMs` from the answer), other HTTP errors,
 * unreachable endpoints, connections lost mid-stream and malformed chunks are
 * `EngineError`, no answer in time or a silent stream is `TimeoutError`, an aborted call
 * ends with the signal's reason (a `CancelledError` inside a step).
 *
 * @example
 * const engine = createOpenAIEngine({ baseURL: 'http://127.0.0.1:11434/v1', model: 'llama3.1' });
 * const runtime = createRuntime({ engines: [engine] });
 */
export function createOpenAIEngine(options: OpenAIEngineOptions): Engine {
  if (typeof options.baseURL !== 'string' || !/^https?:\/\//.test(options.baseURL)) {
    throw new TypeError(
      `createOpenAIEngine: baseURL must be an http(s) URL, got ${JSON.stringify(options.baseURL)}`,
    );
  }
  if (typeof options.model !== 'string' || options.model === '') {
    throw new TypeError('createOpenAIEngine: model must be a non-empty string');
  }
  const name = options.name ?? DEFAULTS.name;
  const maxRetries = options.maxRetries ?? DEFAULTS.maxRetries;
  if (!(Number.isInteger(maxRetries) && maxRetries >= 0)) {
    throw new RangeError(
      `createOpenAIEngine: maxRetries must be an integer >= 0, got ${maxRetries}`,
    );
  }
  const timeoutMs = positive('timeoutMs', options.timeoutMs ?? DEFAULTS.timeoutMs);
  const idleTimeoutMs = positive('idleTimeoutMs', options.idleTimeoutMs ?? DEFAULTS.idleTimeoutMs);
  const defaultMaxTokens = positive(
    'defaultMaxTokens',
    options.defaultMaxTokens ?? DEFAULTS.defaultMaxTokens,
  );
  const priceTable = options.priceTable
    ? checkPriceTable(options.priceTable, 'createOpenAIEngine: priceTable')
    : PRICE_TABLE;
  const client = new OpenAI({
    baseURL: options.baseURL,
    // The SDK insists on a key; local servers ignore it.
    apiKey: options.apiKey ?? 'no-key',
    maxRetries,
    timeout: timeoutMs,
    logLevel: 'off',
    ...(options.headers ? { defaultHeaders: { ...options.headers } } : {}),
  });

  /** The typed error of whatever the SDK or the stream threw. */
  function typed(err: unknown, why: { idle: boolean; signal: AbortSignal | undefined }): unknown {
    if (why.idle) {
      return new TimeoutError(`engine ${name}`, idleTimeoutMs, {
        cause: err,
        details: { engine: name, phase: 'stream' },
      });
    }
    if (why.signal?.aborted) return why.signal.reason ?? new CancelledError('engine call aborted');
    if (isAxonError(err)) return err;
    if (err instanceof APIConnectionTimeoutError) {
      return new TimeoutError(`engine ${name}`, timeoutMs, {
        cause: err,
        details: { engine: name, phase: 'response' },
      });
    }
    if (err instanceof APIUserAbortError) return new CancelledError('engine call aborted');
    if (err instanceof APIConnectionError) {
      return new EngineError(
        name,
        'connection_failed',
        `cannot reach ${options.baseURL}: ${err.message}`,
        {
          cause: err,
        },
      );
    }
    if (err instanceof APIError) {
      const status = err.status as number | undefined;
      const headers = err.headers as Headers | undefined;
      if (status === 429) {
        return new RateLimitedError(
          `engine "${name}" is rate limited (429) after ${maxRetries} retries`,
          retryAfterMs(headers),
          { cause: err, details: { engine: name } },
        );
      }
      if (status === undefined) {
        // An error object inside the stream.
        return new EngineError(
          name,
          'malformed_stream',
          `the stream reported an error: ${err.message}`,
          {
            cause: err,
          },
        );
      }
      return new EngineError(name, 'http_error', `HTTP ${status}: ${err.message}`, {
        cause: err,
        status,
      });
    }
    if (err instanceof SyntaxError) {
      return new EngineError(
        name,
        'malformed_stream',
        `a chunk is not valid JSON: ${err.message}`,
        {
          cause: err,
        },
      );
    }
    return new EngineError(
      name,
      'connection_lost',
      `the stream broke: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }

  return {
    name,
    defaultModel: options.model,
    defaultMaxTokens,
    priceTable,
    estimateTokensIn: estimateRequestTokens,
    async *stream(
      request: ChatRequest,
      call: EngineCallOptions = {},
    ): AsyncGenerator<string, EngineReply, undefined> {
      const signal = call.signal;
      if (signal?.aborted) throw signal.reason ?? new CancelledError('engine call aborted');
      const controller = new AbortController();
      const onAbort = (): void => {
        controller.abort(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      // Silence between chunks: one timer for the whole stream, which a chunk only
      // timestamps (a timer per chunk cost a tenth of the throughput, see bench:engine).
      // `idle` is in an object so the checks after awaits see the timer's change.
      const silence = { idle: false, last: performance.now() };
      let timer: NodeJS.Timeout | undefined;
      const watch = (): void => {
        const quiet = performance.now() - silence.last;
        if (quiet >= idleTimeoutMs) {
          silence.idle = true;
          controller.abort();
        } else {
          timer = setTimeout(watch, idleTimeoutMs - quiet);
        }
      };
      const model = request.model ?? options.model;
      const p = request.params ?? {};
      // Indexed by the stream's tool-call index; a gap stays undefined.
      const calls: (PartialCall | undefined)[] = [];
      let tokensOut = 0;
      let usage: { prompt_tokens: number; completion_tokens: number } | null = null;
      let answeredBy = model;
      let finishReason: string | null = null;
      try {
        const stream = await client.chat.completions.create(
          {
            model,
            messages: request.messages.map(toWireMessage),
            stream: true,
            stream_options: { include_usage: true },
            // OpenAI prefers max_completion_tokens, but vLLM, llama.cpp and Ollama read this.
            // eslint-disable-next-line @typescript-eslint/no-deprecated
            max_tokens: p.max_tokens ?? defaultMaxTokens,
            ...(p.temperature === undefined ? {} : { temperature: p.temperature }),
            ...(p.top_p === undefined ? {} : { top_p: p.top_p }),
            ...(p.stop === undefined ? {} : { stop: [...p.stop] }),
            // Seeding is best effort on OpenAI's side (hence "deprecated"); the run's seed is
            // passed through regardless (NERVE-4012).
            // eslint-disable-next-line @typescript-eslint/no-deprecated
            ...(request.seed == null ? {} : { seed: request.seed }),
            ...(request.tools?.length
              ? {
                  tools: request.tools.map((t) => ({
                    type: 'function' as const,
                    function: {
                      name: t.name,
                      ...(t.description === undefined ? {} : { description: t.description }),
                      parameters: { ...t.parameters },
                    },
                  })),
                }
              : {}),
          },
          { signal: controller.signal },
        );
        silence.last = performance.now();
        timer = setTimeout(watch, idleTimeoutMs);
        for await (const chunk of stream) {
          silence.last = performance.now();
          if (chunk.model) answeredBy = chunk.model;
          if (chunk.usage) usage = chunk.usage;
          const choice = chunk.choices[0];
          if (!choice) continue;
          if (choice.finish_reason) finishReason = choice.finish_reason;
          const pieces = choice.delta.tool_calls;
          if (pieces) {
            for (const piece of pieces) {
              const partial = (calls[piece.index] ??= { id: '', name: '', arguments: '' });
              if (piece.id) partial.id = piece.id;
              if (piece.function?.name) partial.name += piece.function.name;
              if (piece.function?.arguments) partial.arguments += piece.function.arguments;
            }
          }
          const text = choice.delta.content;
          if (text) {
            tokensOut++;
            yield text;
          }
        }
        // The SDK ends the iteration quietly when its request is aborted.
        if (silence.idle || signal?.aborted) throw new Error('aborted');
        if (finishReason === null) {
          throw new EngineError(name, 'connection_lost', 'the stream ended before the answer did');
        }
      } catch (err) {
        throw typed(err, { idle: silence.idle, signal });
      } finally {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        controller.abort();
      }
      const toolCalls: ChatToolCall[] = calls
        .filter((c): c is PartialCall => c !== undefined)
        .map(({ id, name: callName, arguments: args }) => ({
          id,
          name: callName,
          arguments: args,
        }));
      return {
        tokensIn: usage?.prompt_tokens ?? estimateRequestTokens(request),
        tokensOut: usage?.completion_tokens ?? tokensOut,
        toolCalls,
        model: answeredBy,
        finishReason,
      };
    },
  };
}

/** `Retry-After` (seconds or a date) or `retry-after-ms` of an answer, in milliseconds. */
function retryAfterMs(headers: Headers | undefined): number | null {
  const ms = Number(headers?.get('retry-after-ms') ?? Number.NaN);
  if (Number.isFinite(ms)) return ms;
  const value = headers?.get('retry-after');
  if (!value) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : null;
}
