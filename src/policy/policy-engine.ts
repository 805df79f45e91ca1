/**
 * @module The policy interface (Nerva's, REFERENCE.md): an engine evaluates an action in a
 * context and later records how it went. The runtime asks at three checkpoints — before
 * routing (`route`: rate limits), before invocation (`invoke_agent`: permissions,
 * approvals), and during execution (`engine_call`, `call_tool`, `delegate`, `fs_op`,
 * `store_memory`: budgets and permissions).
 */
import type { BudgetRemaining } from '../context/budget-ledger.js';
import type { ExecContext } from '../context/exec-context.js';

/** What a policy is asked about. */
export type PolicyActionKind =
  'route' | 'invoke_agent' | 'call_tool' | 'delegate' | 'store_memory' | 'engine_call' | 'fs_op';

/** The action a policy evaluates. */
export interface PolicyAction {
  readonly kind: PolicyActionKind;
  /** Who acts: the context's user id, or `anonymous`. */
  readonly subject: string;
  /** What the action is for: an agent, tool or engine name, or a path. */
  readonly target: string;
  /**
   * Facts about the action: for `engine_call` the calling `agent`; when recorded after the
   * call, its `tokens` and `cost_usd`.
   */
  readonly metadata?: Readonly<Record<string, unknown>>;
}

/** Why a decision refuses, for the error the runtime raises. */
export type PolicyDenial = 'policy' | 'rate_limit' | 'budget';

/** What a policy decides (Nerva's fields, and how to act on a refusal or a limit passed). */
export interface PolicyDecision {
  readonly allowed: boolean;
  /** Why it refuses, or what it warns about; `null` for a plain yes. */
  readonly reason: string | null;
  /** The action may go on only once one of `approvers` approves it. */
  readonly requireApproval: boolean;
  readonly approvers: readonly string[];
  /**
   * What the context may still spend: its ledger's remainder (the tightest of its budgets
   * and its ancestors'), tightened by the policy's own budgets (a `cost_per_day`) where
   * they apply; `null` only from a policy that does not say. A non-null `costUsd` means the
   * action is under a cost budget: an engine call to a model without a price is refused.
   */
  readonly budgetRemaining: BudgetRemaining | null;
  /** The rule that decided (`rate_limits.per_user`, `tools.deny`, …), when one did. */
  readonly rule?: string;
  /** When refused: a refusal, a rate limit or a budget. Default `policy`. */
  readonly denial?: PolicyDenial;
  /** When refused for now: how long until trying again makes sense. */
  readonly retryAfterMs?: number;
  /** When allowed: wait this long first (a rate limit with `on_exceed: queue`). */
  readonly delayMs?: number;
  /** When allowed: a step timeout the policy sets (`execution.timeout_seconds`). */
  readonly timeoutMs?: number;
  /** When allowed: the answer may be made cheaper (`on_exceed: degrade`): at most this many tokens. */
  readonly maxTokens?: number;
}

/** Decides on actions; see the module. */
export interface PolicyEngine {
  readonly name: string;
  /** The decision on `action` in `ctx`. Never rejects for a refusal: a refusal is a decision. */
  evaluate(action: PolicyAction, ctx: ExecContext): Promise<PolicyDecision>;
  /** Told how an allowed action went (usage in `action.metadata`), to count it. */
  record(action: PolicyAction, decision: PolicyDecision, ctx: ExecContext): Promise<void>;
  /** Releases what it holds (a Redis connection). */
  close?(): Promise<void>;
}

/** A plain yes. */
export const ALLOW: PolicyDecision = Object.freeze({
  allowed: true,
  reason: null,
  requireApproval: false,
  approvers: Object.freeze([]),
  budgetRemaining: null,
});

/** A refusal by `rule`. */
export function deny(
  rule: string,
  reason: string,
  extra: Partial<Omit<PolicyDecision, 'allowed' | 'reason' | 'rule'>> = {},
): PolicyDecision {
  return { ...ALLOW, ...extra, allowed: false, reason, rule };
}

/**
 * `decision` with what `ctx` may still spend: its ledger's remainder, with `costUsd` no more
 * than `costLeft` (a policy's own cost budget) when given.
 */
export function withRemaining(
  decision: PolicyDecision,
  ctx: ExecContext,
  costLeft: number | null = null,
): PolicyDecision {
  const ledger = ctx.budgetRemaining();
  const cost =
    costLeft === null
      ? ledger.costUsd
      : Math.max(0, ledger.costUsd === null ? costLeft : Math.min(ledger.costUsd, costLeft));
  return { ...decision, budgetRemaining: { ...ledger, costUsd: cost } };
}

/** The subject of `ctx`'s actions: its user, or `anonymous`. */
export function subjectOf(ctx: ExecContext): string {
  return ctx.userId ?? 'anonymous';
}

/** The policy that allows everything: the default of a runtime. */
export const noopPolicy: PolicyEngine = Object.freeze({
  name: 'noop',
  evaluate: (_action: PolicyAction, ctx: ExecContext) => Promise.resolve(withRemaining(ALLOW, ctx)),
  record: () => Promise.resolve(),
});
