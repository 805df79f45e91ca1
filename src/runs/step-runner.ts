/**
 * @module Runs one step under supervision: child context, step record, lifecycle actor,
 * span, deadline, and the end / error / cancel that closes it. Behaviour-agnostic: the
 * placement decides how `execute` runs.
 */
import { LoggedWork } from '../actors/logged-work.js';
import type { Span } from '@opentelemetry/api';
import { isoTime } from '../context/clock.js';
import type { ExecContext } from '../context/exec-context.js';
import type { AxonError } from '../errors/axon-error.js';
import { CancelledError } from '../errors/cancelled-error.js';
import { StepSuspendedError } from '../errors/step-suspended-error.js';
import { ActorWaitError } from '../errors/actor-wait-error.js';
import { TimeoutError } from '../errors/timeout-error.js';
import { toAxonError, toErrorPayload } from '../errors/to-error-payload.js';
import { endOperationSpan, startOperationSpan } from '../observability/tracer.js';
import type { StepRecord, WireBudgets } from '../store/records.js';
import type { StepEnd } from '../store/run-store.js';
import {
  startProvenance,
  stepProvenance,
  type BudgetUsage,
  type StepEvent,
} from '../streams/events.js';
import { armStepDeadline } from '../supervisors/step-deadline.js';
import { runCallsOf } from './run-calls.js';
import { StepActor } from '../actors/step-actor.js';
import { writeStepEnd } from './step-end-write.js';
import {
  AlreadyClaimed,
  type StepOutcome,
  type StepRequest,
  type StepRunnerDeps,
} from './step-request.js';

type Settled =
  { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown };

/** A step's budgets when it was given none of its own. */
const NO_BUDGETS: WireBudgets = Object.freeze({});

function noop(): void {
  /* nothing to undo */
}

/**
 * Runs `req` to its end. Rejects only when the step could not begin (the narrowing
 * widened, the store refused the step); every outcome after `started` resolves.
 *
 * A handler that ignores its signal does not hold the step: on timeout or cancel the step
 * ends at once and whatever the handler emits later is refused.
 */
