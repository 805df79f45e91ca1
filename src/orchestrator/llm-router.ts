/**
 * @module The LLM router (Nerva's `LLMRouter`): the model is shown the handlers and answers
 * JSON `{"handler", "confidence", "reason"}`, checked with zod; an invalid answer is sent
 * back once with what was wrong. The call goes through the runtime's `chat`, so it is
 * budgeted, traced and replayed like any other engine call.
 */
import { z } from 'zod';
import type { ExecContext } from '../context/exec-context.js';
import type { ChatCall, ChatCallOptions } from '../engines/chat-call.js';
import type { ChatMessage } from '../engines/chat-request.js';
import type { ChatResult } from '../engines/chat-tokens.js';
import {
  UNKNOWN_INTENT,
  routeResult,
  uniqueHandlers,
  type HandlerDescription,
  type HandlerSource,
  type RouteResult,
  type Router,
} from './route-result.js';

/** How the router calls the model: `runtime.chat.bind(runtime)` in production. */
export type RouterChat = (
  call: ChatCall,
  ctx: ExecContext,
  options: ChatCallOptions,
) => Promise<ChatResult>;

/** Options of {@link createLlmRouter}. */
export interface LlmRouterOptions {
  /** Where the handlers come from, asked at each `classify` (unless `candidates` is given). */
  readonly handlers: HandlerSource;
  /**
   * Calls the model; pass `runtime.chat.bind(runtime)` so the call is budgeted, traced,
   * recorded and replayed. It is called with `{ stream: false }`: the router's JSON never
   * shows in the step's token stream.
   */
  readonly chat: RouterChat;
  /** The engine to call; default the runtime's default (`scripted`). */
  readonly engine?: string;
  /** The model; default the engine's. */
  readonly model?: string;
  /** The answer's `max_tokens`, a whole number >= 1; default 256. */
  readonly maxTokens?: number;
  /**
   * The handlers to offer the model for this message instead of all of `handlers`': the
   * model may choose only among them (the hybrid router passes its embedding pre-filter).
   */
  readonly candidates?: (
    message: string,
    ctx: ExecContext,
  ) => Promise<readonly HandlerDescription[]>;
}

/** Default `max_tokens` of the router's call. */
export const LLM_ROUTER_DEFAULT_MAX_TOKENS = 256;

/**
 * A router that asks a model. The model gets a system message listing the handlers
 * (`- name: description`) and asking for JSON `{"handler": "<name>", "confidence": <0..1>,
 * "reason": "..."}`, then the message. The first JSON object in its answer is checked: the
 * handler must be one listed or `"unknown"`, the confidence a number in [0, 1]. A valid
 * choice is the result's one candidate, at the model's confidence; `rawScores` has every
 * offered handler, the chosen at its confidence and the rest at 0.
 *
 * An invalid answer is retried once, the model's answer and what was wrong with it sent
 * back. If the second answer is invalid too, the result is `unknown` with an **empty**
 * `rawScores` — that is how it tells apart from the model answering `"unknown"` (every
 * offered handler at 0). A bad answer never rejects.
 *
 * Errors thrown by `chat` are not caught: a policy refusal, a budget that does not fit, a
 * cancellation, an engine failure are the caller's to see (they are typed `AxonError`s).
 * With no handler to offer, the model is not called and the result is `unknown`.
 *
 * @example
 * const router = createLlmRouter({ handlers: registryHandlers(registry), chat: runtime.chat.bind(runtime) });
 * const { bestHandler } = await router.classify('Move my Tuesday flight to Friday', ctx);
 */
export function createLlmRouter(options: LlmRouterOptions): Router {
  checkLlmRouterOptions(options, 'createLlmRouter: options');
  const maxTokens = options.maxTokens ?? LLM_ROUTER_DEFAULT_MAX_TOKENS;

  const offered = async (message: string, ctx: ExecContext) => {
    return uniqueHandlers(
      options.candidates
        ? await options.candidates(message, ctx)
        : await options.handlers.handlers(ctx),
    );
  };

  const ask = (messages: readonly ChatMessage[], ctx: ExecContext): Promise<ChatResult> => {
    const call: ChatCall = {
      messages,
      params: { max_tokens: maxTokens, temperature: 0 },
      ...(options.engine === undefined ? {} : { engine: options.engine }),
      ...(options.model === undefined ? {} : { model: options.model }),
    };
    return options.chat(call, ctx, { stream: false });
  };

  const classify = async (message: string, ctx: ExecContext): Promise<RouteResult> => {
    if (typeof message !== 'string') throw new TypeError('classify: message must be a string');
    const handlers = await offered(message, ctx);
    if (handlers.length === 0) return routeResult([], {});
    const names = handlers.map((h) => h.name);
    const schema = answerSchema(names);
    const messages: ChatMessage[] = [
      { role: 'system', content: systemPrompt(handlers) },
      { role: 'user', content: message },
    ];
    let reply = await ask(messages, ctx);
    let answer = checkAnswer(reply.text, schema);
    if (!answer.ok) {
      messages.push(
        { role: 'assistant', content: reply.text },
        { role: 'user', content: retryPrompt(answer.error) },
      );
      reply = await ask(messages, ctx);
      answer = checkAnswer(reply.text, schema);
      // Twice invalid: nothing the model said can be trusted, not even as scores.
      if (!answer.ok) return routeResult([], {});
    }
    const raw = Object.create(null) as Record<string, number>;
    for (const name of names) raw[name] = 0;
    const { handler, confidence, reason } = answer.value;
    // A handler actually named `unknown` is that handler, not "none".
    if (handler === UNKNOWN_INTENT && !names.includes(UNKNOWN_INTENT)) {
      return routeResult([], raw);
    }
    raw[handler] = confidence;
    return routeResult(
      [{ name: handler, score: confidence, reason: reason ?? 'chosen by the model' }],
      raw,
    );
  };

  return { name: 'llm', classify };
}

