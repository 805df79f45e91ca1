/**
 * @module An engine call made by a running step (`runtime.chat`): the engine looked up by
 * name, its circuit breaker consulted (POLICY-3002), the call made through `chatTokens`
 * (budgets, cost, hashes), its tokens streamed into the step under backpressure.
 */
import type { Tracer } from '@opentelemetry/api';
import type { ExecContext } from '../context/exec-context.js';
import { chatCallSchema, type ChatCall, type ChatCallOptions } from '../engines/chat-call.js';
import { chatTokens, type ChatResult } from '../engines/chat-tokens.js';
import { DEFAULT_ENGINE, type EngineRegistry } from '../engines/engine-registry.js';
import { BudgetExceededError } from '../errors/budget-exceeded-error.js';
import { CancelledError } from '../errors/cancelled-error.js';
import { fromErrorPayload } from '../errors/remote-error.js';
import { SchemaViolationError } from '../errors/schema-violation-error.js';
import { UnpricedModelError } from '../errors/unpriced-model-error.js';
import { zodIssues } from '../tools/zod-issues.js';
import { refuseByBreaker } from '../supervisors/breaker-guard.js';
import type { BreakerTable } from '../supervisors/breaker-table.js';
import type { CallRecording } from '../store/records.js';
import type { PolicyGate } from '../runs/policy-gate.js';
import {
  engineInputs,
  engineOutput,
  recordsFailure,
  runCallsOf,
  type RecordedEngineOutput,
  type RunCalls,
} from '../runs/run-calls.js';

/** What an engine call needs from its runtime. */
export interface EngineCallDeps {
  readonly engines: EngineRegistry;
  readonly breakers: BreakerTable;
  readonly tracer: Tracer;
  /** Asked before every call (checkpoint 3), told its use after. */
  readonly gate: PolicyGate;
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
  const streaming = options.stream ?? true;
  // A malformed call is the caller's fault: refused before the engine (and its breaker)
  // hears of it.
  const parsedCall = chatCallSchema.safeParse(call);
  if (!parsedCall.success) throw new SchemaViolationError('chat call', zodIssues(parsedCall.error));
  const calls = runCallsOf(ctx);
  // A run's engine calls get the run's seed unless they name one.
  let request: ChatCall =
    calls && calls.seed !== null && call.seed == null ? { ...call, seed: calls.seed } : call;
  const engineName = request.engine ?? DEFAULT_ENGINE;
  // Checkpoint 3, during execution: every engine call (budgets per agent, pauses).
  const agent = ctx.path.at(-1) ?? ctx.name;
  const checked = deps.gate.applies(ctx)
    ? await deps.gate.check('engine_call', engineName, ctx, { metadata: { agent } })
    : null;
  const cap = checked?.decision.maxTokens;
  if (cap !== undefined && (request.params?.max_tokens ?? Infinity) > cap) {
    // `on_exceed: degrade`: the answer is made shorter, not refused.
    request = { ...request, params: { ...request.params, max_tokens: cap } };
  }
  if (calls?.replaying) return replayChat(deps, calls, request, ctx, streaming);
  const engine = deps.engines.get(engineName);
  const key = calls?.recording ? calls.next(ctx.path) : null;
  // A step going on after an approval: the calls it made before are not made again.
  // (No await on the usual path: only a resumed step has calls of its own to serve.)
  const own = key && calls?.resumed ? await calls.own(key) : null;
  if (own) return serveChat(own, request, ctx, streaming);
  const breaker = deps.breakers.get('engine', engine.name);
  if (breaker && !breaker.tryAcquire()) refuseByBreaker(breaker, ctx.stream);
  const recorded: string[] | null = key ? [] : null;
  let result: ChatResult | null = null;
  try {
    // A policy that knows what is left to spend keeps a cost budget: it needs a price too.
    const policyCost = checked?.decision.budgetRemaining?.costUsd;
    const tokens = chatTokens(engine, request, ctx, {
      tracer: deps.tracer,
      ...(policyCost === null || policyCost === undefined ? {} : { costBudget: 'cost_per_day' }),
    });
    for (;;) {
      const r = await tokens.next();
      if (r.done) {
        result = r.value;
        break;
      }
      recorded?.push(r.value);
      if (streaming) await streamToken(ctx, r.value);
    }
    breaker?.success();
  } catch (err) {
    // A call the caller cancelled, or that never went out, says nothing about the engine.
    if (
      err instanceof CancelledError ||
      err instanceof BudgetExceededError ||
      err instanceof UnpricedModelError ||
      ctx.isCancelled()
    ) {
      breaker?.release();
    } else {
      breaker?.failure();
    }
    // A budget that runs out is a supervisor's matter too (POLICY-3002): the step says so.
    if (err instanceof BudgetExceededError && !ctx.stream.closed) {
      ctx.stream.escalate({ reason: err.message, target: `budget:${err.limit}` });
    }
    if (err instanceof UnpricedModelError && !ctx.stream.closed) {
      ctx.stream.escalate({ reason: err.message, target: `price:${err.engine}/${err.model}` });
    }
    if (calls && key && recorded && recordsFailure(err, ctx)) {
      const inputs = engineInputs(engine, request, calls.replica);
      await calls.record(key, 'engine', engine.name, inputs, engineOutput(recorded, null, err));
    }
    throw err;
  }
  if (calls && key && recorded) {
    const inputs = engineInputs(engine, request, calls.replica, result.facts);
    await calls.record(key, 'engine', engine.name, inputs, engineOutput(recorded, result, null));
  }
  if (checked) {
    deps.gate.record(checked, ctx, {
      tokens: result.tokensIn + result.tokensOut,
      cost_usd: result.costUsd,
    });
  }
  if (streaming) emitMetrics(ctx, result);
  return result;
}

