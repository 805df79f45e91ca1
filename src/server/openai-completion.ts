/**
 * @module What `POST /v1/chat/completions` answers, in OpenAI's shapes: a `chat.completion`,
 * or `chat.completion.chunk`s as Server-Sent Events (`data: {…}` frames, then
 * `data: [DONE]`), the usage in tokens, and an id naming the step that answered.
 */
import type { TokenUsage } from '../context/context-options.js';

/** OpenAI's usage: the step's tokens in and out (its descendants' included). */
export interface CompletionUsage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
}

/** What every answer of one completion shares. */
export interface CompletionHead {
  /** `chatcmpl-<step_id>`: the step that answered (or a random id when none did). */
  readonly id: string;
  /** Seconds since the epoch. */
  readonly created: number;
  /** The model asked for, as given. */
  readonly model: string;
}

/** A `chat.completion`. */
export interface ChatCompletion extends CompletionHead {
  readonly object: 'chat.completion';
  readonly choices: readonly [
    {
      readonly index: 0;
      readonly message: {
        readonly role: 'assistant';
        readonly content: string;
        readonly refusal: null;
      };
      readonly logprobs: null;
      readonly finish_reason: 'stop';
    },
  ];
  readonly usage: CompletionUsage;
}

/** A `chat.completion.chunk`. */
export interface ChatCompletionChunk extends CompletionHead {
  readonly object: 'chat.completion.chunk';
  readonly choices: readonly {
    readonly index: 0;
    readonly delta: { readonly role?: 'assistant'; readonly content?: string };
    readonly logprobs: null;
    readonly finish_reason: 'stop' | null;
  }[];
  /** With `stream_options.include_usage`: `null` on every chunk but the last, which has no choices. */
  readonly usage?: CompletionUsage | null;
}

/** The usage of an answer no step gave (a front door that invoked nothing). */
export const NO_USAGE: CompletionUsage = {
  prompt_tokens: 0,
  completion_tokens: 0,
  total_tokens: 0,
};

/** The frame that ends a stream of chunks. */
export const DONE_FRAME = 'data: [DONE]\n\n';

/** The completion id of the step `stepId`. */
export const completionId = (stepId: string): string => `chatcmpl-${stepId}`;

/** OpenAI's usage of a step's {@link TokenUsage}. */
export function completionUsage(usage: TokenUsage): CompletionUsage {
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
  };
}

/** OpenAI's usage of a step's `budget_usage` (`tokens_in`, `tokens_out`). */
export function usageOfBudget(used: {
  readonly tokens_in: number;
  readonly tokens_out: number;
}): CompletionUsage {
  return {
    prompt_tokens: used.tokens_in,
    completion_tokens: used.tokens_out,
    total_tokens: used.tokens_in + used.tokens_out,
  };
}

/** The `chat.completion` of an answer `content`. */
export function chatCompletion(
  head: CompletionHead,
  content: string,
  usage: CompletionUsage,
): ChatCompletion {
  return {
    ...head,
    object: 'chat.completion',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content, refusal: null },
        logprobs: null,
        finish_reason: 'stop',
      },
    ],
    usage,
  };
}

/**
 * The frames of a stream, as it goes: {@link ChunkFrames.first} (the role), one
 * {@link ChunkFrames.text} per piece of text, then {@link ChunkFrames.last} (the finish
 * reason, then — asked for — the usage, then `[DONE]`).
 */
export class ChunkFrames {
  readonly #head: CompletionHead;
  readonly #includeUsage: boolean;

  constructor(head: CompletionHead, includeUsage: boolean) {
    this.#head = head;
    this.#includeUsage = includeUsage;
  }

  /** The first chunk: the assistant's role, no text yet. */
  first(): string {
    return this.#frame([{ delta: { role: 'assistant', content: '' }, finish_reason: null }]);
  }

  /** A chunk of `text`. */
  text(text: string): string {
    return this.#frame([{ delta: { content: text }, finish_reason: null }]);
  }

  /** The chunk with the finish reason, the usage's chunk when asked for, and `[DONE]`. */
  last(usage: CompletionUsage): string {
    const finish = this.#frame([{ delta: {}, finish_reason: 'stop' }]);
    const counted = this.#includeUsage ? this.#frame([], usage) : '';
    return finish + counted + DONE_FRAME;
  }

  #frame(
    choices: readonly Pick<ChatCompletionChunk['choices'][number], 'delta' | 'finish_reason'>[],
    usage: CompletionUsage | null = null,
  ): string {
    const chunk: ChatCompletionChunk = {
      ...this.#head,
      object: 'chat.completion.chunk',
      choices: choices.map((c) => ({ index: 0, ...c, logprobs: null })),
      ...(this.#includeUsage ? { usage } : {}),
    };
    return `data: ${JSON.stringify(chunk)}\n\n`;
  }
}

/** An error frame: OpenAI's error body as a chunk's `data` (the SDK raises it as an `APIError`). */
export function errorFrame(body: unknown): string {
  return `data: ${JSON.stringify(body)}\n\n`;
}