/**
 * Checks options of {@link createLlmRouter}, throwing `TypeError` / `RangeError` naming the
 * option as `${where}.name` (the hybrid router checks its `llm` options with it).
 */
export function checkLlmRouterOptions(options: LlmRouterOptions, where: string): void {
  if (typeof options !== 'object' || (options as unknown) === null) {
    throw new TypeError(`${where} must be an object`);
  }
  const source = options.handlers as HandlerSource | null | undefined;
  if (typeof source !== 'object' || source === null || typeof source.handlers !== 'function') {
    throw new TypeError(`${where}.handlers must be a HandlerSource`);
  }
  if (typeof options.chat !== 'function') {
    throw new TypeError(`${where}.chat must be a function (call, ctx, options) => ChatResult`);
  }
  for (const key of ['engine', 'model'] as const) {
    const value = options[key];
    if (value !== undefined && !(typeof value === 'string' && value.length > 0)) {
      throw new TypeError(`${where}.${key} must be a non-empty string`);
    }
  }
  const maxTokens = options.maxTokens;
  if (maxTokens !== undefined && !(Number.isInteger(maxTokens) && maxTokens >= 1)) {
    throw new RangeError(
      `${where}.maxTokens must be a whole number >= 1, got ${String(maxTokens)}`,
    );
  }
  if (options.candidates !== undefined && typeof options.candidates !== 'function') {
    throw new TypeError(`${where}.candidates must be a function (message, ctx) => handlers`);
  }
}

type AnswerSchema = ReturnType<typeof answerSchema>;
type Answer = z.infer<AnswerSchema>;
type Checked = { ok: true; value: Answer } | { ok: false; error: string };

function answerSchema(names: readonly string[]) {
  const allowed = new Set([...names, UNKNOWN_INTENT]);
  return z.object({
    handler: z.string().refine((h) => allowed.has(h), {
      message: `must be one of: ${[...allowed].map((n) => JSON.stringify(n)).join(', ')}`,
    }),
    confidence: z.number().min(0).max(1),
    reason: z.string().optional(),
  });
}

function checkAnswer(text: string, schema: AnswerSchema): Checked {
  const json = firstJsonObject(text);
  if (json === undefined) return { ok: false, error: 'the answer holds no JSON object' };
  const parsed = schema.safeParse(json);
  if (parsed.success) return { ok: true, value: parsed.data };
  const issues = parsed.error.issues.map((i) => {
    const path = i.path.map(String).join('.');
    return path === '' ? i.message : `${path}: ${i.message}`;
  });
  return { ok: false, error: issues.join('; ') };
}

/**
 * The first `{...}` of `text` that parses as a JSON object, for a model that wraps its
 * answer in prose or a code fence. Braces inside JSON strings are skipped.
 */
export function firstJsonObject(text: string): Record<string, unknown> | undefined {
  for (let start = text.indexOf('{'); start !== -1; start = text.indexOf('{', start + 1)) {
    const end = matchingBrace(text, start);
    if (end === -1) continue;
    try {
      const value: unknown = JSON.parse(text.slice(start, end + 1));
      if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
        return value as Record<string, unknown>;
      }
    } catch {
      // Not JSON (prose in braces): try the next brace.
    }
  }
  return undefined;
}

/** Where the brace opened at `start` closes, or -1. */
function matchingBrace(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i;
  }
  return -1;
}

function systemPrompt(handlers: readonly HandlerDescription[]): string {
  return [
    'You route a user message to the one handler best suited to answer it.',
    'Handlers:',
    ...handlers.map((h) => `- ${h.name}: ${h.description}`),
    '',
    'Answer with only a JSON object:',
    '{"handler": "<name>", "confidence": <number from 0 to 1>, "reason": "<why, briefly>"}',
    `Use "${UNKNOWN_INTENT}" as the handler when none fits.`,
  ].join('\n');
}

function retryPrompt(error: string): string {
  return (
    `Your answer was not valid: ${error}. ` +
    'Answer again with only the JSON object {"handler": "<name>", "confidence": <0..1>, "reason": "..."}.'
  );
}
