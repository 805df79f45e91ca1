/**
 * @module A streamed chat completion (`stream: true`): the answer's text as it comes — the
 * answering step's own tokens (not those of the steps it delegates to), or the front door's
 * chunks — written as `chat.completion.chunk` frames, honouring the socket's backpressure (a
 * client that reads slowly holds the step back) with `: keep-alive` comments while nothing
 * else is written; then the finish, the usage when asked for, and `data: [DONE]`. A step
 * that fails ends the stream with an error frame (OpenAI's error body) and no `[DONE]`.
 */
import type { ServerResponse } from 'node:http';
import type { AgentInput, AgentResult } from '../actors/agent-result.js';
import type { ExecContext } from '../context/exec-context.js';
import { InternalError } from '../errors/internal-error.js';
import type { Logger } from '../observability/logger.js';
import { textOf } from '../orchestrator/channel-text.js';
import type { HandleOptions, Orchestrator } from '../orchestrator/orchestrator.js';
import type { Response } from '../orchestrator/responder.js';
import type { Runtime } from '../runtime/runtime.js';
import type { BudgetUsage } from '../streams/events.js';
import {
  ChunkFrames,
  completionUsage,
  errorFrame,
  NO_USAGE,
  usageOfBudget,
  type CompletionHead,
  type CompletionUsage,
} from './openai-completion.js';
import { openAIErrorReply } from './openai-errors.js';
import { drained, type SseEnd } from './sse.js';

/** What the front door must have: `createOrchestrator(...)` has both. */
export type FrontDoor = Pick<Orchestrator, 'handle' | 'stream'>;

/** How an answer ended: its whole text and usage, or the failure of its step. */
export type CompletionOutcome =
  | { readonly kind: 'answer'; readonly text: string; readonly usage: CompletionUsage }
  | { readonly kind: 'failed'; readonly error: unknown };

/** An answer being made, once it has begun. */
export interface CompletionSource {
  /** The step answering (`null`: none, such as a front door that routed nowhere). */
  readonly stepId: string | null;
  /** Its text, piece by piece, as it comes. */
  readonly pieces: AsyncIterable<string>;
  /** How it ended, once {@link pieces} is done. */
  outcome(): Promise<CompletionOutcome>;
  /** Lets go of it early (the client went away; its context is cancelled with the request). */
  stop(): void;
}

/** An agent's result as an outcome: its failure for `error` and `timeout`, else its text. */
export function outcomeOf(result: AgentResult): CompletionOutcome {
  if (result.status === 'error' || result.status === 'timeout') {
    return {
      kind: 'failed',
      error: result.error ?? new InternalError(`agent "${result.handler}" failed`),
    };
  }
  return { kind: 'answer', text: textOf(result), usage: completionUsage(result.usage) };
}

/**
 * Starts `agent` on `input` under `ctx` (`runtime.stream`) and resolves once its step has
 * begun; rejects — nothing run — when the call cannot begin (an unknown agent, an input it
 * refuses, a policy's refusal), so that refusal is still the request's status.
 */
export async function beginAgentStream(
  runtime: Runtime,
  agent: string,
  input: AgentInput,
  ctx: ExecContext,
): Promise<CompletionSource> {
  const run = runtime.stream(agent, input, ctx);
  const events = run[Symbol.asyncIterator]();
  const first = await events.next();
  const root = first.done === true ? null : first.value.event.step_id;
  async function* pieces(): AsyncGenerator<string> {
    for (let item = first; item.done !== true; item = await events.next()) {
      const event = item.value.event;
      if (event.type === 'token' && event.step_id === root) yield event.t;
    }
  }
  return {
    stepId: root,
    pieces: pieces(),
    outcome: async () => outcomeOf(await run.result),
    stop: () => {
      void events.return?.();
    },
  };
}

/**
 * Starts the front door on `message` (`frontDoor.stream`) and resolves with its first chunk
 * in hand. The answering step is the first whose event the front door reports; the usage is
 * that step's, from its `end` event.
 */
