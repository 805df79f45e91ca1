/**
 * @module Normalizing and hashing engine requests (NERVE-4012): the same prompt and the same
 * parameters always give the same `prompt_hash` and `params_hash`, whatever the key order,
 * line endings or Unicode composition of what the caller built.
 */
import { canonicalHash } from '../context/canonical-json.js';
import type { ChatMessage, ChatRequest, ChatToolCall, Engine } from './chat-request.js';

/** Text as it is hashed: Unicode NFC, line endings `\n`. */
function normalText(text: string): string {
  return text.normalize('NFC').replace(/\r\n?/g, '\n');
}

/** Tool-call arguments as hashed: canonical JSON when they parse, else the text itself. */
function normalArguments(args: string): unknown {
  try {
    return { json: JSON.parse(args) as unknown };
  } catch {
    return { text: normalText(args) };
  }
}

function normalCall(call: ChatToolCall): unknown {
  return { id: call.id, name: call.name, arguments: normalArguments(call.arguments) };
}

function normalMessage(m: ChatMessage): unknown {
  return {
    role: m.role,
    content: normalText(m.content),
    tool_call_id: m.tool_call_id,
    tool_calls: m.tool_calls?.map(normalCall),
  };
}

/** The sha256 of the request's normalized messages. */
export function promptHash(request: ChatRequest): string {
  return canonicalHash({ messages: request.messages.map(normalMessage) });
}

/**
 * The sha256 of what, besides the prompt and the seed, decides the answer: the model asked
 * for, the sampling parameters with the engine's defaults filled in, and the tools offered
 * (by name; their order does not matter to the model's choice, so it does not count).
 */
export function paramsHash(request: ChatRequest, engine: Engine): string {
  const p = request.params ?? {};
  const stop = p.stop ? [...new Set(p.stop)].sort() : undefined;
  const tools = request.tools
    ?.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return canonicalHash({
    model: request.model ?? engine.defaultModel,
    temperature: p.temperature,
    top_p: p.top_p,
    max_tokens: p.max_tokens ?? engine.defaultMaxTokens,
    stop,
    tools,
  });
}

/** The sha256 naming the model that answered, on its engine. */
export function modelHash(engine: string, model: string): string {
  return canonicalHash({ engine, model });
}
