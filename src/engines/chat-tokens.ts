/**
 * @module One engine call inside a step: through the budget ledger, costed from the
 * engine's price table, hashed for provenance, traced as a `chat {model}` span.
 */
import type { Tracer } from '@opentelemetry/api';
import type { CallFacts } from '../context/call-facts.js';
import type { ExecContext } from '../context/exec-context.js';
import { isAxonError } from '../errors/axon-error.js';
import { UnpricedModelError } from '../errors/unpriced-model-error.js';
import { defaultTracer, endOperationSpan, startOperationSpan } from '../observability/tracer.js';
import type { ChatRequest, ChatToolCall, Engine, EngineReply } from './chat-request.js';
import { costOf, priceOf } from './price-table.js';
import { modelHash, paramsHash, promptHash } from './request-hash.js';

/** What one engine call produced and used. */
export interface ChatResult {
  /** The tokens joined. */
  readonly text: string;
  readonly toolCalls: readonly ChatToolCall[];
  readonly finishReason: string | null;
  /** The model that answered. */
  readonly model: string;
  readonly tokensIn: number;
  readonly tokensOut: number;
  readonly costUsd: number;
  /** Its determinism facts (NERVE-4012, NERVE-4020); the step's provenance reports them. */
  readonly facts: CallFacts;
}

/** Options of {@link chatTokens}. */
export interface ChatTokensOptions {
  /** Where the `chat {model}` span goes; default the global provider's `axon` tracer. */
  readonly tracer?: Tracer;
  /**
   * A cost budget besides the context's ledger that needs the call's cost (a policy's
   * `cost_per_day`): an unpriced model is then refused too. Default none.
   */
  readonly costBudget?: string;
}

/**
 * Streams `engine`'s answer inside the step of `ctx`. First it reserves the estimate on the
 * context's ledger — prompt tokens, `max_tokens`, and their cost from the engine's price
 * table — so a call that does not fit fails with `BudgetExceededError` before any request
 * is sent. A model the price table does not price is refused with `UnpricedModelError`
 * when the context (or `options.costBudget`) has a cost budget: its cost could not be kept
 * to it. Without one it costs 0. Then it yields the tokens, commits the actual use and cost, records the call's
 * facts on `ctx` (`ctx.lastCall`), and returns a {@link ChatResult}.
 *
 * If the call fails or is aborted after tokens arrived, what was used (the estimated prompt
 * and the tokens so far) is committed; if none arrived, the reservation is released.
 *
 * @example
 * async *handler(input, ctx) {
 *   const r = yield* chatTokens(engine, { messages: [{ role: 'user', content: input.message }] }, ctx);
 *   return r.text;
 * }
 */
export async function* chatTokens(
  engine: Engine,
  request: ChatRequest,
  ctx: ExecContext,
  options: ChatTokensOptions = {},
): AsyncGenerator<string, ChatResult, undefined> {
  const model = request.model ?? engine.defaultModel;
  const price = priceOf(engine.priceTable, model);
  if (price === null) {
    // Fail closed: an unknown price would count as 0 and no cost budget would ever fire.
    const budget =
      ctx.budgetRemaining().costUsd !== null ? 'max_cost_usd' : (options.costBudget ?? null);
    if (budget !== null) {
      throw new UnpricedModelError(engine.name, model, engine.priceTable.version, budget);
    }
  }
  const estimateIn = engine.estimateTokensIn(request);
  const maxOut = request.params?.max_tokens ?? engine.defaultMaxTokens;
  const reservation = await ctx.ledger.claim({
    tokensIn: estimateIn,
    tokensOut: maxOut,
    costUsd: costOf(price, estimateIn, maxOut),
  });
  const span = startOperationSpan(options.tracer ?? defaultTracer(), 'chat', model, ctx.span, {
    'gen_ai.system': engine.name,
    ...(request.seed == null ? {} : { 'gen_ai.request.seed': request.seed }),
  });
  const started = ctx.clock.now();
  let text = '';
  let produced = 0;
  let reply: EngineReply | null = null;
  let failure: unknown = null;
  let costUsd = 0;
  try {
    const stream = engine.stream(request, { signal: ctx.signal });
    for (;;) {
      const r = await stream.next();
      if (r.done) {
        reply = r.value;
        break;
      }
      produced++;
      text += r.value;
      yield r.value;
    }
  } catch (err) {
    failure = err;
    throw err;
  } finally {
    const tokensIn = reply?.tokensIn ?? estimateIn;
    const tokensOut = reply?.tokensOut ?? produced;
    if (reply || produced > 0) {
      costUsd = costOf(price, tokensIn, tokensOut);
      reservation.commit({ tokensIn, tokensOut, costUsd });
    } else {
      reservation.release();
    }
    endOperationSpan(span, {
      tokensIn,
      tokensOut,
      ...(failure === null ? {} : { error: spanError(failure) }),
    });
  }
  const facts: CallFacts = {
    seed: request.seed ?? null,
    promptHash: promptHash(request),
    paramsHash: paramsHash(request, engine),
    engine: engine.name,
    modelHash: modelHash(engine.name, reply.model),
    decodeTimeMs: ctx.clock.now() - started,
    priceTable: engine.priceTable.version,
  };
  ctx.noteCall(facts);
  return {
    text,
    toolCalls: reply.toolCalls,
    finishReason: reply.finishReason,
    model: reply.model,
    tokensIn: reply.tokensIn,
    tokensOut: reply.tokensOut,
    costUsd,
    facts,
  };
}

function spanError(err: unknown): { code: string; message: string } {
  if (isAxonError(err)) return { code: err.code, message: err.message };
  return { code: 'INTERNAL', message: err instanceof Error ? err.message : String(err) };
}
