/**
 * @module An engine call made by a running step (`runtime.chat`): the engine looked up by
 * name, its circuit breaker consulted (POLICY-3002), the call made through `chatTokens`
 * (budgets, cost, hashes), its tokens streamed into the step under backpressure.
 */
import type { Tracer } from '@opentelemetry/api';
import type { ExecContext } from '../context/exec-context.js';
import type { ChatRequest } from '../engines/chat-request.js';
import { chatTokens, type ChatResult } from '../engines/chat-tokens.js';
import { DEFAULT_ENGINE, type EngineRegistry } from '../engines/engine-registry.js';
import { BudgetExceededError } from '../errors/budget-exceeded-error.js';
import { CancelledError } from '../errors/cancelled-error.js';
import { refuseByBreaker } from '../supervisors/breaker-guard.js';
import type { BreakerTable } from '../supervisors/breaker-table.js';

/** A chat request to one of the runtime's engines. */
export interface ChatCall extends ChatRequest {
  /** The registered engine to call; default `scripted`. */
  readonly engine?: string;
}

/** Options of `runtime.chat`. */
export interface ChatCallOptions {
  /**
   * Whether the answer's tokens go into the calling step's stream (default `true`); with
   * `false` they are only in the result (an agent thinking to itself).
   */
  readonly stream?: boolean;
}

/** What an engine call needs from its runtime. */
export interface EngineCallDeps {
  readonly engines: EngineRegistry;
  readonly breakers: BreakerTable;
  readonly tracer: Tracer;
}

/**
 * Calls an engine inside the step of `ctx`. Rejects with `NotFoundError` for an unknown
 * engine, `CircuitOpenError` (after an `escalation` on the step) while the engine's breaker
 * is open, `BudgetExceededError` before any request when the call does not fit, and the
 * engine's own typed errors.
 */
export async function chatInStep(
  deps: EngineCallDeps,
  call: ChatCall,
  ctx: ExecContext,
  options: ChatCallOptions = {},
): Promise<ChatResult> {
  const engine = deps.engines.get(call.engine ?? DEFAULT_ENGINE);
  const breaker = deps.breakers.get('engine', engine.name);
  if (breaker && !breaker.tryAcquire()) refuseByBreaker(breaker, ctx.stream);
  const streaming = options.stream ?? true;
  try {
    const tokens = chatTokens(engine, call, ctx, { tracer: deps.tracer });
    let result: ChatResult;
    for (;;) {
      const r = await tokens.next();
      if (r.done) {
        result = r.value;
        break;
      }
      if (!streaming) continue;
      ctx.stream.push(r.value);
      const wait = ctx.stream.ready();
      if (wait) await wait;
    }
    breaker?.success();
    if (streaming) {
      ctx.stream.emit({
        type: 'metrics',
        tokens_in: result.tokensIn,
        tokens_out: result.tokensOut,
        cost_usd: result.costUsd,
      });
    }
    return result;
  } catch (err) {
    // A call the caller cancelled, or that never went out, says nothing about the engine.
    if (err instanceof CancelledError || err instanceof BudgetExceededError || ctx.isCancelled()) {
      breaker?.release();
    } else {
      breaker?.failure();
    }
    throw err;
  }
}
