/**
 * @module Submitting a step to a run (`POST /v1/runs/{run_id}/steps`): the step is claimed
 * by its `client_token` (NERVE-4003) and then runs in the background; the same token again
 * finds the first step and runs nothing.
 */
import type { ExecContext } from '../context/exec-context.js';
import { ConflictError } from '../errors/conflict-error.js';
import { InternalError } from '../errors/internal-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import type { RunRecord, StepRecord, StepStatus, WireBudgets } from '../store/records.js';
import { flushed } from '../store/run-store.js';
import { gateEvalInputSchema } from './gate-eval.js';
import { parseBody } from '../runs/request-bodies.js';
import { refuseActorRun } from '../runs/actor-run-guard.js';
import { attachRunCalls } from '../runs/run-calls.js';
import { AlreadyClaimed, type StepSubmission } from '../runs/step-request.js';
import type { ResumeFrom, StepEnding, SubmittedStep } from '../runs/submitted-step.js';
import { randomBytes } from 'node:crypto';
import { isoTime } from '../context/clock.js';
import { formatTraceparent, parseTraceparent } from '../context/traceparent.js';
import { toAxonError, toErrorPayload } from '../errors/to-error-payload.js';
import type { StepDispatch } from '../placement/fleet/fleet-jobs.js';
import { requirementsOf, type PoolPlacement, type StepNeeds } from '../placement/pool-choice.js';
import { PoolUnavailableError } from '../errors/pool-unavailable-error.js';
import { zeroUsage, type PlacementDecision } from '../store/records.js';
import { DEFAULT_ENGINE } from '../engines/engine-registry.js';
import {
  checkStepPlacement,
  type StepContext,
  type StepDecision,
  type SubmissionCaller,
  type SubmissionHost,
} from './submission-host.js';
import {
  agentInputSchema,
  checkpointInputSchema,
  recordName,
  stepSubmissionSchema,
  stepTarget,
  toolInputSchema,
  type StepSubmissionBody,
} from './submission-body.js';

export type { SubmittedStep } from '../runs/submitted-step.js';
export { stepSubmissionSchema } from './submission-body.js';

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
  resume?: ResumeFrom,
  caller: SubmissionCaller = {},
): Promise<SubmittedStep> {
  const request = parseBody(stepSubmissionSchema, 'step', body);
  const run = resume?.run?.run_id === runId ? resume.run : await host.store.getRun(runId);
  if (!run) throw new NotFoundError('run', runId);
  return await submitRead(host, run, request, resume, caller);
}

/**
 * {@link submitStep} of a body its caller parsed and a run its caller read just now: an HTTP
 * route, which parses the body and reads the run for its own checks (400, the caller's
 * ownership) — the submission reads and parses neither again. The run still must take steps.
 */
export async function submitRead(
  host: SubmissionHost,
  read: RunRecord,
  request: StepSubmissionBody,
  resume?: ResumeFrom,
  caller: SubmissionCaller = {},
): Promise<SubmittedStep> {
  const run = takingSteps(read.run_id, read);
  const placement = checkStepPlacement(caller.placement);
  // The body's own placement (API.md), over the run's pool policy for this step.
  const own: PoolPlacement | undefined =
    request.placement === undefined || request.placement === 'auto' ? undefined : request.placement;
  if (own !== undefined && placement !== undefined && !resume) {
    throw new TypeError(
      'submitStep: the body places the step and so does the caller (placement); give one',
    );
  }
  if (!resume) refuseActorRun(run, 'takes no steps but its messages');
  // The step's spans join the trace it was submitted in (a fleet job's, an HTTP request's).
  const traceparent = resume?.traceparent ?? caller.traceparent;
  const held = host.contextFor(
    run,
    request.budgets,
    traceparent ? (parseTraceparent(traceparent) ?? undefined) : undefined,
    caller.signal ? { signal: caller.signal } : undefined,
  );
  const { ctx, release } = held;
  if (typeof placement === 'object' && !host.dispatch) {
    release();
    throw noFleet(placement.pool);
  }
  if (host.dispatch && !resume && placement !== 'here') {
    try {
      const on = placement === undefined ? own : { pin: placement.pool };
      return await dispatchStep(host, host.dispatch, run, request, ctx, on);
    } finally {
      release();
    }
  }
  try {
    const decision =
      resume?.record.placement_decision ??
      (placement === 'here'
        ? 'here'
        : own === undefined
          ? 'run'
          : host.choosePool(run, { requires: requirementsOf(run.pool_policy) }, own));
    return await submitIn(host, run, request, held, resume, decision);
  } catch (err) {
    release();
    throw err;
  }
}

