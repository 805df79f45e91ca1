/**
 * @module A tool call as a step: the refusals that need no step (a malformed call, unknown
 * tool, missing permission, closed runtime), which reject as an agent's invocation's do, then
 * a `tool_call` step under the tool's breaker, in the caller's run or a run of its own,
 * whose every ending is a status of the result.
 */
import { assertContext } from '../context/assert-context.js';
import type { ExecContext } from '../context/exec-context.js';
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
import type { ToolResult } from '../tools/tool-result.js';
import { validateToolArgs } from '../tools/validate-args.js';
import type { AgentRuntime } from '../actors/agent-runtime.js';
import type { StepActor } from '../actors/step-actor.js';
import {
  executeInContainer,
  type ContainerHost,
} from '../placement/container/container-placement.js';
import { closeRun, openRun, RUN_STATUS, type RunRecordsDeps } from '../runs/run-records.js';
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

/** What a `tool_call` step runs, and its own timeout (`null`: its manager keeps time). */
interface ToolTarget {
  readonly timeoutMs: number | null;
  readonly run: (stepCtx: ExecContext, step: StepActor) => Promise<unknown>;
}

/**
 * A tool from another manager (MCP, …): what its step runs. Throws its refusals (unknown,
 * not permitted, the manager's own failure to describe it). The manager checks the
 * arguments; a failed call throws its typed error into the step.
 */
async function externalTarget(
  catalog: ToolManager,
  name: string,
  args: unknown,
  ctx: ExecContext,
): Promise<ToolTarget> {
  let info;
  try {
    info = await catalog.describe(name);
  } catch (err) {
    throw toAxonError(err);
  }
  if (!info) throw new NotFoundError('tool', name);
  const refusal = toolRefusal(info, ctx);
  if (refusal) throw refusalError(name, refusal, info.requiredPermissions);
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

/**
 * Calls tool `name` with `args` on `ctx`; see `Runtime.callTool`. Rejects when no step could
 * begin: `InvalidParamsError` (closed runtime, a name that is not a string, no context),
 * `NotFoundError` (unknown tool), `PermissionDeniedError`, or the store's error opening its
 * run. Once its step began, every ending is a status of the result.
 */
export async function callTool<TOutput>(
  deps: ToolCallDeps,
  name: string,
  args: unknown,
  ctx: ExecContext,
  submission?: StepSubmission,
): Promise<ToolResult<TOutput>> {
  if (deps.closed) throw new InvalidParamsError('the runtime is closed');
  if (typeof name !== 'string' || name.length === 0) {
    throw new InvalidParamsError(
      `callTool: name must be a tool's name (a non-empty string), got ${name === '' ? '""' : typeof name}`,
      { param: 'name' },
    );
  }
  assertContext(ctx, 'ctx');
  let target: ToolTarget;
  const tool = deps.tools.get(name);
  if (tool) {
    const refusal = deps.tools.refusal(tool, ctx);
    if (refusal) throw refusalError(name, refusal, tool.requiredRoles);
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
    target = await externalTarget(deps.catalog, name, args, ctx);
  }
  const run = await openRun(deps.runs, ctx, `tool ${name}`);
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
    // The step runner rejects only when the step could not begin (its record refused, its
    // client token claimed already): no step, so a rejection like the refusals above.
    breaker?.release();
    if (run.owned) await closeRun(deps.runs, run, 'failed', null);
    throw err;
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
