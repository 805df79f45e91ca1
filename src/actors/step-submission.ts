/**
 * @module Submitting a step to a run (`POST /v1/runs/{run_id}/steps`): the step is claimed
 * by its `client_token` (NERVE-4003) and then runs in the background; the same token again
 * finds the first step and runs nothing.
 */
import { z } from 'zod';
import type { Budgets, ExecContext } from '../context/exec-context.js';
import { ConflictError } from '../errors/conflict-error.js';
import { InternalError } from '../errors/internal-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import type { Logger } from '../observability/logger.js';
import type { RunRecord, StepRecord, StepStatus } from '../store/records.js';
import { flushed, type RunStore } from '../store/run-store.js';
import type { ToolResult } from '../tools/tool-result.js';
import { parseBody, wireBudgetsSchema } from './request-bodies.js';
import type { PolicyGate } from './policy-gate.js';
import { attachRunCalls, type RunCalls } from './run-calls.js';
import { AlreadyClaimed, type StepSubmission } from './step-runner.js';

/** The body of a step submission (API.md), for the step types that run today. */
export const stepSubmissionSchema = z
  .object({
    type: z.enum(['agent', 'tool_call', 'llm_call', 'llm_plan', 'checkpoint']),
    client_token: z.string().min(1).max(256).optional(),
    input: z.record(z.string(), z.unknown()),
    placement: z.literal('auto').optional(),
    budgets: wireBudgetsSchema.optional(),
  })
  .strict();

