/**
 * @module A tool call as a step: the refusals that need no step (unknown tool, missing
 * permission, closed runtime), then a `tool_call` step under the tool's breaker, in the
 * caller's run or a run of its own. Refusals are statuses, never rejections.
 */
import type { ExecContext } from '../context/exec-context.js';
import type { AxonError } from '../errors/axon-error.js';
import { InternalError } from '../errors/internal-error.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import { SchemaViolationError } from '../errors/schema-violation-error.js';
import { checkJsonSchema } from '../tools/json-schema.js';
import { TimeoutError } from '../errors/timeout-error.js';
import { toAxonError } from '../errors/to-error-payload.js';
import { refuseByBreaker, reportToBreaker } from '../supervisors/breaker-guard.js';
import type { BreakerTable } from '../supervisors/breaker-table.js';
import { toolRefusal, type ToolManager } from '../tools/tool-manager.js';
import { refusalError, type ToolRegistry } from '../tools/tool-registry.js';
import type { ToolResult, ToolStatus } from '../tools/tool-result.js';
import { validateToolArgs } from '../tools/validate-args.js';
import type { AgentRuntime } from '../actors/agent-runtime.js';
import type { StepActor } from '../actors/step-actor.js';
import {
  executeInContainer,
  type ContainerHost,
} from '../placement/container/container-placement.js';
import {
  closeRun,
  openRun,
  RUN_STATUS,
  type RunHandle,
  type RunRecordsDeps,
} from '../runs/run-records.js';
import type { PolicyGate } from '../runs/policy-gate.js';
import { bookedToolCall, runCallsOf } from '../runs/run-calls.js';
import { runStep } from '../runs/step-runner.js';
import type { StepOutcome, StepRunnerDeps, StepSubmission } from '../runs/step-request.js';

/** What a tool call needs from its runtime. */
export interface ToolCallDeps {
  readonly steps: StepRunnerDeps;
  readonly runs: RunRecordsDeps;
  readonly tools: ToolRegistry;
  /** Every tool source, the function tools first; consulted for tools not in `tools`. */
  readonly catalog: ToolManager;
  readonly breakers: BreakerTable;
  readonly closed: boolean;
  /** Asked before every call (checkpoint 3). */
  readonly gate: PolicyGate;
  /** Where container tools run. */
  readonly container: ContainerHost;
  /** What a container tool's host calls go to. */
  readonly runtime: AgentRuntime;
}

/** A result for a call that did not succeed and has no output. */
function failed<TOutput>(
  tool: string,
  status: Exclude<ToolStatus, 'success'>,
  error: AxonError,
  durationMs = 0,
): ToolResult<TOutput> {
  return { status, tool, output: null, error, durationMs, stepId: null };
}

/** What a `tool_call` step runs, and its own timeout (`null`: its manager keeps time). */
interface ToolTarget {
  readonly timeoutMs: number | null;
  readonly run: (stepCtx: ExecContext, step: StepActor) => Promise<unknown>;
}

/**
 * A tool from another manager (MCP, …): its refusals as results, or what its step runs.
 * The manager checks the arguments; a failed call throws its typed error into the step.
 */
async function externalTarget(
  catalog: ToolManager,
  name: string,
  args: unknown,
  ctx: ExecContext,
): Promise<ToolTarget | ToolResult> {
  let info;
  try {
    info = await catalog.describe(name);
  } catch (err) {
    return failed(name, 'error', toAxonError(err));
  }
  if (!info) return failed(name, 'not_found', new NotFoundError('tool', name));
  const refusal = toolRefusal(info, ctx);
  if (refusal) {
    return failed(name, 'permission_denied', refusalError(name, refusal, info.requiredPermissions));
  }
  return {
    timeoutMs: null,
    run: async (stepCtx) => {
      const result = await catalog.call(name, args, stepCtx);
      if (result.status === 'success') return result.output;
      throw (
        result.error ?? new InternalError(`tool ${name} ended ${result.status} without an error`)
      );
    },
  };
}

