/**
 * @module Resuming runs after a restart (NERVE-4005). A runtime that stopped — a crash, a
 * kill, a deploy — leaves its running steps open in a durable store. A runtime started on the
 * same store picks each such run up: its finished steps stand as they are; each step left
 * running is closed in its log with `WORKER_RESET` (retriable), its lifecycle rebuilt from the
 * run's latest checkpoint and the log after it; and each interrupted step that was submitted
 * to the run is submitted again under its client token, so it runs again from the start.
 * Its facts are idempotent (see `RunCalls.nextFactId`), so the run ends with the facts an
 * uninterrupted run would have.
 */
import { ConflictError } from '../errors/conflict-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import { toErrorPayload } from '../errors/to-error-payload.js';
import { WorkerResetError } from '../errors/worker-reset-error.js';
import type { CheckpointRecord, RunRecord, StepRecord } from '../store/records.js';
import { ACTOR_ENTRY_PREFIX } from '../store/actor-records.js';
import { flushed } from '../store/run-store.js';
import type { ActorSystem } from '../actors/actor-system.js';
import { decidedButWaiting, settleDecided, type DecisionDeps } from './approvals.js';
import { resubmission, type SubmittedStep } from './submitted-step.js';
import { endStoredStep } from './stored-step-end.js';

/** What resuming needs from the runtime. */
export interface ResumeDeps extends DecisionDeps {
  readonly system: ActorSystem;
  /** Submits a step to a run, as `runtime.submitStep` does. */
  submit(runId: string, body: unknown): Promise<SubmittedStep>;
}

/** What resuming a run did. */
export interface ResumedRun {
  readonly run_id: string;
  /** The checkpoint the interrupted steps' lifecycles were rebuilt from, if the run had one. */
  readonly checkpoint_id: string | null;
  /** Steps that were left running, now closed with `WORKER_RESET`. */
  readonly interrupted: readonly string[];
  /** The submitted steps among them, each run again: the old id and the new step. */
  readonly rerun: readonly { readonly step_id: string; readonly rerun: SubmittedStep }[];
  /**
   * Steps that waited for an approval decided before the stop but not acted on: now going
   * on (approved, the same step) or failed (rejected, `null`).
   */
  readonly decided: readonly { readonly step_id: string; readonly step: SubmittedStep | null }[];
}

const OPEN: ReadonlySet<string> = new Set(['queued', 'running']);

/**
 * Resumes one run of the store (see the module). Refused with `ConflictError` while this
 * runtime itself runs steps of it, and for a run that is not `running`; `NotFoundError` for
 * an unknown run.
 */
export async function resumeRun(deps: ResumeDeps, runId: string): Promise<ResumedRun> {
  const run = await deps.store.getRun(runId);
  if (!run) throw new NotFoundError('run', runId);
  if (run.status !== 'running' && run.status !== 'waiting') {
    throw new ConflictError(`run ${runId} is ${run.status}: there is nothing to resume`, {
      details: { status: run.status },
    });
  }
  if (deps.system.list('step').some((e) => e.runId === runId)) {
    throw new ConflictError(`run ${runId} has steps running in this runtime`);
  }
  if (run.entry.startsWith(ACTOR_ENTRY_PREFIX)) {
    throw new ConflictError(
      `run ${runId} is a durable agent's (${run.entry}): its durable agents pick it up (runtime.recoverActors())`,
    );
  }
  const checkpoint = (await deps.store.listCheckpoints(runId)).at(-1) ?? null;
  const steps = await deps.store.listSteps(runId);
  const interrupted = steps.filter((s) => OPEN.has(s.status));
  for (const step of interrupted) await closeInterrupted(deps, step, checkpoint);
  await flushed(deps.store);
  const rerun: { step_id: string; rerun: SubmittedStep }[] = [];
  for (const step of interrupted) {
    const body = resubmission(step);
    if (!body) continue;
    await deps.store.releaseClientToken(step.step_id);
    rerun.push({ step_id: step.step_id, rerun: await deps.submit(runId, body) });
  }
  const decided: { step_id: string; step: SubmittedStep | null }[] = [];
  for (const { step, approval } of await decidedButWaiting(deps.store, runId)) {
    decided.push({ step_id: step.step_id, step: await settleDecided(deps, step, approval) });
  }
  deps.logger.info(
    { run_id: runId, interrupted: interrupted.length, rerun: rerun.length },
    'run resumed',
  );
  return {
    run_id: runId,
    checkpoint_id: checkpoint?.checkpoint_id ?? null,
    interrupted: interrupted.map((s) => s.step_id),
    rerun,
    decided,
  };
}

/** Resumes every `running` run of the store; a run that cannot be resumed is logged and skipped. */
export async function resumeRuns(
  deps: ResumeDeps,
  except: (run: RunRecord) => boolean = () => false,
): Promise<ResumedRun[]> {
  const out: ResumedRun[] = [];
  for (const run of await deps.store.listRuns({ status: ['running', 'waiting'] })) {
    // A durable agent's run lives as long as its actor: its durable agents pick it up.
    if (except(run) || run.entry.startsWith(ACTOR_ENTRY_PREFIX)) continue;
    try {
      out.push(await resumeRun(deps, run.run_id));
    } catch (err) {
      deps.logger.error({ err, run_id: run.run_id }, 'run could not be resumed');
    }
  }
  return out;
}

/**
 * Closes a step left running: its lifecycle rebuilt (from the checkpoint's snapshot of it,
 * if any, and its log), then an `error` `WORKER_RESET` appended and the record ended.
 */
async function closeInterrupted(
  deps: ResumeDeps,
  step: StepRecord,
  checkpoint: CheckpointRecord | null,
): Promise<void> {
  const error = toErrorPayload(
    new WorkerResetError(
      `step ${step.step_id} (${step.name}) was interrupted: the runtime running it stopped`,
      {
        details: {
          reason: 'interrupted',
          ...(step.client_token === null ? {} : { client_token: step.client_token }),
        },
      },
    ),
  );
  await endStoredStep(deps, step, {
    status: 'failed',
    error,
    snapshot: checkpoint?.snapshots[step.step_id],
  });
  // A submitted step's run adds its usage when it ends, and this one never will: what it had
  // spent when the runtime stopped (kept current while it ran) counts against the run's
  // budgets all the same (POLICY-3000). Its children's use is part of it.
  const used = step.budget_usage;
  if (
    step.parent_step_id === null &&
    (used.tokens_in > 0 || used.tokens_out > 0 || used.cost_usd > 0 || used.wall_ms > 0)
  ) {
    await deps.store.addRunUsage(step.run_id, used, step.step_id);
  }
}
