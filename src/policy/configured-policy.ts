/**
 * @module The policy engine of a configuration (`policy-config.ts`; a YAML file's, or an
 * object's): per-user rate limits, per-agent token and cost budgets per hour and day,
 * approvals, execution limits and a tool allow/deny list.
 */
import { systemClock, type Clock } from '../context/clock.js';
import type { ExecContext } from '../context/exec-context.js';
import {
  loadPolicyYaml,
  parsePolicyConfig,
  type PolicyConfig,
  type PolicyConfigInput,
} from './policy-config.js';
import {
  ALLOW,
  deny,
  type PolicyAction,
  type PolicyDecision,
  type PolicyEngine,
  withRemaining,
} from './policy-engine.js';
import { memoryRateLimiter, type RateLimiter } from './rate-limiter.js';

const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;

/** Options of {@link configuredPolicy}. */
export interface ConfiguredPolicyOptions {
  readonly clock?: Clock;
  /** Where per-user rate limits are counted; default this process (`redisRateLimiter` to share them). */
  readonly rateLimiter?: RateLimiter;
}

interface Spend {
  readonly at: number;
  readonly tokens: number;
  readonly cost: number;
}

/** A {@link PolicyEngine} of a configuration; see {@link configuredPolicy}. */
class ConfiguredPolicy implements PolicyEngine {
  readonly name = 'configured';
  readonly config: PolicyConfig;
  readonly #clock: Clock;
  readonly #limiter: RateLimiter;
  /** Each agent's engine use, oldest first (kept for a day). */
  readonly #spend = new Map<string, Spend[]>();
  /** Agents paused by `on_exceed: pause`, until when. */
  readonly #paused = new Map<string, number>();
  /** Tool calls made under each invocation's context. */
  readonly #toolCalls = new WeakMap<ExecContext, number>();

  constructor(config: PolicyConfig, options: ConfiguredPolicyOptions) {
    this.config = config;
    this.#clock = options.clock ?? systemClock;
    this.#limiter = options.rateLimiter ?? memoryRateLimiter(this.#clock);
  }

  async evaluate(action: PolicyAction, ctx: ExecContext): Promise<PolicyDecision> {
    if (action.kind === 'engine_call') {
      const { decision, costLeft } = this.#engine(action, ctx);
      return withRemaining(decision, ctx, costLeft);
    }
    return withRemaining(await this.#decide(action, ctx), ctx);
  }

  async #decide(action: PolicyAction, ctx: ExecContext): Promise<PolicyDecision> {
    switch (action.kind) {
      case 'route':
        return this.#route(action);
      case 'invoke_agent':
        return this.#invoke(action, ctx);
      case 'delegate':
        return this.#depth(action, ctx) ?? ALLOW;
      case 'call_tool':
        return this.#tool(action, ctx);
      default:
        return ALLOW;
    }
  }

