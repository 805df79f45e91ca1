/**
 * @module The adaptive policy (Nerva's): past a cost threshold within a window it throttles
 * (each engine and tool call waits first), past a higher one it pauses (they are refused
 * until the window frees). Below both, another engine decides.
 */
import { systemClock, type Clock } from '../context/clock.js';
import type { ExecContext } from '../context/exec-context.js';
import {
  deny,
  noopPolicy,
  type PolicyAction,
  type PolicyDecision,
  type PolicyEngine,
  withRemaining,
} from './policy-engine.js';

/** Options of {@link adaptivePolicy}. */
export interface AdaptivePolicyOptions {
  /** Spend (USD) within the window past which calls are slowed. */
  readonly throttleAtUsd: number;
  /** Spend (USD) within the window past which calls are refused. */
  readonly pauseAtUsd: number;
  /** The window the spend is summed over; default one hour. */
  readonly windowMs?: number;
  /** How long a throttled call waits; default 1 000 ms. */
  readonly throttleDelayMs?: number;
  /** The engine that decides below the thresholds; default {@link noopPolicy}. */
  readonly inner?: PolicyEngine;
  readonly clock?: Clock;
}

const GATED: ReadonlySet<string> = new Set([
  'engine_call',
  'call_tool',
  'invoke_agent',
  'delegate',
]);

/**
 * An adaptive policy engine; see the module. Spend is what `record` is told of engine calls
 * (`metadata.cost_usd`), over all agents of the runtime.
 *
 * @example
 * const policy = adaptivePolicy({ throttleAtUsd: 5, pauseAtUsd: 10, inner: yamlPolicy({ file: 'policy.yaml' }) });
 */
export function adaptivePolicy(options: AdaptivePolicyOptions): PolicyEngine {
  const { throttleAtUsd, pauseAtUsd } = options;
  if (!(throttleAtUsd >= 0 && pauseAtUsd >= throttleAtUsd)) {
    throw new RangeError(
      `adaptivePolicy: need 0 <= throttleAtUsd <= pauseAtUsd, got ${throttleAtUsd} and ${pauseAtUsd}`,
    );
  }
  const windowMs = options.windowMs ?? 3_600_000;
  const delayMs = options.throttleDelayMs ?? 1_000;
  const inner = options.inner ?? noopPolicy;
  const clock = options.clock ?? systemClock;
  let spend: { at: number; cost: number }[] = [];
  const spent = (): number => {
    const since = clock.now() - windowMs;
    spend = spend.filter((s) => s.at > since);
    return spend.reduce((a, s) => a + s.cost, 0);
  };
  return {
    name: 'adaptive',
    async evaluate(action: PolicyAction, ctx: ExecContext): Promise<PolicyDecision> {
      if (GATED.has(action.kind)) {
        const total = spent();
        // What may be spent before the pause: a cost budget of every gated action.
        const costLeft = pauseAtUsd - total;
        if (total >= pauseAtUsd) {
          const frees = (spend[0]?.at ?? clock.now()) + windowMs;
          const refusal = deny(
            'adaptive.pause',
            `spend $${total.toFixed(4)} in the window is past $${pauseAtUsd}: paused`,
            {
              retryAfterMs: Math.max(1, frees - clock.now()),
            },
          );
          return withRemaining(refusal, ctx, costLeft);
        }
        const decision = await inner.evaluate(action, ctx);
        const tighter = Math.min(costLeft, decision.budgetRemaining?.costUsd ?? Infinity);
        if (total >= throttleAtUsd && decision.allowed) {
          const throttled = {
            ...decision,
            reason: `spend $${total.toFixed(4)} in the window is past $${throttleAtUsd}: throttled`,
            rule: 'adaptive.throttle',
            delayMs: Math.max(decision.delayMs ?? 0, delayMs),
          };
          return withRemaining(throttled, ctx, tighter);
        }
        return withRemaining(decision, ctx, tighter);
      }
      const decision = await inner.evaluate(action, ctx);
      return decision.budgetRemaining ? decision : withRemaining(decision, ctx);
    },
    async record(action, decision, ctx) {
      if (action.kind === 'engine_call') {
        const cost = Number(action.metadata?.['cost_usd'] ?? 0);
        if (cost > 0) spend.push({ at: clock.now(), cost });
      }
      await inner.record(action, decision, ctx);
    },
    async close() {
      await inner.close?.();
    },
  };
}
