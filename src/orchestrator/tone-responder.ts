/**
 * @module The tone responder (Nerva's): a model rewrites a result's text in a tone; on any
 * failure of the rewrite the original text is sent, and the failure noted in the metadata.
 */
import type { AgentResult } from '../actors/agent-result.js';
import type { ExecContext } from '../context/exec-context.js';
import type { ChatCall } from '../engines/chat-call.js';
import type { ChatResult } from '../engines/chat-tokens.js';
import { checkChannel, textForChannel, textOf } from './channel-text.js';
import type { Channel, Responder, Response } from './responder.js';

/** Options of {@link createToneResponder}. */
export interface ToneResponderOptions {
  /** The tone to write in, in words (`'friendly and brief'`, `'formal'`). */
  readonly tone: string;
  /**
   * Calls a model. In production pass `(call, ctx) => runtime.chat(call, ctx)`, so the
   * rewrite is budgeted on the context's ledger and traced like any call.
   */
  readonly chat: (call: ChatCall, ctx: ExecContext) => Promise<ChatResult>;
  /** The registered engine to ask; default the runtime's default. */
  readonly engine?: string;
  /** The model to ask; default the engine's default. */
  readonly model?: string;
  /** `max_tokens` of the rewrite; default the engine's default. */
  readonly maxTokens?: number;
}

/**
 * A responder that asks a model to rewrite a successful result's text in `tone`, then makes
 * it plain for a channel without markdown and fits it to the channel's length. The prompt
 * tells the model the channel's limits too, but the answer is fitted regardless.
 *
 * The rewrite never fails the response: if the call rejects (no such engine, budget
 * exceeded, cancelled), the answer is empty, or it was cut at `max_tokens` (finish reason
 * `length`, so part of the text would be lost), the original text is sent unchanged and
 * `metadata.tone_error` holds why. A result that is not a success, and an empty text, are
 * not rewritten: their text is sent as `createPassthroughResponder` would send it.
 *
 * Metadata: `handler`, `status`, `truncated`, `tone`, `rewritten` (whether the model's text
 * was used), and `tone_error` when a rewrite failed.
 *
 * @example
 * const responder = createToneResponder({ tone: 'warm and brief', chat: (call, ctx) => runtime.chat(call, ctx) });
 */
export function createToneResponder(options: ToneResponderOptions): Responder {
  const { tone, chat, engine, model, maxTokens } = checkOptions(options);
  return {
    name: 'tone',
    async format(result: AgentResult, channel: Channel, ctx: ExecContext): Promise<Response> {
      checkChannel(channel);
      const original = textOf(result);
      let text = original;
      let toneError: string | null = null;
      let rewritten = false;
      if (result.status === 'success' && original.trim() !== '') {
        try {
          text = await rewrite(original, channel, ctx);
          rewritten = true;
        } catch (err) {
          toneError = err instanceof Error ? err.message : String(err);
        }
      }
      const fitted = textForChannel(text, channel);
      return {
        text: fitted.text,
        channel: channel.name,
        media: [],
        metadata: {
          handler: result.handler,
          status: result.status,
          truncated: fitted.truncated,
          tone,
          rewritten,
          ...(toneError === null ? {} : { tone_error: toneError }),
        },
      };
    },
  };

  async function rewrite(original: string, channel: Channel, ctx: ExecContext): Promise<string> {
    const call: ChatCall = {
      ...(engine === undefined ? {} : { engine }),
      ...(model === undefined ? {} : { model }),
      messages: [
        { role: 'system', content: instructions(tone, channel) },
        { role: 'user', content: original },
      ],
      ...(maxTokens === undefined ? {} : { params: { max_tokens: maxTokens } }),
    };
    const answer = await chat(call, ctx);
    const text = answer.text.trim();
    if (text === '') throw new Error('the model answered with an empty text');
    if (answer.finishReason === 'length') {
      throw new Error('the rewrite was cut at max_tokens');
    }
    return text;
  }
}

/** The system prompt: the tone, the channel's limits, and to keep the meaning. */
function instructions(tone: string, channel: Channel): string {
  const limits = [
    channel.supportsMarkdown ? null : 'Write plain text without markdown.',
    channel.maxLength === null ? null : `Use at most ${channel.maxLength} characters.`,
  ].filter((line) => line !== null);
  return [
    `Rewrite the user's message in this tone: ${tone}.`,
    'Keep its meaning, facts, names and numbers exactly; add nothing and leave nothing out.',
    ...limits,
    'Answer with the rewritten message only.',
  ].join(' ');
}

function checkOptions(options: ToneResponderOptions): ToneResponderOptions {
  if (typeof options !== 'object' || (options as unknown) === null) {
    throw new TypeError('createToneResponder: options must be an object');
  }
  const { tone, chat, engine, model, maxTokens } = options;
  if (typeof tone !== 'string') throw new TypeError('createToneResponder: tone must be a string');
  if (tone.trim() === '') throw new RangeError('createToneResponder: tone must not be empty');
  if (typeof chat !== 'function') {
    throw new TypeError('createToneResponder: chat must be a function');
  }
  for (const [key, value] of [
    ['engine', engine],
    ['model', model],
  ] as const) {
    if (value === undefined) continue;
    if (typeof value !== 'string')
      throw new TypeError(`createToneResponder: ${key} must be a string`);
    if (value === '') throw new RangeError(`createToneResponder: ${key} must not be empty`);
  }
  if (maxTokens !== undefined && !(Number.isInteger(maxTokens) && maxTokens > 0)) {
    throw new RangeError(
      `createToneResponder: maxTokens must be a positive integer, got ${String(maxTokens)}`,
    );
  }
  return options;
}
