/** @module The scripted engine: seeded, deterministic, with a configurable delay per token. */
import { createHash } from 'node:crypto';
import { systemClock, type Clock, type TimerHandle } from '../context/clock.js';
import { createSeededRandom } from '../context/seeded-random.js';
import {
  estimateRequestTokens,
  type ChatRequest,
  type ChatToolCall,
  type Engine,
  type EngineCallOptions,
  type EngineReply,
} from './chat-request.js';
import { PRICE_TABLE, checkPriceTable, type PriceTable } from './price-table.js';

/** Options of {@link createScriptedEngine}. */
export interface ScriptedEngineOptions {
  /** The engine's name; default `scripted`. */
  readonly name?: string;
  /** Delay before each token; default `AXON_SCRIPTED_TOKEN_MS` or 5. 0 streams without waiting. */
  readonly tokenDelayMs?: number;
  readonly clock?: Clock;
  /**
   * Returns the answer for a request: its text, or `{ text?, toolCalls? }` to also ask for
   * tool calls; `null` for the seeded default text. The text is split into word tokens and
   * cut at `max_tokens`.
   */
  readonly script?: (request: ChatRequest) => string | ScriptedAnswer | null;
  /** The model it reports; default `scripted`. */
  readonly model?: string;
  /** Default {@link PRICE_TABLE}, where `scripted` costs nothing. */
  readonly priceTable?: PriceTable;
}

/** A scripted answer: text and tool calls (arguments as an object, or as JSON text). */
export interface ScriptedAnswer {
  readonly text?: string;
  readonly toolCalls?: readonly {
    readonly name: string;
    readonly arguments: unknown;
  }[];
}

/** Default `max_tokens` of the scripted engine (API.md). */
export const SCRIPTED_DEFAULT_MAX_TOKENS = 64;

const WORDS = (
  'the a of to and in for on with at by from as is are was be this that it agent step plan run ' +
  'token stream actor context budget trace tool call result fact memory policy seed replay ' +
  'route delegate flight calendar berlin tuesday morning evening window seat hotel train ' +
  'quick steady careful bright clear simple narrow shared typed bounded durable local remote ' +
  'answer question request response check confirm book search find choose compare price time'
).split(' ');

/** Tool calls of a scripted answer, with ids that depend only on the request and position. */
function scriptedCalls(request: ChatRequest, answer: ScriptedAnswer): ChatToolCall[] {
  const base = seedOf(request).toString(16).padStart(8, '0');
  return (answer.toolCalls ?? []).map((call, i) => ({
    id: `call_${base}_${i}`,
    name: call.name,
    arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
  }));
}

function seedOf(request: ChatRequest): number {
  const digest = createHash('sha256')
    .update(JSON.stringify({ seed: request.seed ?? 0, messages: request.messages }))
    .digest();
  return digest.readUInt32BE(0);
}

/** The seeded default text: `n` word tokens, the first without a leading space. */
export function scriptedTokens(request: ChatRequest, n: number): string[] {
  const rand = createSeededRandom(seedOf(request));
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const word = WORDS[Math.floor(rand() * WORDS.length)] ?? 'token';
    const end = i === n - 1 || rand() < 0.08 ? '.' : '';
    out.push((i === 0 ? '' : ' ') + word + end);
  }
  return out;
}

/**
 * `tokens` cut before the first occurrence of any of `stop` in their joined text, as an
 * OpenAI-compatible server cuts: the stop sequence is not part of the answer, and may span
 * tokens (the token it starts in is shortened). `stopped` says whether one was found.
 */
export function cutAtStop(
  tokens: readonly string[],
  stop: readonly string[] | undefined,
): { readonly tokens: readonly string[]; readonly stopped: boolean } {
  if (!stop || stop.length === 0) return { tokens, stopped: false };
  const text = tokens.join('');
  let at = -1;
  for (const s of stop) {
    if (typeof s !== 'string' || s.length === 0) {
      throw new RangeError('stop: each stop sequence must be a non-empty string');
    }
    const i = text.indexOf(s);
    if (i !== -1 && (at === -1 || i < at)) at = i;
  }
  if (at === -1) return { tokens, stopped: false };
  const out: string[] = [];
  let pos = 0;
  for (const token of tokens) {
    if (pos + token.length <= at) out.push(token);
    else {
      if (at > pos) out.push(token.slice(0, at - pos));
      break;
    }
    pos += token.length;
  }
  return { tokens: out, stopped: true };
}

/** Splits text into word tokens that join back to it exactly. */
export function splitWords(text: string): string[] {
  return text.match(/\s*\S+/g) ?? [];
}

