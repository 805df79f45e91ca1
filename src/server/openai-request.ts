/**
 * @module The body of `POST /v1/chat/completions` checked and mapped to an agent's input
 * (docs/openai-api.md): the last message, which must be the user's, is the agent's
 * `message`; the messages before it are its `history` (`system` and `developer` as
 * `system`). What axon cannot honour is refused (400) rather than ignored: tools, sampling
 * and length parameters, `n` other than 1, content that is not text. A field set to `null`
 * (or, besides `messages`, to `[]`) gives nothing and is taken as absent, as OpenAI takes it.
 */
import type { ChatMessage } from '../engines/chat-request.js';
import { openAIRefusal } from './openai-errors.js';

/** A chat completion request, checked. */
export interface CompletionRequest {
  readonly model: string;
  /** The text of the last message, the user's. */
  readonly message: string;
  /** The messages before it; empty for a conversation of one message. */
  readonly history: readonly ChatMessage[];
  readonly stream: boolean;
  /** `stream_options.include_usage`: a last chunk with the usage and no choices. */
  readonly includeUsage: boolean;
  /** The run's seed, or `null` for the runtime's default. */
  readonly seed: number | null;
}

/** The body's parameters taken; every other one is refused. */
const TAKEN: ReadonlySet<string> = new Set([
  'model',
  'messages',
  'stream',
  'stream_options',
  'seed',
  'n',
  'logprobs',
]);

const AGENT_TOOLS = "an agent calls its own tools; axon's OpenAI API takes no tools";
const AGENT_SAMPLING = 'an agent chooses its own engine and sampling';
const AGENT_LENGTH = 'an agent decides how much it writes';

/** Why each parameter of OpenAI's that axon does not take is refused. */
const WHY_REFUSED: Readonly<Record<string, string>> = {
  tools: AGENT_TOOLS,
  tool_choice: AGENT_TOOLS,
  parallel_tool_calls: AGENT_TOOLS,
  functions: AGENT_TOOLS,
  function_call: AGENT_TOOLS,
  temperature: AGENT_SAMPLING,
  top_p: AGENT_SAMPLING,
  presence_penalty: AGENT_SAMPLING,
  frequency_penalty: AGENT_SAMPLING,
  logit_bias: AGENT_SAMPLING,
  top_logprobs: 'axon reports no log probabilities',
  reasoning_effort: AGENT_SAMPLING,
  max_tokens: AGENT_LENGTH,
  max_completion_tokens: AGENT_LENGTH,
  stop: AGENT_LENGTH,
  response_format:
    'an agent decides the form of its answer (an output that is not text comes as its JSON)',
  user: "the caller is the API key's user",
};

const refuse = (message: string, param: string | null, code = 'invalid_value'): never => {
  throw openAIRefusal(400, 'INVALID_PARAMS', message, code, param);
};

const unsupported = (param: string, why: string): never =>
  refuse(`Unsupported parameter: '${param}': ${why}.`, param, 'unsupported_parameter');

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A value that gives nothing: `null`, or an empty list. */
const isNothing = (v: unknown): boolean => v === null || (Array.isArray(v) && v.length === 0);

/**
 * The request of a `POST /v1/chat/completions` body; a 400 in OpenAI's shape naming the
 * field at fault (`param`) for anything it cannot take.
 */
