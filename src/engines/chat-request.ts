/** @module The request an engine streams an answer to, and what it reports at the end. */
import type { PriceTable } from './price-table.js';

/** A tool call the model asked for, as the model wrote it. */
export interface ChatToolCall {
  /** The engine's id for the call, which a `tool` message answers. */
  readonly id: string;
  readonly name: string;
  /** The arguments as the model wrote them: JSON text, not yet parsed or checked. */
  readonly arguments: string;
}

/** A chat message. */
export interface ChatMessage {
  readonly role: 'system' | 'user' | 'assistant' | 'tool';
  readonly content: string;
  /** On a `tool` message: the call it answers. */
  readonly tool_call_id?: string;
  /** On an `assistant` message: the tool calls it made. */
  readonly tool_calls?: readonly ChatToolCall[];
}

/** Sampling parameters of API.md's `llm_call`. */
export interface ChatParams {
  readonly temperature?: number;
  readonly top_p?: number;
  /** Tokens to produce at most; the scripted engine's default is 64. */
  readonly max_tokens?: number;
  readonly stop?: readonly string[];
}

/** A tool the model may call: its name and JSON Schema (2020-12) parameters. */
export interface ChatTool {
  readonly name: string;
  readonly description?: string;
  readonly parameters: Readonly<Record<string, unknown>>;
}

/** One chat completion request. */
export interface ChatRequest {
  readonly messages: readonly ChatMessage[];
  /** The model; the engine's default when absent. */
  readonly model?: string;
  readonly params?: ChatParams;
  /** The run's seed; engines that support seeding pass it through. */
  readonly seed?: number | null;
  /** Tools the model may call; their calls come back in {@link EngineReply.toolCalls}. */
  readonly tools?: readonly ChatTool[];
}

/** What an engine reports when its stream ends. */
export interface EngineReply {
  /** Prompt tokens, as the engine counted them (or estimated, if it does not say). */
  readonly tokensIn: number;
  /** Tokens produced. */
  readonly tokensOut: number;
  /** Tool calls the model asked for, complete, in the order it made them. */
  readonly toolCalls: readonly ChatToolCall[];
  /** The model that answered, as the engine names it (it may name a dated snapshot). */
  readonly model: string;
  /** Why the answer ended (`stop`, `length`, `tool_calls`, …), when the engine says. */
  readonly finishReason: string | null;
}

/** Options of one engine call. */
export interface EngineCallOptions {
  /** Aborting it stops the stream with the signal's reason. */
  readonly signal?: AbortSignal;
}

/**
 * An engine binding: streams the tokens of an answer and, when the stream ends, returns
 * what the call used and which tools it asked for. A failed call throws a typed error
 * (`EngineError`, `RateLimitedError`, `TimeoutError`, `CancelledError`) — never hangs.
 * Calls go through {@link chatTokens}, which budgets, costs and hashes them.
 */
export interface Engine {
  readonly name: string;
  /** The model of a request that names none. */
  readonly defaultModel: string;
  /** `max_tokens` when a request gives none; what a budget reservation assumes. */
  readonly defaultMaxTokens: number;
  /** Where the engine's costs come from (its version goes into provenance). */
  readonly priceTable: PriceTable;
  stream(
    request: ChatRequest,
    options?: EngineCallOptions,
  ): AsyncGenerator<string, EngineReply, undefined>;
  /** Estimated prompt tokens of a request, for budget reservations. */
  estimateTokensIn(request: ChatRequest): number;
}

/** Seed 002's heuristic: about four characters per token. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** Seed 002's heuristic over a request's messages and tool schemas. */
export function estimateRequestTokens(request: ChatRequest): number {
  let n = 0;
  for (const m of request.messages) {
    n += estimateTokens(m.content);
    for (const call of m.tool_calls ?? []) n += estimateTokens(call.name + call.arguments);
  }
  for (const tool of request.tools ?? []) {
    n += estimateTokens(tool.name + (tool.description ?? '') + JSON.stringify(tool.parameters));
  }
  return n;
}
