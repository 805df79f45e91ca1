/**
 * @module Invoking an agent: the run it belongs to (its own, or the caller's), the checks
 * before its step (permission, depth), its breaker, its placement, and its result.
 */
import type { Span } from '@opentelemetry/api';
import { assertContext } from '../context/assert-context.js';
import { checkNarrowing } from '../context/check-narrowing.js';
import type { ContextNarrowing, ExecContext, TokenUsage } from '../context/exec-context.js';
import type { StreamTap } from '../context/stream-sink.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { PermissionDeniedError } from '../errors/permission-denied-error.js';
import { refuseByBreaker, reportToBreaker } from '../supervisors/breaker-guard.js';
import type { BreakerTable } from '../supervisors/breaker-table.js';
import { assertDepth } from '../supervisors/depth-limit.js';
import { armStepDeadline } from '../supervisors/step-deadline.js';
import type { AgentStatsBatch } from '../actors/agent-stats-batch.js';
import type { AgentDefinition, AgentRuntime, AgentTarget } from '../actors/agent-runtime.js';
import {
  isAgentOutcome,
  toAgentInput,
  type AgentInput,
  type AgentOutcome,
  type AgentResult,
} from '../actors/agent-result.js';
import { executeInline } from '../placement/inline-placement.js';
import {
  closeRun,
  openRun,
  runStatusFor,
  sumUsage,
  type RunRecordsDeps,
} from '../runs/run-records.js';
import { runStep } from '../runs/step-runner.js';
import type { StepOutcome, StepRunnerDeps, StepSubmission } from '../runs/step-request.js';
import { toAgentResult } from '../runs/to-agent-result.js';
import type { PolicyGate } from '../runs/policy-gate.js';
import type { WorkerPool } from '../placement/worker/worker-pool.js';
import { executeInWorker } from '../placement/worker/worker-placement.js';
import {
  executeInContainer,
  type ContainerHost,
} from '../placement/container/container-placement.js';

/** What invoking an agent needs from its runtime. */
export interface AgentInvocationHost {
  readonly steps: StepRunnerDeps;
  readonly runs: RunRecordsDeps;
  readonly breakers: BreakerTable;
  readonly maxDepth: number;
  /** What handlers call back into. */
  readonly runtime: AgentRuntime;
  /** The statistics batch of a registered agent. */
  stats(name: string): AgentStatsBatch | undefined;
  /** The definition of a registered name (or a definition given directly). */
  resolve(agent: AgentTarget): AgentDefinition;
  /** Throws when the runtime is closed. */
  assertOpen(): void;
  /** The worker-thread pool, started on first use. */
  workerPool(): WorkerPool;
  /** Container placement: the runtime's container pool and the mounts of a step. */
  readonly container: ContainerHost;
  /** Where the policy is asked (routing, invocation, delegation). */
  readonly gate: PolicyGate;
}

/**
 * Invokes `agent` under `ctx`: in `ctx`'s run, or in a run of its own that it opens and
 * closes. Rejects only when nothing ran, with what refused it: `InvalidParamsError` (closed
 * runtime, a malformed input or context), `NotFoundError` (unknown agent),
 * `PermissionDeniedError`, `DepthLimitError`, `WideningError`, a policy's refusal.
 */
export async function invokeTree<TOutput>(
  host: AgentInvocationHost,
  agent: AgentTarget,
  input: string | AgentInput,
  ctx: ExecContext,
  narrowing: ContextNarrowing | undefined,
  tap: StreamTap | null,
  parentSpan?: Span,
): Promise<AgentResult<TOutput>> {
  host.assertOpen();
  assertContext(ctx, 'ctx');
  checkNarrowing(narrowing);
  const def = host.resolve(agent);
  const agentInput = toAgentInput(input, def.name);
  // Checkpoint 1, before routing: an invocation from outside any step (rate limits), unless
  // a front door asked it for this request already.
  if (ctx.stepId === null && host.gate.applies(ctx) && !host.gate.routed(ctx)) {
    await host.gate.check('route', def.name, ctx);
  }
  const run = await openRun(host.runs, ctx, def.name);
  let result: AgentResult<TOutput> | null = null;
  try {
    result = await runAgent<TOutput>(
      host,
      def,
      agentInput,
      ctx,
      narrowing,
      run.runId,
      tap,
      undefined,
      parentSpan,
    );
    return result;
  } finally {
    if (run.owned) {
      await closeRun(host.runs, run, runStatusFor(result), result?.usage ?? null);
    }
  }
}