export async function runStep(deps: StepRunnerDeps, req: StepRequest): Promise<StepOutcome> {
  const { parentCtx } = req;
  const { system } = deps;
  const resume = req.submission?.resume;
  const stepId = resume ? resume.record.step_id : system.ids.id('step');
  const path = parentCtx.path.concat(req.name);
  const span = startOperationSpan(
    deps.tracer,
    req.operation,
    req.name,
    req.parentSpan ?? parentCtx.span,
    {
      'axon.step_id': stepId,
      'axon.run_id': req.runId,
      'axon.trace_id': parentCtx.traceId,
    },
  );
  let logFailure: unknown = null;
  let ctx: ExecContext | undefined;
  let starting: Promise<void> | null = null;
  const step = new StepActor({
    stepId,
    path,
    store: deps.store,
    clock: system.clock,
    tap: req.tap === undefined ? parentCtx.tap : req.tap,
    feeds: deps.feeds,
    inspect: deps.inspect,
    onLogFailure: (err) => {
      logFailure ??= err;
      ctx?.cancel(err);
    },
    ...(resume && resume.fresh !== true
      ? {
          lifecycle: resume.lifecycle,
          logged: new LoggedWork(stepId, resume.logged),
          firstTokenAt: resume.logged.find((e) => e.type === 'token')?.ts ?? null,
        }
      : {}),
  });
  try {
    ctx = parentCtx.child(req.name, req.narrowing, {
      stream: step.sink,
      span,
      runId: req.runId,
      stepId,
      path,
      tap: req.tap === undefined ? parentCtx.tap : req.tap,
    });
    const startedIso = isoTime(ctx.createdAt);
    const record: StepRecord = {
      step_id: stepId,
      run_id: req.runId,
      type: req.type,
      name: req.name,
      parent_step_id: parentCtx.stepId,
      actor_path: path,
      client_token: req.submission?.clientToken ?? null,
      input: req.input,
      placement: req.placement ?? 'inline',
      status: 'running',
      budget_usage: { tokens_in: 0, tokens_out: 0, cost_usd: 0, wall_ms: 0 },
      provenance: null,
      output: null,
      error: null,
      created_at: startedIso,
      started_at: startedIso,
      ended_at: null,
      budgets: req.submission?.budgets ?? NO_BUDGETS,
      placement_decision: runCallsOf(parentCtx)?.placement ?? deps.placement ?? null,
      first_token_at: null,
    };
    if (resume) {
      // A queued step starts now; one going on keeps the start it had.
      const patch =
        resume.fresh === true
          ? ({ status: 'running', started_at: startedIso } as const)
          : ({ status: 'running' } as const);
      const updating = deps.store.updateStep(stepId, patch);
      if (resume.fresh === true) {
        // A queued step's `running` goes to the store with its `started`, in one call; its
        // work waits for both (below), and a refused write fails it as a refused log does.
        starting = updating;
        starting.catch(noop);
      } else {
        await updating;
      }
      req.submission.onClaimed({ ...resume.record, ...patch }, true);
    } else if (req.submission) {
      const claim = await deps.store.claimStep(record);
      req.submission.onClaimed(claim.step, claim.created);
      if (!claim.created) throw new AlreadyClaimed(claim.step);
    } else {
      await deps.store.createStep(record);
    }
  } catch (err) {
    step.actor.stop();
    ctx?.dispose();
    endOperationSpan(span, err instanceof AlreadyClaimed ? {} : { error: toErrorPayload(err) });
    throw err;
  }
  const stepCtx = ctx;
  // A submitted step is where an approval suspends the work of its tree.
  if (req.submission) {
    const calls = runCallsOf(stepCtx);
    if (calls) {
      calls.root = {
        stepId,
        ctx: stepCtx,
        isOpen: () => step.isOpen,
        narrate: (text) => {
          step.emit({ type: 'narration', text });
        },
        persistedSnapshot: () => step.actor.getPersistedSnapshot(),
      };
    }
  }
  system.register({
    id: stepId,
    kind: 'step',
    name: req.name,
    ref: step.registryRef,
    runId: req.runId,
    ctx: stepCtx,
  });
  if (req.submission) keepUsageStored(deps, step, stepCtx);
  const startedAt = stepCtx.createdAt;
  // Every step reports where it runs and its run's seed (NERVE-4020).
  const seed = runCallsOf(stepCtx)?.seed ?? null;
  const replicaId = deps.replicaId ?? null;
  if (!resume || resume.fresh === true) {
    step.start({
      provenance: startProvenance(seed, deps.poolId, replicaId),
      pool_id: deps.poolId,
      // A fleet replica says which one it is (API.md's `started`); embedded there is one.
      ...(replicaId === null ? {} : { replica_id: replicaId }),
    });
  }
  if (starting) {
    try {
      await starting;
    } catch (err) {
      logFailure ??= err;
      stepCtx.cancel(err);
    }
  }
  const disarm = armStepDeadline(stepCtx, req.timeoutMs);

  // One promise settles on whichever comes first: the work, or a cancel / timeout.
  let offCancel: () => void = noop;
  let settled: Settled | null;
  let running: Promise<unknown> | null = null;
  try {
    settled = await new Promise<Settled | null>((resolve) => {
      offCancel = stepCtx.onCancel(() => {
        resolve(null);
      });
      // Already cancelled or past its deadline: the work is not started at all.
      if (stepCtx.isCancelled()) return;
      let work: Promise<unknown>;
      try {
        work = req.execute(stepCtx, step);
        running = work;
        if (req.submission) work = replayedInFull(work, stepCtx);
      } catch (error) {
        resolve({ ok: false, error });
        return;
      }
      work.then(
        (value) => {
          resolve({ ok: true, value });
        },
        (error: unknown) => {
          resolve({ ok: false, error });
        },
      );
    });
  } finally {
    disarm();
    offCancel();
  }
  // A container is removed at a cancel or timeout: its step ends once it is gone (bounded),
  // so nothing of an ended step is left running.
  // (`running` is set in the promise's executor above, which TypeScript does not follow.)
  const started = running as Promise<unknown> | null;
  if (settled === null && req.placement === 'container' && started) {
    await boundedWait(started, CONTAINER_REMOVAL_WAIT_MS);
  }

  const suspended = suspendedBy(stepCtx, stepId);
  if (suspended) return suspend(deps, req, stepCtx, step, span, suspended, running);

  // Decide the outcome. A cancel or timeout wins over whatever the handler did after it.
  let status: StepOutcome['status'];
  let error: AxonError | null = null;
  let output: unknown = null;
  if (stepCtx.isCancelled()) {
    error = toAxonError(stepCtx.cancelReason);
    status =
      error instanceof TimeoutError || !(error instanceof CancelledError) ? 'failed' : 'cancelled';
  } else if (settled && !settled.ok) {
    error = toAxonError(settled.error);
    status = 'failed';
  } else {
    output = settled?.value ?? null;
    status = 'succeeded';
  }
  if (status === 'succeeded') {
    try {
      step.checkReproduced();
    } catch (err) {
      error = toAxonError(err);
      status = 'failed';
    }
  }
  // Run again, its work made other output than its log holds: that, whatever it did next.
  const diverged = step.divergence;
  if (diverged && status !== 'cancelled') {
    error = diverged;
    status = 'failed';
  }
  if (logFailure !== null) {
    error = toAxonError(logFailure);
    status = 'failed';
  }
  const endedAt = system.clock.now();
  const usage = usageOf(stepCtx, endedAt);
  const provenance = stepProvenance(usage, stepCtx.lastCall, deps.poolId, replicaId, seed);
  const payload = error ? toErrorPayload(error) : null;
  // Its last events go to the store with its record's end, in one write.
  step.holdLog();
  try {
    if (status === 'succeeded') step.end({ output, budget_usage: usage, provenance });
    else if (status === 'cancelled') step.cancel(payload ?? toErrorPayload(new CancelledError()));
    else step.fail(payload ?? toErrorPayload(error));
  } catch (err) {
    deps.logger.error({ err, step_id: stepId }, 'step could not record its end');
  }
  // Children never outlive their step: cancel whatever the handler left running.
  stepCtx.cancelChildren(() => new CancelledError(`step ${stepId} (${req.name}) ended`));
  stepCtx.dispose();
  let last: StepEvent[] = [];
  try {
    const held = step.takeHeld();
    last = Array.isArray(held) ? held : await held;
  } catch (err) {
    if (status === 'succeeded') {
      status = 'failed';
      error = toAxonError(err);
    }
  }
  const end: StepEnd = {
    stepId,
    runId: req.runId,
    events: last,
    patch: {
      status,
      output,
      error: error ? toErrorPayload(error) : null,
      budget_usage: usage,
      provenance,
      ended_at: isoTime(endedAt),
      ...(step.firstTokenAt === null ? {} : { first_token_at: isoTime(step.firstTokenAt) }),
    },
    // A submitted step's use (its children's with it) is its run's.
    ...(req.submission ? { runUsage: usage } : {}),
    ...(req.submission?.actorEnd
      ? { actor: req.submission.actorEnd(status, error ? toErrorPayload(error) : null) }
      : {}),
  };
  const written = await writeStepEnd(deps.store, step, end, status, error, deps.logger, (to, e) =>
    req.submission?.actorEnd?.(to, e),
  );
  status = written.status;
  error = written.error;
  if (written.ending) req.submission?.onEnded?.(status, written.ending);
  else req.submission?.onEnded?.(null);
  system.unregister(stepId);
  endOperationSpan(span, {
    error: error ? toErrorPayload(error) : undefined,
    tokensIn: usage.tokens_in,
    tokensOut: usage.tokens_out,
  });
  return {
    stepId,
    runId: req.runId,
    status,
    output,
    error,
    usage,
    ctx: stepCtx,
    durationMs: endedAt - startedAt,
  };
}