const agentInputSchema = z
  .object({
    agent: z.string().min(1),
    message: z.string(),
    args: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
const toolInputSchema = z
  .object({ tool: z.string().min(1), args: z.record(z.string(), z.unknown()) })
  .strict();

const checkpointInputSchema = z.object({ label: z.string().max(256).optional() }).strict();

/** What a step submission is for: its agent, tool, or its type. */
function stepTarget(request: { type: string; input: Record<string, unknown> }): string {
  const named = request.input['agent'] ?? request.input['tool'];
  return typeof named === 'string' ? named : request.type;
}

/** What a submission returns at once. */
export interface SubmittedStep {
  readonly step_id: string;
  readonly status: StepStatus;
  /** False when the run already had a step with this client token (nothing was run). */
  readonly created: boolean;
  /** Settles when the step has ended (at once for a step found by its token). */
  readonly done: Promise<void>;
}

/** Run and step budgets on the wire, as a context's (the smaller of each limit). */
export function combinedBudgets(
  run: Pick<RunRecord, 'budgets' | 'budget_usage' | 'created_at'>,
  step: z.infer<typeof wireBudgetsSchema> | undefined,
  now: number,
): Budgets {
  const min = (a: number | undefined, b: number | undefined): number | undefined =>
    a === undefined ? b : b === undefined ? a : Math.min(a, b);
  // What the run has left: its limits less what its steps used (kept in the store, so it
  // holds across a restart), and of its wall time, what is left since it was created.
  const left = (limit: number | undefined, used: number): number | undefined =>
    limit === undefined ? undefined : Math.max(0, limit - used);
  const { budgets, budget_usage: used } = run;
  const out: Record<string, number> = {};
  const pairs: [keyof Budgets, number | undefined][] = [
    ['maxTokensIn', min(left(budgets.max_tokens_in, used.tokens_in), step?.max_tokens_in)],
    ['maxTokensOut', min(left(budgets.max_tokens_out, used.tokens_out), step?.max_tokens_out)],
    ['maxCostUsd', min(left(budgets.max_cost_usd, used.cost_usd), step?.max_cost_usd)],
    [
      'maxWallMs',
      min(left(budgets.max_wall_ms, now - Date.parse(run.created_at)), step?.max_wall_ms),
    ],
  ];
  for (const [key, value] of pairs) if (value !== undefined) out[key] = value;
  return out;
}

/** What a submission needs from the runtime. */
export interface SubmissionHost {
  readonly store: RunStore;
  readonly logger: Logger;
  /** Where the policy is asked: the route checkpoint and the run's `steps_per_minute`. */
  readonly gate: PolicyGate;
  /** The books of the calls of a step submitted to `run` with `clientToken` (record / replay). */
  callsFor(run: RunRecord, clientToken: string | null): RunCalls;
  /** A context inside `run`, its budgets from the run's and the step's. */
  contextFor(
    run: RunRecord,
    stepBudgets: z.infer<typeof wireBudgetsSchema> | undefined,
  ): ExecContext;
  runAgent(
    agent: string,
    input: { message: string; args?: Record<string, unknown> },
    ctx: ExecContext,
    runId: string,
    submission: StepSubmission,
  ): Promise<unknown>;
  callTool(
    name: string,
    args: unknown,
    ctx: ExecContext,
    submission: StepSubmission,
  ): Promise<ToolResult>;
  /** A `checkpoint` step: the run's live steps' snapshots and log offsets (NERVE-4005). */
  runCheckpoint(
    label: string | null,
    ctx: ExecContext,
    runId: string,
    submission: StepSubmission,
  ): Promise<unknown>;
  runLlm(
    type: 'llm_call' | 'llm_plan',
    input: unknown,
    ctx: ExecContext,
    submission: StepSubmission,
  ): Promise<unknown>;
}

/**
 * Submits a step to a running run. Resolves once the step is claimed: a new step now
 * running (`created: true`), or the run's step with the same `client_token`
 * (`created: false`). Rejects with `NotFoundError` (run, agent or tool), `ConflictError`
 * (the run is not running), `SchemaViolationError` (the body), `PermissionDeniedError`.
 */
export async function submitStep(
  host: SubmissionHost,
  runId: string,
  body: unknown,
): Promise<SubmittedStep> {
  const request = parseBody(stepSubmissionSchema, 'step', body);
  const run = await host.store.getRun(runId);
  if (!run) throw new NotFoundError('run', runId);
  if (run.status !== 'running') {
    throw new ConflictError(`run ${runId} is ${run.status}: it takes no more steps`, {
      details: { status: run.status },
    });
  }
  const ctx = host.contextFor(run, request.budgets);
  attachRunCalls(ctx, host.callsFor(run, request.client_token ?? null));
  // Checkpoint 1, before routing: the run's steps per minute, then the policy's rate limits.
  // Every submission counts, a repeated client token too: it is a request all the same.
  await host.gate.admitStep(run);
  if (host.gate.applies(ctx)) await host.gate.check('route', stepTarget(request), ctx);
  let claimed: (claim: { record: StepRecord; created: boolean }) => void = () => undefined;
  const claim = new Promise<{ record: StepRecord; created: boolean }>((resolve) => {
    claimed = resolve;
  });
  const submission: StepSubmission = {
    clientToken: request.client_token ?? null,
    onClaimed: (record, created) => {
      claimed({ record, created });
    },
  };
  let work: Promise<unknown>;
  switch (request.type) {
    case 'agent': {
      const input = parseBody(agentInputSchema, 'agent step input', request.input);
      work = host.runAgent(
        input.agent,
        input.args ? { message: input.message, args: input.args } : { message: input.message },
        ctx,
        runId,
        submission,
      );
      break;
    }
    case 'tool_call': {
      const input = parseBody(toolInputSchema, 'tool_call input', request.input);
      work = host.callTool(input.tool, input.args, ctx, submission).then((r) => {
        // Refused before any step (unknown tool, permission): the submission fails.
        if (r.stepId === null && r.error) throw r.error;
        return r;
      });
      break;
    }
    case 'checkpoint': {
      const input = parseBody(checkpointInputSchema, 'checkpoint input', request.input);
      work = host.runCheckpoint(input.label ?? null, ctx, runId, submission);
      break;
    }
    default:
      work = host.runLlm(request.type, request.input, ctx, submission);
  }
  const done = work
    .then(
      async () => {
        // The run's usage grows by the step's (its own and its children's), in the store.
        const stepId = (await claim).record.step_id;
        const step = await host.store.getStep(stepId);
        if (step) await host.store.addRunUsage(runId, step.budget_usage);
      },
      (err: unknown) => {
        if (!(err instanceof AlreadyClaimed)) {
          host.logger.error({ err, run_id: runId }, 'a submitted step failed before it began');
        }
      },
    )
    .catch((err: unknown) => {
      host.logger.error({ err, run_id: runId }, "a step's usage could not be added to its run");
    });
  // Whichever comes first: the claim, or a refusal before any step began.
  const settled = await Promise.race([claim, work.then(() => null)]);
  if (settled === null) throw new InternalError(`the ${request.type} step ended without a claim`);
  // The caller is told the step exists: it must, whatever happens to this process next.
  await flushed(host.store);
  return {
    step_id: settled.record.step_id,
    status: settled.record.status,
    created: settled.created,
    done: settled.created ? done : Promise.resolve(),
  };
}