async function streamToken(ctx: ExecContext, token: string): Promise<void> {
  ctx.stream.push(token);
  const wait = ctx.stream.ready();
  if (wait) await wait;
}

function emitMetrics(
  ctx: ExecContext,
  result: Pick<ChatResult, 'tokensIn' | 'tokensOut' | 'costUsd'>,
): void {
  ctx.stream.emit({
    type: 'metrics',
    tokens_in: result.tokensIn,
    tokens_out: result.tokensOut,
    cost_usd: result.costUsd,
  });
}

/**
 * An engine call of a `replay` or `strict_replay` run, served from the recorded run: no
 * engine is called (NERVE-4021). In `strict_replay` its determinism inputs are checked first
 * (NERVE-4022), which needs the engine registered.
 */
async function replayChat(
  deps: EngineCallDeps,
  calls: RunCalls,
  request: ChatCall,
  ctx: ExecContext,
  streaming: boolean,
): Promise<ChatResult> {
  const key = calls.next(ctx.path);
  const rec = await calls.recorded(key, 'engine', () =>
    engineInputs(deps.engines.get(request.engine ?? DEFAULT_ENGINE), request, calls.replica),
  );
  return serveChat(rec, request, ctx, streaming);
}

/**
 * An engine call answered from its recording `rec`: its recorded use goes through the
 * budget ledger as if it had been made, its tokens stream into the step as they were
 * recorded, and a recorded failure fails it the same way after them.
 */
async function serveChat(
  rec: CallRecording,
  request: ChatCall,
  ctx: ExecContext,
  streaming: boolean,
): Promise<ChatResult> {
  const out = rec.output as RecordedEngineOutput;
  const use = { tokensIn: out.tokens_in, tokensOut: out.tokens_out, costUsd: out.cost_usd };
  const reservation = await ctx.ledger.claim(use);
  try {
    for (const token of out.tokens) if (streaming) await streamToken(ctx, token);
  } catch (err) {
    reservation.release();
    throw err;
  }
  reservation.commit(use);
  if (out.facts) ctx.noteCall(out.facts);
  if (out.error) throw fromErrorPayload(out.error);
  const result: ChatResult = {
    text: out.tokens.join(''),
    toolCalls: out.tool_calls,
    finishReason: out.finish_reason,
    model: out.model,
    tokensIn: out.tokens_in,
    tokensOut: out.tokens_out,
    costUsd: out.cost_usd,
    facts: out.facts ?? {
      seed: request.seed ?? null,
      promptHash: '',
      paramsHash: '',
      engine: rec.name,
      modelHash: '',
      decodeTimeMs: 0,
      priceTable: null,
    },
  };
  if (streaming) emitMetrics(ctx, result);
  return result;
}
