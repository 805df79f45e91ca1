/** @module Streaming an engine call inside a step, through the budget ledger. */
import type { ExecContext } from '../context/exec-context.js';
import type { ChatRequest, Engine } from './chat-request.js';

/**
 * Streams `engine`'s answer inside the step of `ctx`: reserves the estimate (prompt tokens,
 * `max_tokens`) on the context's ledger first — a call that does not fit fails with
 * `BudgetExceededError` before any request — then yields the tokens, commits the actual
 * use, and returns the whole text. If the call fails or is aborted after tokens arrived,
 * what was used (the prompt and the tokens so far) is committed; if none arrived, the
 * reservation is released.
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
  let produced = 0;
  try {
    const stream = engine.stream(request, { signal: ctx.signal });
    for (;;) {
      const r = await stream.next();
      if (r.done) {
        reservation.commit(r.value);
        return text;
      }
      produced++;
      text += r.value;
      yield r.value;
    }
  } finally {
    // No-ops once committed above; otherwise account for what the engine did produce.
    if (produced > 0) {
      reservation.commit({
        tokensIn: reservation.amounts.tokensIn,
        tokensOut: produced,
        costUsd: 0,
      });
    } else {
      reservation.release();
    }
  }
}
