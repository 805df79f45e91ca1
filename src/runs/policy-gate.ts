/**
 * @module Where the runtime asks its policy (`src/policy/`): at the three checkpoints of seed
 * 000 — before routing (`route`), before invocation (`invoke_agent`), during execution
 * (`engine_call`, `call_tool`, `delegate`, `fs_op`). The server's policy decides first; the
 * run's own `policy` (API.md: `tools`, `max_depth`, `steps_per_minute`) can only refuse more.
 * A refusal is a typed error and, during execution, an `escalation` on the calling step
 * (POLICY-3002); nothing refused runs. A call that needs an approval waits for it with its
 * step suspended (`approvals.ts`).
 */
import type { Clock } from '../context/clock.js';
import type { ExecContext } from '../context/exec-context.js';
import { BudgetExceededError, type BudgetLimit } from '../errors/budget-exceeded-error.js';
import { PolicyDeniedError } from '../errors/policy-denied-error.js';
import { RateLimitedError } from '../errors/rate-limited-error.js';
import type { Logger } from '../observability/logger.js';
import {
  ALLOW,
  deny,
  noopPolicy,
  subjectOf,
  type PolicyAction,
  type PolicyActionKind,
  type PolicyDecision,
  type PolicyEngine,
} from '../policy/policy-engine.js';
import type { RateLimiter } from '../policy/rate-limiter.js';
import type { RunRecord } from '../store/records.js';
import { awaitApproval, type ApprovalDeps } from './approval-gate.js';
import { runCallsOf } from './run-calls.js';

/** A run's own policy (API.md), as stored with the run. */
interface RunPolicy {
  readonly tools?: { readonly allow?: readonly string[] | null; readonly deny?: readonly string[] };
  readonly max_depth?: number;
  readonly steps_per_minute?: number;
}

/** What the gate needs from the runtime. */
export interface PolicyGateDeps extends ApprovalDeps {
  readonly policy: PolicyEngine;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Counts runs' `steps_per_minute`. */
  readonly limiter: RateLimiter;
}

/** Asks the policy; see the module. */
export class PolicyGate {
  readonly #deps: PolicyGateDeps;
  /** Contexts whose request passed the `route` checkpoint already (the front door's). */
  readonly #routed = new WeakSet<ExecContext>();

  constructor(deps: PolicyGateDeps) {
    this.#deps = deps;
  }

  /**
   * Checkpoint 1 for a request coming in through a front door: `route` on `target` in `ctx`,
   * once; an invocation under `ctx` then does not ask it again (see {@link routed}).
   */
  async admit(target: string, ctx: ExecContext): Promise<void> {
    if (this.#routed.has(ctx)) return;
    if (this.applies(ctx)) await this.check('route', target, ctx);
    this.#routed.add(ctx);
  }

  /** True once `ctx`'s request passed {@link admit}. */
  routed(ctx: ExecContext): boolean {
    return this.#routed.has(ctx);
  }

  /** True when the runtime's policy is `noopPolicy`: only run policies can refuse. */
  get idle(): boolean {
    return this.#deps.policy === noopPolicy;
  }

  /**
   * False when there is nothing to ask about `ctx`'s actions (the noop policy, and no run
   * policy above `ctx`): the hot path then skips the gate without an await.
   */
  applies(ctx: ExecContext): boolean {
    return !this.idle || runCallsOf(ctx) !== null;
  }

  /**
   * Evaluates `kind` on `target` in `ctx` and acts on the decision: throws the typed error of
   * a refusal (after an `escalation` on `ctx`'s step during execution), waits a decision's
   * `delayMs`, logs a warning. Resolves the decision, to hand to {@link record} afterwards.
   */
  async check(
    kind: PolicyActionKind,
    target: string,
    ctx: ExecContext,
    options: {
      readonly metadata?: Readonly<Record<string, unknown>>;
      /** Where a refusal's escalation goes; default `ctx`'s step. */
      readonly escalateTo?: ExecContext;
    } = {},
  ): Promise<{ action: PolicyAction; decision: PolicyDecision }> {
    const metadata = options.metadata;
    const action: PolicyAction = {
      kind,
      subject: subjectOf(ctx),
      target,
      ...(metadata ? { metadata } : {}),
    };
    let decision = this.idle ? ALLOW : await this.#deps.policy.evaluate(action, ctx);
    if (decision.allowed) decision = this.#runPolicy(action, ctx) ?? decision;
    if (!decision.allowed) {
      // During execution the refusal is also the calling step's escalation (POLICY-3002).
      const at = options.escalateTo ?? ctx;
      if (kind !== 'route' && at.stepId !== null) {
        at.stream.escalate({
          reason: decision.reason ?? 'policy denied',
          target: `${kind}:${target}`,
        });
      }
      throw refusal(action, decision);
    }
    if (decision.reason !== null) {
      this.#deps.logger.warn(
        { action: kind, target, rule: decision.rule, reason: decision.reason },
        'policy: a limit was passed',
      );
    }
    // Goes on once approved; a pending approval suspends the submitted step (approvals.ts).
    if (decision.requireApproval) {
      await awaitApproval(this.#deps, action, decision, ctx, options.escalateTo ?? ctx);
    }
    if (decision.delayMs !== undefined && decision.delayMs > 0) {
      await sleep(this.#deps.clock, decision.delayMs, ctx);
    }
    return { action, decision };
  }

  /** Tells the policy how an allowed action went; a policy's failure is logged, never thrown. */
  record(
    checked: { action: PolicyAction; decision: PolicyDecision },
    ctx: ExecContext,
    metadata?: Readonly<Record<string, unknown>>,
  ): void {
    if (this.idle) return;
    const action = metadata
      ? { ...checked.action, metadata: { ...checked.action.metadata, ...metadata } }
      : checked.action;
    this.#deps.policy.record(action, checked.decision, ctx).catch((err: unknown) => {
      this.#deps.logger.error({ err, action: action.kind }, 'policy could not record an action');
    });
  }