/** How long a cancelled container step waits for its container's removal at most. */
const CONTAINER_REMOVAL_WAIT_MS = 30_000;

/** Waits for `work` to settle, or `ms`, whichever is first. */
async function boundedWait(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    work.catch(() => undefined),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}

/**
 * A submitted step's work, then, in `strict_replay`, the check that it made every call its
 * recording holds (`RunCalls.replayedInFull`).
 */
function replayedInFull(work: Promise<unknown>, ctx: ExecContext): Promise<unknown> {
  const calls = runCallsOf(ctx);
  if (calls?.mode !== 'strict_replay') return work;
  return work.then(async (output) => {
    await calls.replayedInFull();
    return output;
  });
}

/**
 * Why `ctx`'s step was suspended, if it was: an approval (see `approvals.ts`), or a durable
 * agent's message waiting for a wake (`ActorWaitError`, issue 46).
 */
function suspendedBy(ctx: ExecContext, stepId: string): StepSuspendedError | ActorWaitError | null {
  const reason = ctx.isCancelled() ? ctx.cancelReason : null;
  return (reason instanceof StepSuspendedError || reason instanceof ActorWaitError) &&
    reason.stepId === stepId
    ? reason
    : null;
}

/**
 * Puts a submitted step aside until its approval is decided: the work under it has stopped,
 * its record becomes `waiting`, its log stays open (no `end`, no `error`), and nothing of it
 * stays in memory — `approve` resumes it from the store, in this process or another.
 */
