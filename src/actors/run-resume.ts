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
import type { SnapshotFrom } from 'xstate';
import { isoTime, type Clock } from '../context/clock.js';
import { ConflictError } from '../errors/conflict-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import { toErrorPayload } from '../errors/to-error-payload.js';
import { WorkerResetError } from '../errors/worker-reset-error.js';
import type { Logger } from '../observability/logger.js';
import type { CheckpointRecord, StepRecord } from '../store/records.js';
import { flushed, type RunStore } from '../store/run-store.js';
import type { ActorSystem } from './actor-system.js';
import { StepActor } from './step-actor.js';
import { StepLifecycle } from './step-lifecycle.js';
import type { stepMachine } from './step-machine.js';
import type { SubmittedStep } from './step-submission.js';

/** What resuming needs from the runtime. */
export interface ResumeDeps {
  readonly store: RunStore;
  readonly system: ActorSystem;
  readonly clock: Clock;
  readonly logger: Logger;
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
  if (run.status !== 'running') {
    throw new ConflictError(`run ${runId} is ${run.status}: there is nothing to resume`, {
      details: { status: run.status },
    });
  }
  if (deps.system.list('step').some((e) => e.runId === runId)) {
    throw new ConflictError(`run ${runId} has steps running in this runtime`);
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
  deps.logger.info(
    { run_id: runId, interrupted: interrupted.length, rerun: rerun.length },
    'run resumed',
  );
  return {
    run_id: runId,
    checkpoint_id: checkpoint?.checkpoint_id ?? null,
    interrupted: interrupted.map((s) => s.step_id),
    rerun,
  };
}

/** Resumes every `running` run of the store; a run that cannot be resumed is logged and skipped. */
export async function resumeRuns(deps: ResumeDeps): Promise<ResumedRun[]> {
  const out: ResumedRun[] = [];
  for (const run of await deps.store.listRuns({ status: ['running'] })) {
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
  const snapshot = checkpoint?.snapshots[step.step_id] as
    SnapshotFrom<typeof stepMachine> | undefined;
  const lifecycle = StepLifecycle.fromLog(
    step.step_id,
    await deps.store.readEvents(step.step_id),
    snapshot,
  );
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
  const actor = new StepActor({
    stepId: step.step_id,
    path: step.actor_path,
    store: deps.store,
    clock: deps.clock,
    tap: null,
    lifecycle,
  });
  if (!actor.isFinal) actor.fail(error);
  await actor.drain();
  await deps.store.updateStep(step.step_id, {
    status: 'failed',
    error,
    ended_at: isoTime(deps.clock.now()),
  });
}

/** The submission that makes `step` again, if it was submitted to its run (a root step with a client token). */
function resubmission(step: StepRecord): unknown {
  if (step.parent_step_id !== null || step.client_token === null) return null;
  const input = step.input as Record<string, unknown>;
  switch (step.type) {
    case 'agent':
      return {
        type: 'agent',
        client_token: step.client_token,
        input: {
          agent: step.name,
          message: input['message'],
          ...(input['args'] === undefined ? {} : { args: input['args'] }),
        },
      };
    case 'tool_call':
    case 'llm_call':
    case 'llm_plan':
    case 'checkpoint':
      return { type: step.type, client_token: step.client_token, input };
    default:
      return null;
  }
}