export function parseCompletionRequest(body: unknown): CompletionRequest {
  if (!isRecord(body)) return refuse('The body must be a JSON object.', null);
  for (const [key, value] of Object.entries(body)) {
    if (TAKEN.has(key) || isNothing(value)) continue;
    const why = WHY_REFUSED[key];
    if (why !== undefined) unsupported(key, why);
    refuse(`Unrecognized request argument supplied: ${key}`, key, 'unknown_parameter');
  }
  const { model, messages, stream, stream_options: options, seed, n, logprobs } = body;
  if (typeof model !== 'string' || model === '') {
    refuse('`model` must be a non-empty string: agent:<name>, or axon.', 'model');
  }
  if (n !== undefined && n !== null && n !== 1) {
    unsupported('n', 'an agent gives one answer; n must be 1');
  }
  if (logprobs !== undefined && logprobs !== null && logprobs !== false) {
    unsupported('logprobs', 'axon reports no log probabilities');
  }
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') {
    refuse('`stream` must be a boolean.', 'stream');
  }
  const streamed = stream === true;
  let includeUsage = false;
  if (options !== undefined && options !== null) {
    if (!streamed) {
      refuse(
        "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
        'stream_options',
      );
    }
    if (!isRecord(options)) return refuse('`stream_options` must be an object.', 'stream_options');
    for (const [key, value] of Object.entries(options)) {
      if (key === 'include_usage' && (typeof value === 'boolean' || value === null)) continue;
      if (key === 'include_usage')
        refuse('`include_usage` must be a boolean.', 'stream_options.include_usage');
      unsupported(`stream_options.${key}`, 'axon takes include_usage only');
    }
    includeUsage = options['include_usage'] === true;
  }
  if (seed !== undefined && seed !== null && !Number.isSafeInteger(seed)) {
    refuse('`seed` must be an integer.', 'seed');
  }
  const conversation = messagesOf(messages);
  const last = conversation.at(-1) as ChatMessage;
  return {
    model: model as string,
    message: last.content,
    history: conversation.slice(0, -1),
    stream: streamed,
    includeUsage,
    seed: typeof seed === 'number' ? seed : null,
  };
}

/** `messages` as chat messages, the last one the user's; a 400 for anything else. */
function messagesOf(messages: unknown): ChatMessage[] {
  if (!Array.isArray(messages) || messages.length === 0) {
    return refuse('`messages` must be a non-empty array of messages.', 'messages');
  }
  const out = messages.map((m: unknown, i) => messageOf(m, `messages[${i}]`));
  if ((out.at(-1) as ChatMessage).role !== 'user') {
    refuse(
      "The last message must be the user's: it is the message the agent is asked (the ones before it are its history).",
      `messages[${out.length - 1}].role`,
    );
  }
  return out;
}

const ROLES: Readonly<Record<string, ChatMessage['role']>> = {
  system: 'system',
  developer: 'system',
  user: 'user',
  assistant: 'assistant',
};

function messageOf(m: unknown, at: string): ChatMessage {
  if (!isRecord(m)) return refuse(`${at} must be an object with a role and a content.`, at);
  const { role, content } = m;
  if (role === 'tool' || role === 'function') {
    unsupported(`${at}.role`, `${role} messages answer tool calls, and ${AGENT_TOOLS}`);
  }
  const mapped = typeof role === 'string' ? ROLES[role] : undefined;
  if (mapped === undefined) {
    return refuse(`${at}.role must be system, developer, user or assistant.`, `${at}.role`);
  }
  for (const [key, value] of Object.entries(m)) {
    if (key === 'role' || key === 'content' || isNothing(value)) continue;
    if (key === 'tool_calls' || key === 'function_call') unsupported(`${at}.${key}`, AGENT_TOOLS);
    unsupported(`${at}.${key}`, 'a message is its role and its text content');
  }
  return { role: mapped, content: textOf(content, `${at}.content`) };
}

/** A message's content as text: a string, or its text parts joined by newlines. */
function textOf(content: unknown, at: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) {
    return refuse(`${at} must be a string or an array of text parts.`, at);
  }
  return content
    .map((part: unknown, j) => {
      const where = `${at}[${j}]`;
      if (!isRecord(part)) return refuse(`${where} must be a content part object.`, where);
      if (part['type'] !== 'text') {
        const type = typeof part['type'] === 'string' ? part['type'] : String(part['type']);
        return unsupported(
          `${where}.type`,
          `${type} content is not taken: axon's agents take text`,
        );
      }
      for (const key of Object.keys(part)) {
        if (key !== 'type' && key !== 'text') {
          unsupported(`${where}.${key}`, 'a text part is its type and its text');
        }
      }
      if (typeof part['text'] !== 'string')
        return refuse(`${where}.text must be a string.`, `${where}.text`);
      return part['text'];
    })
    .join('\n');
}