  /**
   * A run's `steps_per_minute` (API.md): a submission past it is refused with
   * `RATE_LIMITED` and a retry-after.
   */
  async admitStep(run: RunRecord): Promise<void> {
    const limit = (run.policy as RunPolicy).steps_per_minute;
    if (limit === undefined) return;
    const verdict = await this.#deps.limiter.hit(`run-steps:${run.run_id}`, limit, 60_000);
    if (!verdict.allowed) {
      throw new RateLimitedError(
        `run ${run.run_id} is past its ${limit} steps per minute`,
        verdict.retryAfterMs,
      );
    }
  }

  /** The refusal of the run's own policy, if it refuses (it never allows what the server refused). */
  #runPolicy(action: PolicyAction, ctx: ExecContext): PolicyDecision | null {
    const policy = runCallsOf(ctx)?.policy as RunPolicy | undefined;
    if (!policy) return null;
    if (action.kind === 'call_tool' && policy.tools) {
      const { allow, deny: denied } = policy.tools;
      if (allow != null && !allow.includes(action.target)) {
        return deny('run.policy.tools.allow', `tool "${action.target}" is not allowed in this run`);
      }
      if (denied?.includes(action.target)) {
        return deny('run.policy.tools.deny', `tool "${action.target}" is denied in this run`);
      }
    }
    if (
      (action.kind === 'invoke_agent' || action.kind === 'delegate') &&
      policy.max_depth !== undefined &&
      ctx.depth + 1 > policy.max_depth
    ) {
      return deny(
        'run.policy.max_depth',
        `depth ${ctx.depth + 1} for "${action.target}" is past the run's max_depth ${policy.max_depth}`,
      );
    }
    return null;
  }
}

/** The typed error of a refusal. */
function refusal(action: PolicyAction, decision: PolicyDecision): Error {
  const reason = decision.reason ?? 'refused by the policy';
  const rule = decision.rule ?? 'policy';
  switch (decision.denial) {
    case 'rate_limit':
      return new RateLimitedError(reason, decision.retryAfterMs ?? null, { details: { rule } });
    case 'budget': {
      const limit: BudgetLimit = rule.endsWith('cost_per_day') ? 'cost_per_day' : 'tokens_per_hour';
      // The policy's budgets are per agent: the ledger is the calling agent's.
      const agent = action.metadata?.['agent'];
      const ledger = `agent ${typeof agent === 'string' ? agent : action.target}`;
      return new BudgetExceededError(limit, ledger, 0, 0, {
        message: `budget exceeded: ${reason}`,
        details: {
          rule,
          reason,
          ...(decision.retryAfterMs === undefined ? {} : { retry_after_ms: decision.retryAfterMs }),
        },
      });
    }
    default:
      return new PolicyDeniedError(action.kind, action.target, rule, reason, {
        ...(decision.retryAfterMs === undefined
          ? {}
          : { details: { retry_after_ms: decision.retryAfterMs } }),
      });
  }
}

/** Waits `ms` on `clock`, or until `ctx` is cancelled (then rejects with its reason). */
function sleep(clock: Clock, ms: number, ctx: ExecContext): Promise<void> {
  return new Promise((resolve, reject) => {
    let off: () => void = () => undefined;
    const handle = clock.setTimeout(() => {
      off();
      resolve();
    }, ms);
    off = ctx.onCancel((reason) => {
      clock.clearTimeout(handle);
      reject(reason instanceof Error ? reason : new Error(String(reason)));
    });
  });
}