/** The sleeps of one stream, each cut short by `signal`'s abort. */
interface Sleeps {
  sleep(ms: number): Promise<void>;
  /** Done with them: lets go of `signal`. */
  dispose(): void;
}

/**
 * {@link Sleeps} with one abort listener for the whole stream: adding and removing one per
 * token cost more than the token's timer (EventTarget listeners are slow in Node).
 */
function sleepsUntil(clock: Clock, signal: AbortSignal | undefined): Sleeps {
  let pending: { readonly handle: TimerHandle; readonly reject: (err: Error) => void } | null =
    null;
  const onAbort = (): void => {
    if (!pending) return;
    clock.clearTimeout(pending.handle);
    pending.reject(signal?.reason as Error);
    pending = null;
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  return {
    sleep: (ms) => {
      if (signal?.aborted) return Promise.reject(signal.reason as Error);
      return new Promise((resolve, reject) => {
        const handle = clock.setTimeout(() => {
          pending = null;
          resolve();
        }, ms);
        pending = { handle, reject };
      });
    },
    dispose: () => {
      signal?.removeEventListener('abort', onAbort);
    },
  };
}

/**
 * The scripted engine of API.md's embedded defaults: streams a deterministic text of
 * `params.max_tokens` tokens (default 64) derived from the seed and the messages, one token
 * every `tokenDelayMs`. Same seed and messages, the same text, byte for byte. Costs nothing.
 *
 * `params.stop` is honoured: the text ends before the first stop sequence (finish reason
 * `stop`). `temperature` and `top_p` do not apply to a scripted text — the same seed and
 * messages give the same text whatever they are — but they still enter the call's
 * `params_hash`, so a `strict_replay` still tells calls made with other values apart.
 *
 * @example
 * const engine = createScriptedEngine({ tokenDelayMs: 0 });
 * for await (const t of engine.stream({ messages: [{ role: 'user', content: 'hi' }], seed: 42 })) process.stdout.write(t);
 */
export function createScriptedEngine(options: ScriptedEngineOptions = {}): Engine {
  const envDelay = Number(process.env['AXON_SCRIPTED_TOKEN_MS'] ?? '5');
  const tokenDelayMs =
    options.tokenDelayMs ?? (Number.isFinite(envDelay) && envDelay >= 0 ? envDelay : 5);
  if (!(Number.isFinite(tokenDelayMs) && tokenDelayMs >= 0)) {
    throw new RangeError(`createScriptedEngine: tokenDelayMs must be >= 0, got ${tokenDelayMs}`);
  }
  const clock = options.clock ?? systemClock;
  const name = options.name ?? 'scripted';
  const defaultModel = options.model ?? 'scripted';
  const priceTable = options.priceTable
    ? checkPriceTable(options.priceTable, 'createScriptedEngine: priceTable')
    : PRICE_TABLE;
  return {
    name,
    defaultModel,
    defaultMaxTokens: SCRIPTED_DEFAULT_MAX_TOKENS,
    priceTable,
    estimateTokensIn: estimateRequestTokens,
    async *stream(
      request: ChatRequest,
      call: EngineCallOptions = {},
    ): AsyncGenerator<string, EngineReply, undefined> {
      const max = request.params?.max_tokens ?? SCRIPTED_DEFAULT_MAX_TOKENS;
      if (!(Number.isInteger(max) && max >= 0))
        throw new RangeError(`max_tokens must be an integer >= 0, got ${max}`);
      const scripted = options.script?.(request) ?? null;
      const answer: ScriptedAnswer | null =
        typeof scripted === 'string' ? { text: scripted } : scripted;
      const cut = cutAtStop(
        answer === null
          ? scriptedTokens(request, max)
          : splitWords(answer.text ?? '').slice(0, max),
        request.params?.stop,
      );
      const tokens = cut.tokens;
      const toolCalls = answer === null ? [] : scriptedCalls(request, answer);
      let produced = 0;
      const sleeps = tokenDelayMs > 0 ? sleepsUntil(clock, call.signal) : null;
      try {
        for (const token of tokens) {
          if (sleeps) await sleeps.sleep(tokenDelayMs);
          else if (call.signal?.aborted) throw call.signal.reason as Error;
          produced++;
          yield token;
        }
      } finally {
        sleeps?.dispose();
      }
      return {
        tokensIn: estimateRequestTokens(request),
        tokensOut: produced,
        toolCalls,
        model: request.model ?? defaultModel,
        finishReason:
          toolCalls.length > 0 ? 'tool_calls' : cut.stopped || produced < max ? 'stop' : 'length',
      };
    },
  };
}