export async function beginFrontDoorStream(
  frontDoor: FrontDoor,
  message: string,
  options: Omit<HandleOptions, 'onEvent'>,
): Promise<CompletionSource> {
  let root: string | null = null;
  let used: BudgetUsage | null = null;
  const chunks = frontDoor.stream(message, {
    ...options,
    onEvent: ({ event }) => {
      root ??= event.step_id;
      if (event.type === 'end' && event.step_id === root) used = event.budget_usage;
    },
  });
  const first = await chunks.next();
  let response: Response | null = null;
  let streamed = '';
  async function* pieces(): AsyncGenerator<string> {
    for (let chunk = first; chunk.done !== true; chunk = await chunks.next()) {
      if (chunk.value.done) {
        response = chunk.value.response ?? null;
      } else if (chunk.value.text !== '') {
        streamed += chunk.value.text;
        yield chunk.value.text;
      }
    }
  }
  return {
    get stepId() {
      return root;
    },
    pieces: pieces(),
    outcome: () =>
      Promise.resolve({
        kind: 'answer',
        text: response?.text ?? streamed,
        usage: used === null ? NO_USAGE : usageOfBudget(used),
      }),
    stop: () => {
      void chunks.return(undefined);
    },
  };
}

/** What {@link writeCompletionStream} needs besides the source. */
export interface CompletionStreamOptions {
  readonly head: CompletionHead;
  readonly includeUsage: boolean;
  /** The response headers (SSE's, the correlation id, the step). */
  readonly headers: Readonly<Record<string, string>>;
  /** Aborts when the client goes away. */
  readonly closed: AbortSignal;
  readonly keepAliveMs: number;
  readonly correlationId: string;
  readonly logger: Logger;
}

/**
 * Writes the stream of `source` to `res` (see the module) and ends the response; resolves
 * how it ended. Never rejects.
 */
export async function writeCompletionStream(
  res: ServerResponse,
  source: CompletionSource,
  options: CompletionStreamOptions,
): Promise<SseEnd> {
  const { closed } = options;
  const frames = new ChunkFrames(options.head, options.includeUsage);
  let lastWrite = Date.now();
  const write = async (frame: string): Promise<boolean> => {
    if (closed.aborted || res.writableEnded) return false;
    lastWrite = Date.now();
    return res.write(frame) || (await drained(res, closed));
  };
  const keepAlive = setInterval(() => {
    // Only between frames, and never while the socket is backed up.
    if (Date.now() - lastWrite >= options.keepAliveMs && !res.writableNeedDrain) {
      void write(': keep-alive\n\n');
    }
  }, options.keepAliveMs);
  keepAlive.unref();
  res.writeHead(200, options.headers);
  res.flushHeaders();
  try {
    if (!(await write(frames.first()))) return stopped(source);
    let streamed = '';
    for await (const piece of source.pieces) {
      streamed += piece;
      if (!(await write(frames.text(piece)))) return stopped(source);
    }
    const outcome = await source.outcome();
    if (outcome.kind === 'failed') {
      await write(errorFrame(openAIErrorReply(outcome.error, options.correlationId).body));
      return 'failed';
    }
    // An answer whose text goes on past its tokens (or a step that streamed none) sends the
    // rest; a step that returned other than what it streamed keeps what it streamed.
    if (outcome.text.length > streamed.length && outcome.text.startsWith(streamed)) {
      if (!(await write(frames.text(outcome.text.slice(streamed.length))))) return stopped(source);
    }
    return (await write(frames.last(outcome.usage))) ? 'ended' : stopped(source);
  } catch (err) {
    options.logger.error(
      { err, correlation_id: options.correlationId },
      'a chat completion stream failed',
    );
    await write(errorFrame(openAIErrorReply(err, options.correlationId).body));
    return 'failed';
  } finally {
    clearInterval(keepAlive);
    if (!res.writableEnded) res.end();
  }
}

function stopped(source: CompletionSource): SseEnd {
  source.stop();
  return 'disconnected';
}