/**
 * `run` (read as run `runId`) if it takes steps: `NotFoundError` when there is none,
 * `ConflictError` when it is neither running nor waiting.
 */
export function takingSteps(runId: string, run: RunRecord | null): RunRecord {
  if (!run) throw new NotFoundError('run', runId);
  if (run.status !== 'running' && run.status !== 'waiting') {
    throw new ConflictError(`run ${runId} is ${run.status}: it takes no more steps`, {
      details: { status: run.status },
    });
  }
  return run;
}

/** A step placed on pool `pool` of a runtime that has no fleet. */
export function noFleet(pool: string): PoolUnavailableError {
  return new PoolUnavailableError(
    `the step is placed on pool "${pool}", but this runtime has no fleet (createRuntime({ fleet }), axon serve --redis)`,
    { details: { pin: pool, pools: [] }, retriable: false },
  );
}

/**
 * Checkpoint 1, before routing: the run's steps per minute, then the policy's rate limits
 * for `target` (the step's agent, tool, or type).
 */
export async function admitStep(
  host: SubmissionHost,
  run: RunRecord,
  target: string,
  ctx: ExecContext,
): Promise<void> {
  // Every submission counts, a repeated client token too: it is a request all the same.
  await host.gate.admitStep(run);
  if (host.gate.applies(ctx)) await host.gate.check('route', target, ctx);
}

/**
 * A submission to a fleet: admitted here, its pool chosen, its record claimed `queued` by its
 * client token (atomic in the shared store, so API processes submitting the same token at
 * once make one step), and its job queued on the pool. A job that cannot be queued ends the
 * step `failed` and frees its token, so the same submission can be made again.
 */
export async function dispatchStep(
  host: SubmissionHost,
  dispatch: StepDispatch,
  run: RunRecord,
  request: StepSubmissionBody,
  ctx: ExecContext,
  placement: PoolPlacement | undefined,
): Promise<SubmittedStep> {
  await admitStep(host, run, stepTarget(request), ctx);
  // What is known of the pools may be stale (a replica gone, a queue filled up).
  await dispatch.fresh();
  const engine = request.input['engine'];
  // An LLM step runs where its engine is served.
  const needs: StepNeeds = {
    requires: requirementsOf(run.pool_policy),
    placement:
      request.type === 'agent'
        ? host.placementNeeded('agent', request.input['agent'])
        : request.type === 'tool_call'
          ? host.placementNeeded('tool', request.input['tool'])
          : undefined,
    engine:
      request.type === 'llm_call' || request.type === 'llm_plan'
        ? typeof engine === 'string'
          ? engine
          : DEFAULT_ENGINE
        : undefined,
  };
  let decision: PlacementDecision;
  try {
    decision = host.choosePool(run, needs, placement);
    await dispatch.admit(decision.pool_id);
  } catch (err) {
    // The operator learns why from the log, the client from the error.
    host.logger.warn(
      { run_id: run.run_id, type: request.type, engine: needs.engine, err },
      'a step could not be placed on a pool',
    );
    throw err;
  }
  const name = recordName(request);
  const now = isoTime(ctx.createdAt);
  const record: StepRecord = {
    step_id: ctx.ids.id('step'),
    run_id: run.run_id,
    type: request.type,
    name,
    parent_step_id: null,
    actor_path: [name],
    client_token: request.client_token ?? null,
    input: request.input,
    placement: 'pool',
    status: 'queued',
    budget_usage: zeroUsage(),
    provenance: null,
    output: null,
    error: null,
    created_at: now,
    started_at: null,
    ended_at: null,
    budgets: (request.budgets as WireBudgets | undefined) ?? {},
    placement_decision: decision,
    first_token_at: null,
  };
  const claim = await host.store.claimStep(record);
  if (!claim.created) {
    await flushed(host.store);
    const { step_id: stepId, status } = claim.step;
    return { step_id: stepId, status, created: false, done: NOTHING, ended: NOTHING };
  }
  // Watched before it is queued: its end cannot come before the watch.
  const done = dispatch.ended(record.step_id);
  try {
    await dispatch.enqueue(
      {
        step_id: record.step_id,
        run_id: run.run_id,
        pool_id: decision.pool_id,
        body: request,
        traceparent: traceparentOf(ctx),
        queued_at: Date.now(),
      },
      record,
    );
  } catch (err) {
    const error = toAxonError(err);
    host.logger.error(
      { err, step_id: record.step_id, pool_id: decision.pool_id },
      'a step could not be queued on its pool',
    );
    await host.store.updateStep(record.step_id, {
      status: 'failed',
      error: toErrorPayload(error),
      ended_at: isoTime(Date.now()),
    });
    if (record.client_token !== null) await host.store.releaseClientToken(record.step_id);
    await flushed(host.store);
    throw error;
  }
  await flushed(host.store);
  // Its end is on the fleet's record: a caller that wants its output reads it.
  return {
    step_id: record.step_id,
    status: 'queued',
    created: true,
    done,
    ended: done.then(() => null),
  };
}

