/**
 * @module What a running step asks of the runtime's engines (`runtime.chat`): the call, its
 * options, and the schemas that check a call before any engine (or its breaker) hears of it.
 */
import { z } from 'zod';
import type { ChatRequest } from './chat-request.js';

/** A chat message as a call gives it. */
export const chatMessageSchema = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string(),
  tool_call_id: z.string().optional(),
  tool_calls: z
    .array(z.object({ id: z.string(), name: z.string(), arguments: z.string() }))
    .optional(),
});

/** Sampling parameters (API.md's `params`). */
export const chatParamsSchema = z
  .object({
    temperature: z.number().min(0).max(2).optional(),
    top_p: z.number().min(0).max(1).optional(),
    max_tokens: z.number().int().nonnegative().optional(),
    stop: z.array(z.string().min(1)).optional(),
  })
  .strict();

/** What `runtime.chat` accepts: checked before anything else, so a bad call is the caller's. */
export const chatCallSchema = z.object({
  engine: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  messages: z.array(chatMessageSchema).min(1),
  params: chatParamsSchema.optional(),
  seed: z.number().int().nullable().optional(),
  tools: z
    .array(
      z.object({
        name: z.string().min(1),
        description: z.string().optional(),
        parameters: z.record(z.string(), z.unknown()),
      }),
    )
    .optional(),
});

/** A chat request to one of the runtime's engines. */
export interface ChatCall extends ChatRequest {
  /** The registered engine to call; default `scripted`. */
  readonly engine?: string;
}

/** Options of `runtime.chat`. */
export interface ChatCallOptions {
  /**
   * Whether the answer's tokens go into the calling step's stream (default `true`); with
   * `false` they are only in the result (an agent thinking to itself).
   */
  readonly stream?: boolean;
}
