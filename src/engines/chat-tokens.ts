/** @module Streaming an engine call inside a step, through the budget ledger. */
import type { ExecContext } from '../context/exec-context.js';
import type { ChatRequest, Engine } from './chat-request.js';

/**
 * Streams `engine`'s answer inside the step of `ctx`: reserves the estimate (prompt tokens,
 * `max_tokens`) on the context's ledger first — a call that does not fit fails with
 * `BudgetExceededError` before any request — then yields the tokens, commits the actual
 * use, and returns the whole text. On failure or abort the reservation is released.
 *
 * @example
 * async *handler(input, ctx) {
 *   return yield* chatTokens(engine, { messages: [{ role: 'user', content: input.message }] }, ctx);
 * }
 */
export async function* chatTokens(
  engine: Engine,
  request: ChatRequest,
  ctx: ExecContext,
): AsyncGenerator<string, string, undefined> {
  const reservation = ctx.ledger.reserve({
    tokensIn: engine.estimateTokensIn(request),
    tokensOut: request.params?.max_tokens ?? engine.defaultMaxTokens,
    costUsd: 0,
  });
  let text = '';
  try {
    const stream = engine.stream(request, { signal: ctx.signal });
    for (;;) {
      const r = await stream.next();
      if (r.done) {
        reservation.commit(r.value);
        return text;
      }
      text += r.value;
      yield r.value;
    }
  } finally {
    reservation.release();
  }
}