async function suspend(
  deps: StepRunnerDeps,
  req: StepRequest,
  ctx: ExecContext,
  step: StepActor,
  span: Span,
  reason: StepSuspendedError | ActorWaitError,
  work: Promise<unknown> | null,
): Promise<StepOutcome> {
  ctx.cancelChildren(() => reason);
  ctx.dispose();
  const stepId = step.stepId;
  // Whatever the work emits from now on is refused: the step goes on, later, from its log.
  step.detach();
  // A worker's part has ended once its thread let go of the step (cancelled, or terminated
  // after the grace period): a resumed step then never meets it on the pool.
  if ((req.placement === 'worker' || req.placement === 'container') && work) {
    await work.catch(() => undefined);
  }
  let stored = true;
  try {
    await step.drain();
    await deps.store.updateStep(stepId, { status: 'waiting' });
  } catch (err) {
    stored = false;
    deps.logger.error({ err, step_id: stepId }, 'a suspended step could not be stored');
  }
  req.submission?.onEnded?.(stored ? 'waiting' : null);
  deps.system.unregister(stepId);
  endOperationSpan(span, {});
  if (reason instanceof ActorWaitError) {
    deps.logger.debug(
      { step_id: stepId, run_id: req.runId, wake_id: reason.wakeId },
      'message waits',
    );
  } else {
    deps.logger.info(
      { step_id: stepId, run_id: req.runId, approval_id: reason.approvalId },
      'step waits for an approval',
    );
  }
  const endedAt = deps.system.clock.now();
  return {
    stepId,
    runId: req.runId,
    status: 'waiting',
    output: null,
    error: reason,
    usage: usageOf(ctx, endedAt),
    ctx,
    durationMs: endedAt - ctx.createdAt,
  };
}

/**
 * Keeps a submitted step's stored `budget_usage` current while it runs: after each commit of
 * use in its tree (an engine call's tokens and cost), once per turn of the microtask queue.
 * Its run adds a step's usage when the step ends; a runtime restarted after a crash adds an
 * interrupted step's stored usage instead (`run-resume.ts`), so the run's budgets count what
 * was spent before the crash (POLICY-3000).
 */
function keepUsageStored(deps: StepRunnerDeps, step: StepActor, ctx: ExecContext): void {
  let queued = false;
  ctx.ledger.onCommit(() => {
    if (queued) return;
    queued = true;
    queueMicrotask(() => {
      queued = false;
      // The step's end stores its final usage itself.
      if (!step.isOpen) return;
      deps.store
        .updateStep(step.stepId, { budget_usage: usageOf(ctx, deps.system.clock.now()) })
        .catch((err: unknown) => {
          deps.logger.error({ err, step_id: step.stepId }, "a step's usage could not be stored");
        });
    });
  });
}

/** What a step's context committed, and its time from its start to `endedAt`. */
function usageOf(ctx: ExecContext, endedAt: number): BudgetUsage {
  const committed = ctx.ledger.committed;
  return {
    tokens_in: committed.tokensIn,
    tokens_out: committed.tokensOut,
    cost_usd: committed.costUsd,
    wall_ms: endedAt - ctx.createdAt,
  };
}