/** The W3C trace context a step's job carries: the submission's span, or its trace. */
function traceparentOf(ctx: ExecContext): string {
  const span = ctx.span?.spanContext();
  if (span && span.traceId === ctx.traceId) {
    return formatTraceparent({
      traceId: span.traceId,
      spanId: span.spanId,
      sampled: (span.traceFlags & 1) === 1,
    });
  }
  return formatTraceparent({
    traceId: ctx.traceId,
    spanId: randomBytes(8).toString('hex'),
    sampled: true,
  });
}

/** What `done` and `ended` give for a step that was not run here. */
const NOTHING: Promise<null> = Promise.resolve(null);

/** {@link submitStep} once the run and the context are there. */
async function submitIn(
  host: SubmissionHost,
  run: RunRecord,
  request: StepSubmissionBody,
  { ctx, release, claimed: bindStep }: StepContext,
  resume: ResumeFrom | undefined,
  decision: StepDecision,
): Promise<SubmittedStep> {
  const runId = run.run_id;
  // A step going on (after an approval, or a fleet worker's death) serves the calls it
  // recorded before; a queued one starts afresh.
  const goesOn = resume !== undefined && resume.fresh !== true;
  attachRunCalls(ctx, host.callsFor(run, request.client_token ?? null, goesOn, decision));
  // A step going on, or queued for a fleet, was admitted when it was submitted.
  if (!resume) await admitStep(host, run, stepTarget(request), ctx);
  let claimed: (claim: { record: StepRecord; created: boolean }) => void = () => undefined;
  const claim = new Promise<{ record: StepRecord; created: boolean }>((resolve) => {
    claimed = resolve;
  });
  // Its status once its end is stored (its use added to its run in the same write).
  let endedAs: StepStatus | null = null;
  let ending: StepEnding | null = null;
  const submission: StepSubmission = {
    clientToken: request.client_token ?? null,
    onEnded: (status, end) => {
      endedAs = status;
      ending = end ?? null;
    },
    // zod leaves out the keys the body left out, so the parsed budgets are plain WireBudgets.
    ...(request.budgets ? { budgets: request.budgets as WireBudgets } : {}),
    onClaimed: (record, created) => {
      bindStep(record.step_id);
      claimed({ record, created });
    },
    ...(resume ? { resume } : {}),
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
      // Refused before any step (unknown tool, permission), it rejects: the submission fails.
      work = host.callTool(input.tool, input.args, ctx, submission);
      break;
    }
    case 'fs_op':
      work = host.runFsOp(request.input, ctx, submission);
      break;
    case 'gate_eval': {
      const input = parseBody(gateEvalInputSchema, 'gate_eval input', request.input);
      work = host.runGateEval(input, ctx, runId, submission);
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
  const done: Promise<StepStatus | null> = work
    .then(
      () => endedAs,
      (err: unknown) => {
        if (!(err instanceof AlreadyClaimed)) {
          host.logger.error({ err, run_id: runId }, 'a submitted step failed before it began');
        }
        return null;
      },
    )
    .finally(release);
  // Whichever comes first: the claim, or a refusal before any step began.
  const settled = await Promise.race([claim, work.then(() => null)]);
  if (settled === null) throw new InternalError(`the ${request.type} step ended without a claim`);
  // The caller is told the step exists: it must, whatever happens to this process next.
  await flushed(host.store);
  return {
    step_id: settled.record.step_id,
    status: settled.record.status,
    created: settled.created,
    done: settled.created ? done : NOTHING,
    ended: settled.created ? done.then(() => ending) : NOTHING,
  };
}