  record(action: PolicyAction, decision: PolicyDecision, ctx: ExecContext): Promise<void> {
    if (action.kind === 'engine_call' && decision.allowed) {
      const m = action.metadata ?? {};
      const tokens = Number(m['tokens'] ?? 0);
      const cost = Number(m['cost_usd'] ?? 0);
      const agent = agentOf(action, ctx);
      const list = this.#spend.get(agent) ?? [];
      list.push({ at: this.#clock.now(), tokens, cost });
      this.#spend.set(agent, list);
    }
    return Promise.resolve();
  }

  async close(): Promise<void> {
    await this.#limiter.close?.();
  }

  async #route(action: PolicyAction): Promise<PolicyDecision> {
    const limit = this.config.rate_limits?.per_user;
    if (!limit) return ALLOW;
    if (limit.on_exceed === 'queue') {
      // Past the limit a request waits for its slot, which is counted now: queued requests
      // go in order and never more than the limit in a window.
      const delayMs = await this.#limiter.reserve(
        `user:${action.subject}`,
        limit.requests_per_minute,
        MINUTE,
      );
      if (delayMs === 0) return ALLOW;
      return {
        ...ALLOW,
        reason: `user "${action.subject}" is past ${limit.requests_per_minute} requests per minute: queued ${delayMs} ms`,
        rule: 'rate_limits.per_user',
        delayMs,
      };
    }
    const verdict = await this.#limiter.hit(
      `user:${action.subject}`,
      limit.requests_per_minute,
      MINUTE,
    );
    if (verdict.allowed) return ALLOW;
    const reason = `user "${action.subject}" is past ${limit.requests_per_minute} requests per minute`;
    const rule = 'rate_limits.per_user';
    switch (limit.on_exceed) {
      case 'warn':
        return { ...ALLOW, reason, rule };
      default:
        return deny(rule, reason, { denial: 'rate_limit', retryAfterMs: verdict.retryAfterMs });
    }
  }

  #invoke(action: PolicyAction, ctx: ExecContext): PolicyDecision {
    const paused = this.#pausedUntil(action.target);
    if (paused !== null) {
      return deny('budgets.per_agent', `agent "${action.target}" is paused: its budget ran out`, {
        retryAfterMs: paused - this.#clock.now(),
      });
    }
    const depth = this.#depth(action, ctx);
    if (depth) return depth;
    const approvers = this.config.approvals?.agents?.[action.target];
    const timeout = this.config.execution?.timeout_seconds;
    return {
      ...ALLOW,
      ...(approvers ? { requireApproval: true, approvers, rule: 'approvals.agents' } : {}),
      ...(timeout === undefined ? {} : { timeoutMs: timeout * 1000 }),
    };
  }

  /** `execution.max_depth`: the invoked agent's depth is the caller's + 1. */
  #depth(action: PolicyAction, ctx: ExecContext): PolicyDecision | null {
    const max = this.config.execution?.max_depth;
    if (max === undefined || ctx.depth + 1 <= max) return null;
    return deny(
      'execution.max_depth',
      `depth ${ctx.depth + 1} for "${action.target}" is past the policy's max_depth ${max}`,
    );
  }

  #tool(action: PolicyAction, ctx: ExecContext): PolicyDecision {
    const tools = this.config.tools;
    if (tools) {
      const allowed = tools.allow == null || tools.allow.includes(action.target);
      if (!allowed || tools.deny?.includes(action.target)) {
        return deny(
          allowed ? 'tools.deny' : 'tools.allow',
          `tool "${action.target}" is not allowed`,
        );
      }
    }
    const max = this.config.execution?.max_tool_calls_per_invocation;
    if (max !== undefined) {
      const made = (this.#toolCalls.get(ctx) ?? 0) + 1;
      this.#toolCalls.set(ctx, made);
      if (made > max) {
        return deny(
          'execution.max_tool_calls_per_invocation',
          `call ${made} of "${ctx.name}" is past the policy's ${max} tool calls per invocation`,
        );
      }
    }
    const approvers = this.config.approvals?.tools?.[action.target];
    return approvers
      ? { ...ALLOW, requireApproval: true, approvers, rule: 'approvals.tools' }
      : ALLOW;
  }

  /** An engine call's decision, and what the agent's `cost_per_day` leaves (`null`: none). */
  #engine(
    action: PolicyAction,
    ctx: ExecContext,
  ): { readonly decision: PolicyDecision; readonly costLeft: number | null } {
    const agent = agentOf(action, ctx);
    const budget =
      this.config.budgets?.per_agent?.[agent] ?? this.config.budgets?.per_agent?.['default'];
    const now = this.#clock.now();
    const spent = (this.#spend.get(agent) ?? []).filter((s) => s.at > now - DAY);
    this.#spend.set(agent, spent);
    const costLeft =
      budget?.cost_per_day === undefined
        ? null
        : budget.cost_per_day - sum(spent, now - DAY, 'cost');
    const paused = this.#pausedUntil(agent);
    if (paused !== null) {
      const decision = deny('budgets.per_agent', `agent "${agent}" is paused: its budget ran out`, {
        retryAfterMs: paused - now,
      });
      return { decision, costLeft };
    }
    if (!budget) return { decision: ALLOW, costLeft };
    const over: { limit: string; frees: number } | null =
      budget.tokens_per_hour !== undefined &&
      sum(spent, now - HOUR, 'tokens') >= budget.tokens_per_hour
        ? { limit: 'tokens_per_hour', frees: firstAfter(spent, now - HOUR) + HOUR }
        : costLeft !== null && costLeft <= 0
          ? { limit: 'cost_per_day', frees: firstAfter(spent, now - DAY) + DAY }
          : null;
    if (!over) return { decision: ALLOW, costLeft };
    const reason = `agent "${agent}" has used its ${over.limit} budget`;
    const rule = `budgets.per_agent.${over.limit}`;
    const retryAfterMs = Math.max(1, over.frees - now);
    switch (budget.on_exceed) {
      case 'warn':
        return { decision: { ...ALLOW, reason, rule }, costLeft };
      case 'degrade':
        return {
          decision: { ...ALLOW, reason, rule, maxTokens: budget.degrade_max_tokens },
          costLeft,
        };
      case 'pause':
        this.#paused.set(agent, over.frees);
        return { decision: deny(rule, `${reason}; paused`, { retryAfterMs }), costLeft };
      default:
        return { decision: deny(rule, reason, { denial: 'budget', retryAfterMs }), costLeft };
    }
  }

  #pausedUntil(agent: string): number | null {
    const until = this.#paused.get(agent);
    if (until === undefined) return null;
    if (until > this.#clock.now()) return until;
    this.#paused.delete(agent);
    return null;
  }
}

/** The agent an engine call is charged to: the caller's (`metadata.agent`), else the context's actor. */
function agentOf(action: PolicyAction, ctx: ExecContext): string {
  const agent = action.metadata?.['agent'];
  return typeof agent === 'string' ? agent : ctx.name;
}

function sum(spent: readonly Spend[], since: number, what: 'tokens' | 'cost'): number {
  let total = 0;
  for (const s of spent) if (s.at > since) total += what === 'tokens' ? s.tokens : s.cost;
  return total;
}

/** When the first spend after `since` happened (the window frees as it leaves). */
function firstAfter(spent: readonly Spend[], since: number): number {
  return spent.find((s) => s.at > since)?.at ?? since;
}

/**
 * A policy engine from a configuration object (checked: `PolicyConfigError` naming the key).
 *
 * @example
 * const policy = configuredPolicy({ execution: { max_depth: 3 }, tools: { deny: ['rm'] } });
 * const runtime = createRuntime({ policy });
 */
export function configuredPolicy(
  config: PolicyConfigInput,
  options: ConfiguredPolicyOptions = {},
): PolicyEngine & { readonly config: PolicyConfig } {
  return new ConfiguredPolicy(parsePolicyConfig(config), options);
}

/**
 * A policy engine from YAML text or a file (`{ file }`); bad YAML or an unknown key is
 * refused with `PolicyConfigError` naming the line and the key.
 */
export function yamlPolicy(
  source: string | { readonly file: string },
  options: ConfiguredPolicyOptions = {},
): PolicyEngine & { readonly config: PolicyConfig } {
  return new ConfiguredPolicy(loadPolicyYaml(source), options);
}
