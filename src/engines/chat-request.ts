/** @module The request an engine streams an answer to. */

/** A chat message. */
export interface ChatMessage {
  readonly role: 'system' | 'user' | 'assistant' | 'tool';
  readonly content: string;
}

/** Sampling parameters of API.md's `llm_call`. */
export interface ChatParams {
  readonly temperature?: number;
  readonly top_p?: number;
  /** Tokens to produce at most; the scripted engine's default is 64. */
  readonly max_tokens?: number;
  readonly stop?: readonly string[];
}

/** One chat completion request. */
export interface ChatRequest {
  readonly messages: readonly ChatMessage[];
  readonly model?: string;
  readonly params?: ChatParams;
  /** The run's seed; engines that support seeding pass it through. */
  readonly seed?: number | null;
}

/** What a call used, reported when its stream ends. */
export interface EngineUsage {
  readonly tokensIn: number;
  readonly tokensOut: number;
  readonly costUsd: number;
}

/** Options of one engine call. */
export interface EngineCallOptions {
  /** Aborting it stops the stream with the signal's reason. */
  readonly signal?: AbortSignal;
}

/**
 * An engine binding: streams the tokens of an answer and, when the stream ends, returns
 * what the call used. (Issue-level note: provenance hashes and bindings to HTTP endpoints
 * come with the engines layer proper.)
 */
export interface Engine {
  readonly name: string;
  /** `max_tokens` when a request gives none; what a budget reservation assumes. */
  readonly defaultMaxTokens: number;
  stream(
    request: ChatRequest,
    options?: EngineCallOptions,
  ): AsyncGenerator<string, EngineUsage, undefined>;
  /** Estimated prompt tokens of a request, for budget reservations. */
  estimateTokensIn(request: ChatRequest): number;
}

/** Seed 002's heuristic: about four characters per token. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
