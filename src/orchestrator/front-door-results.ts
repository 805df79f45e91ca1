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
import type { MemoryContext } from '../memory/memory-types.js';
import { UNKNOWN_INTENT } from './route-result.js';

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

/** The recalled conversation as chat history (messages of the roles a model knows). */
export function historyOf(recalled: MemoryContext | null): ChatMessage[] {
  const history: ChatMessage[] = [];
  for (const m of recalled?.conversation ?? []) {
    if (m.role === 'user' || m.role === 'assistant' || m.role === 'system') {
      history.push({ role: m.role, content: m.content });
    }
  }
  return history;
}

/** What memory keeps of an answer. */
export function textForMemory(result: AgentResult): string {
  if (typeof result.output === 'string') return result.output;
  return result.output === null ? `(${result.status})` : JSON.stringify(result.output);
}
