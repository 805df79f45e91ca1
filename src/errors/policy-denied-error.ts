/** @module A call the policy refused. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/**
 * The policy refused an action (a tool not allowed, a depth past the limit, a rejected
 * approval, a paused agent, …); nothing ran. `action` is the kind of action (`call_tool`,
 * `invoke_agent`, …), `target` what it was for, `rule` the rule that refused it. Code
 * `POLICY_DENIED`.
 */
export class PolicyDeniedError extends AxonError {
  readonly code = 'POLICY_DENIED' as const;
  readonly action: string;
  readonly target: string;
  readonly rule: string;

  constructor(
    action: string,
    target: string,
    rule: string,
    reason: string,
    options: AxonErrorOptions = {},
  ) {
    super(`policy denied ${action} "${target}": ${reason}`, {
      ...options,
      // The caller's details come last: a refusal may say `reason: 'quota'` (API.md).
      details: { action, target, rule, reason, ...options.details },
    });
    this.action = action;
    this.target = target;
    this.rule = rule;
  }
}
