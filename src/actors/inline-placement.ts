/** @module Inline placement: run an agent's handler on the caller's thread. */
import type { ExecContext } from '../context/exec-context.js';
import type { SinkEvent } from '../context/stream-sink.js';
import type { AgentDefinition, AgentRuntime } from './agent-runtime.js';
import type { AgentInput } from './agent-result.js';
import type { StepActor } from './step-actor.js';

/** Accepted-but-unlogged events past which a streaming handler waits for the log. */
const HIGH_WATER = 256;

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
 * Runs `agent`'s handler inline and resolves its output. A generator handler's strings
 * become tokens and its objects events; with no return value the output is the tokens
 * joined. Once the context is aborted, nothing more is pulled from the generator and
 * nothing more is emitted.
 */
export async function executeInline(
  agent: AgentDefinition,
  input: AgentInput,
  ctx: ExecContext,
  step: StepActor,
  runtime: AgentRuntime,
): Promise<unknown> {
  const returned: unknown = agent.handler(input, ctx, runtime);
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
        step.tokens([v]);
        texts.push(v);
      } else {
        step.emit(v);
      }
      if (step.backlog >= HIGH_WATER) await step.drain();
    }
  } finally {
    if (!done) {
      // Give the generator its `finally` blocks; its own failure there is not ours to report.
      await gen.return(undefined).catch(() => undefined);
    }
  }
}
