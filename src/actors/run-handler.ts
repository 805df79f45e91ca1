/**
 * @module Runs an agent handler wherever it is placed: a function's value is its output; a
 * generator's strings become tokens and its objects events, with the producer held while
 * its sink asks it to wait.
 */
import type { ExecContext } from '../context/exec-context.js';
import type { SinkEvent } from '../context/stream-sink.js';
import type { AgentHandler, AgentRuntime } from './agent-runtime.js';
import type { AgentInput } from './agent-result.js';

/** Where a generator handler's tokens and events go. */
export interface HandlerSink {
  token(text: string): void;
  event(event: SinkEvent): void;
  /** Resolves when the producer may go on (backpressure); `null` when it may at once. */
  ready(): Promise<void> | null;
}

function isAsyncGenerator(
  value: unknown,
): value is AsyncGenerator<string | SinkEvent, unknown, undefined> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { next?: unknown }).next === 'function' &&
    Symbol.asyncIterator in value
  );
}

/**
 * Runs `handler` and resolves its output. With no return value, a generator's output is its
 * tokens joined. Once the context is aborted, nothing more is pulled from the generator and
 * nothing more is emitted.
 */
export async function runHandler(
  handler: AgentHandler,
  input: AgentInput,
  ctx: ExecContext,
  runtime: AgentRuntime,
  sink: HandlerSink,
): Promise<unknown> {
  const returned: unknown = handler(input, ctx, runtime);
  if (!isAsyncGenerator(returned)) return await returned;
  const gen = returned;
  const texts: string[] = [];
  let done = false;
  try {
    for (;;) {
      if (ctx.isCancelled()) throw ctx.cancelReason;
      const r = await gen.next();
      if (r.done) {
        done = true;
        return r.value === undefined ? texts.join('') : r.value;
      }
      // A token produced after a cancel is refused here rather than emitted.
      if (ctx.isCancelled()) throw ctx.cancelReason;
      const v = r.value;
      if (typeof v === 'string') {
        sink.token(v);
        texts.push(v);
      } else {
        sink.event(v);
      }
      const wait = sink.ready();
      if (wait) await wait;
    }
  } finally {
    if (!done) {
      // Give the generator its `finally` blocks; its own failure there is not ours to report.
      await gen.return(undefined).catch(() => undefined);
    }
  }
}