/** Runs `def` as an `agent` step of run `runId`, under its breaker and placement. */
export async function runAgent<TOutput>(
  host: AgentInvocationHost,
  def: AgentDefinition,
  input: AgentInput,
  parentCtx: ExecContext,
  narrowing: ContextNarrowing | undefined,
  runId: string,
  tap: StreamTap | null,
  submission?: StepSubmission,
  parentSpan?: Span,
): Promise<AgentResult<TOutput>> {
  if (!parentCtx.canUseAgent(def.name)) throw new PermissionDeniedError('agent', def.name);
  assertDepth(parentCtx, def.name, host.maxDepth);
  const gated = host.gate.applies(parentCtx);
  // Checkpoint 3, during the caller's execution: a delegation.
  if (gated && parentCtx.stepId !== null) {
    await host.gate.check('delegate', def.name, parentCtx);
  }
  const stats = host.stats(def.name);
  stats?.started(host.steps.system.clock.now());
  const breaker = host.breakers.get('agent', def.name);
  const admitted = breaker?.tryAcquire() ?? true;
  let outcome: StepOutcome | null = null;
  let special: AgentOutcome | null = null;
  try {
    outcome = await runStep(host.steps, {
      type: 'agent',
      name: def.name,
      input,
      runId,
      parentCtx,
      parentSpan,
      narrowing,
      timeoutMs: def.timeoutMs,
      operation: 'invoke_agent',
      // No tap of its own: the step streams to its parent context's.
      tap: tap ?? undefined,
      placement: def.placement,
      submission,
      execute: async (ctx, step) => {
        if (!admitted && breaker) refuseByBreaker(breaker, step);
        // Checkpoint 2, before invocation (permissions, approvals): refused, the step
        // exists and ends POLICY_DENIED with an escalation; its handler never runs.
        let disarm = noop;
        if (gated) {
          const { decision } = await host.gate.check('invoke_agent', def.name, parentCtx, {
            escalateTo: ctx,
          });
          // `execution.timeout_seconds`: the policy's limit on the step, besides its own.
          if (decision.timeoutMs !== undefined) disarm = armStepDeadline(ctx, decision.timeoutMs);
        }
        try {
          const out =
            def.placement === 'worker'
              ? await executeInWorker(def, input, ctx, step, host.runtime, host.workerPool())
              : def.placement === 'container'
                ? await executeInContainer(
                    host.container,
                    { kind: 'agent', name: def.name, module: def.module, export: def.export },
                    input,
                    ctx,
                    step,
                    host.runtime,
                  )
                : await executeInline(def, input, ctx, step, host.runtime);
          if (!isAgentOutcome(out)) return out;
          special = out;
          return { status: out.status, message: out.message, data: out.data };
        } finally {
          disarm();
        }
      },
    });
  } finally {
    stats?.finished(outcome?.status === 'succeeded', outcome?.durationMs ?? 0);
    if (breaker && admitted) reportToBreaker(breaker, outcome);
  }
  return toAgentResult<TOutput>(def.name, outcome, special);
}

/**
 * Invokes `agents` in order within one run; each output becomes the next agent's message
 * (strings as they are, anything else as JSON). Stops at the first result that is not a
 * success and returns it; otherwise the last.
 */
export async function invokeChain<TOutput>(
  host: AgentInvocationHost,
  agents: readonly AgentTarget[],
  input: string | AgentInput,
  ctx: ExecContext,
): Promise<AgentResult<TOutput>> {
  host.assertOpen();
  assertContext(ctx, 'ctx');
  const given: unknown = agents;
  if (!Array.isArray(given) || given.length === 0)
    throw new InvalidParamsError('invokeChain: agents must be a non-empty array', {
      param: 'agents',
    });
  const defs = agents.map((a) => host.resolve(a));
  const first = defs[0] as AgentDefinition;
  let message = toAgentInput(input, first.name);
  // Checkpoint 1, before routing: the chain is one request from outside any step.
  if (ctx.stepId === null && host.gate.applies(ctx) && !host.gate.routed(ctx)) {
    await host.gate.check('route', first.name, ctx);
  }
  const run = await openRun(host.runs, ctx, defs.map((d) => d.name).join(' > '));
  let result: AgentResult<TOutput> | null = null;
  const usages: TokenUsage[] = [];
  try {
    for (const def of defs) {
      result = await runAgent<TOutput>(host, def, message, ctx, undefined, run.runId, null);
      usages.push(result.usage);
      if (result.status !== 'success') break;
      const out: unknown = result.output;
      message = { message: typeof out === 'string' ? out : JSON.stringify(out) };
    }
  } finally {
    if (run.owned) await closeRun(host.runs, run, runStatusFor(result), sumUsage(usages));
  }
  return result as AgentResult<TOutput>;
}

function noop(): void {
  /* no policy timeout armed */
}