/** Calls tool `name` with `args` on `ctx`; see `Runtime.callTool`. */
export async function callTool<TOutput>(
  deps: ToolCallDeps,
  name: string,
  args: unknown,
  ctx: ExecContext,
  submission?: StepSubmission,
): Promise<ToolResult<TOutput>> {
  const clock = deps.steps.system.clock;
  const startedAt = clock.now();
  if (deps.closed) return failed(name, 'error', new InvalidParamsError('the runtime is closed'));
  let target: ToolTarget;
  const tool = deps.tools.get(name);
  if (tool) {
    const refusal = deps.tools.refusal(tool, ctx);
    if (refusal) {
      return failed(name, 'permission_denied', refusalError(name, refusal, tool.requiredRoles));
    }
    const placed = tool.container;
    target = {
      timeoutMs: tool.timeoutMs,
      run: placed
        ? (stepCtx, step) =>
            executeInContainer(
              deps.container,
              { kind: 'tool', name, module: placed.module, export: placed.export },
              { message: '', args: validateToolArgs(tool, args) as Record<string, unknown> },
              stepCtx,
              step,
              deps.runtime,
            )
        : (stepCtx) => Promise.resolve(tool.handler(validateToolArgs(tool, args), stepCtx)),
    };
  } else {
    const resolved = await externalTarget(deps.catalog, name, args, ctx);
    if ('status' in resolved) return resolved as ToolResult<TOutput>;
    target = resolved;
  }
  let run: RunHandle;
  try {
    run = await openRun(deps.runs, ctx, `tool ${name}`);
  } catch (err) {
    return failed(name, 'error', toAxonError(err));
  }
  let outcome: StepOutcome;
  // A replayed call is served from its recording: the tool's breaker has no say, and hears
  // nothing of it.
  const breaker = runCallsOf(ctx)?.replaying ? undefined : deps.breakers.get('tool', name);
  const admitted = breaker?.tryAcquire() ?? true;
  try {
    outcome = await runStep(deps.steps, {
      type: 'tool_call',
      name,
      input: { tool: name, args },
      runId: run.runId,
      parentCtx: ctx,
      timeoutMs: target.timeoutMs,
      operation: 'execute_tool',
      submission,
      execute: async (stepCtx, step) => {
        if (!admitted && breaker) refuseByBreaker(breaker, step);
        // Checkpoint 3, during the caller's execution: the tool call, counted against the
        // caller's context; refused, this step ends POLICY_DENIED and the tool never runs.
        if (deps.gate.applies(ctx)) {
          await deps.gate.check('call_tool', name, ctx, { escalateTo: stepCtx });
        }
        // The run's flow declared this tool: its arguments must fit that declaration too.
        const declared = await runCallsOf(stepCtx)?.declaredTool(name);
        if (declared)
          checkJsonSchema(`arguments of tool ${name} (the flow's declaration)`, declared, args);
        return bookedToolCall(stepCtx, name, args, () => target.run(stepCtx, step));
      },
    });
    // Arguments that fail the schema are the caller's fault, not the tool's: no verdict.
    if (breaker && admitted) {
      reportToBreaker(breaker, outcome.error instanceof SchemaViolationError ? null : outcome);
    }
  } catch (err) {
    breaker?.release();
    if (run.owned) await closeRun(deps.runs, run, 'failed', null);
    return failed(name, 'error', toAxonError(err), clock.now() - startedAt);
  }
  if (run.owned) {
    await closeRun(deps.runs, run, RUN_STATUS[outcome.status], outcome.ctx.tokenUsage);
  }
  const status =
    outcome.status === 'succeeded'
      ? 'success'
      : outcome.error instanceof TimeoutError
        ? 'timeout'
        : 'error';
  return {
    status,
    tool: name,
    output: status === 'success' ? (outcome.output as TOutput) : null,
    error: outcome.error,
    durationMs: outcome.durationMs,
    stepId: outcome.stepId,
  };
}
