/**
 * @module The results the front door makes itself (a message no handler passed for, a
 * failure of the request), and how memory's conversation and an answer cross between the
 * invocation and memory.
 */
import type { AgentResult } from '../actors/agent-result.js';
import type { TokenUsage } from '../context/exec-context.js';
import type { ExecContext } from '../context/exec-context.js';
import type { ChatMessage } from '../engines/chat-request.js';
import { toAxonError } from '../errors/to-error-payload.js';
import type { ConversationMessage, MemoryContext } from '../memory/memory-types.js';
import { isImmutable } from '../store/deep-copy.js';
import { UNKNOWN_INTENT } from './route-result.js';

function allChatMessages(conversation: readonly ConversationMessage[]): boolean {
  for (let i = 0; i < conversation.length; i++) {
    if (!isChatMessage(conversation[i] as ConversationMessage)) return false;
  }
  return true;
}

/** Whether a chat model takes memory's message `m` as history (by its role). */
function isChatMessage(m: ConversationMessage): m is ConversationMessage & ChatMessage {
  return m.role === 'user' || m.role === 'assistant' || m.role === 'system';
}

const NO_TOKENS: TokenUsage = Object.freeze({
  promptTokens: 0,
  completionTokens: 0,
  totalTokens: 0,
  costUsd: 0,
});

/** A result nothing was invoked for: its status, output and error, in `ctx`'s run. */
function doorResult(
  ctx: ExecContext,
  handler: string | null,
  fields: Pick<AgentResult, 'status' | 'output' | 'error'>,
): AgentResult {
  return {
    ...fields,
    data: null,
    handler: handler ?? UNKNOWN_INTENT,
    runId: ctx.runId ?? '',
    stepId: '',
    usage: NO_TOKENS,
    durationMs: 0,
  };
}

/** The result of a message no handler passed for. */
export function unroutable(message: string, ctx: ExecContext): AgentResult {
  return doorResult(ctx, null, {
    status: 'wrong_handler',
    output: `No handler for: ${message}`,
    error: null,
  });
}

/** A failure of the request, as a result the responder formats. */
export function failedRequest(
  error: unknown,
  ctx: ExecContext,
  handler: string | null,
): AgentResult {
  return doorResult(ctx, handler, { status: 'error', output: null, error: toAxonError(error) });
}

/**
 * The recalled conversation as chat history (messages of the roles a model knows). When
 * memory recalled it immutable (as `TieredMemory` does: messages of role and content only)
 * and every message has such a role, the history is that conversation itself, which the
 * step's input and the store then share instead of copying.
 */
export function historyOf(recalled: MemoryContext | null): readonly ChatMessage[] {
  const conversation = recalled?.conversation ?? [];
  if (isImmutable(conversation) && allChatMessages(conversation)) {
    return conversation as readonly ChatMessage[];
  }
  const history: ChatMessage[] = [];
  for (const m of conversation) {
    if (isChatMessage(m)) history.push({ role: m.role, content: m.content });
  }
  return history;
}

/** What memory keeps of an answer. */
export function textForMemory(result: AgentResult): string {
  if (typeof result.output === 'string') return result.output;
  return result.output === null ? `(${result.status})` : JSON.stringify(result.output);
}
