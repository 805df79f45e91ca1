/**
 * @module Steps of a fleet that nobody runs any more: their job failed (BullMQ gave up on it
 * after it stalled too often: its replicas died holding it) or is gone from its queue
 * (removed), while their record still says `queued` or `running`. Such a step is ended
 * `failed` with `WORKER_LOST` (retriable) by whichever API process notices first — one that
 * waits on it (a run's cancel, an HTTP submission's slot) or follows it (a stream), or any
 * one's sweep of the fleet's open steps (those queued a check ago and not yet ended, watched
 * or not) — so no cancel, completion or follower waits on it for ever, and no step nobody
 * looks at stays open.
 */
import { toErrorPayload } from '../errors/to-error-payload.js';
import { WorkerLostError } from '../errors/worker-lost-error.js';
import type { Logger } from '../observability/logger.js';
import type { StepDispatch } from '../placement/fleet/fleet-jobs.js';
import type { StepRecord } from '../store/records.js';
import type { FlowApiDeps } from './flow-api.js';
import { onFleet } from './run-control.js';
import { endIfOpen } from './stored-step-end.js';

/**
 * A job of one of these states is its step's loss. `unknown` (no such job) only once seen on
 * two looks in a row: a step's record is claimed a moment before its job is queued.
 */
const LOST = 'failed';
const MISSING = 'unknown';

/**
 * The most of the fleet's open steps one look sweeps: each look goes on after the last one
 * it swept, and starts again from the oldest once it has seen them all.
 */
const SWEEP_LIMIT = 500;

/** Looks for lost steps among those a runtime watches, every `dispatch.lostCheckMs`. */
export class LostSteps {
  readonly #deps: FlowApiDeps & { readonly logger: Logger };
  readonly #dispatch: StepDispatch;
  /** Steps whose job was missing at the last look. */
  #missing = new Set<string>();
  /** When the last step the last sweep saw was queued (ms): the next goes on after it. */
  #sweptTo = 0;
  readonly #timer: NodeJS.Timeout;
  #looking: Promise<void> | null = null;

  constructor(deps: FlowApiDeps & { readonly logger: Logger }, dispatch: StepDispatch) {
    this.#deps = deps;
    this.#dispatch = dispatch;
    this.#timer = setInterval(() => {
      this.#looking ??= this.look().finally(() => {
        this.#looking = null;
      });
    }, dispatch.lostCheckMs);
    this.#timer.unref();
  }

  /**
   * Looks once at the watched steps and the fleet's open steps queued before the last check;
   * ends the lost ones (see the module), and takes those found ended off the open steps.
   */
  async look(): Promise<void> {
    try {
      const page = await this.#dispatch.openSteps(
        this.#sweptTo,
        Date.now() - this.#dispatch.lostCheckMs,
        SWEEP_LIMIT,
      );
      this.#sweptTo = page.length < SWEEP_LIMIT ? 0 : (page.at(-1)?.queuedAt ?? 0);
      const swept = page.map((p) => p.stepId);
      const ids = [...new Set([...this.#dispatch.watched(), ...swept])];
      const records = await Promise.all(ids.map((id) => this.#deps.store.getStep(id)));
      const steps = records.filter((s): s is StepRecord => s !== null && onFleet(s));
      const open = new Set(steps.map((s) => s.step_id));
      await this.#dispatch.closeSteps(swept.filter((id) => !open.has(id)));
      const states = await this.#dispatch.jobStates(steps);
      const missing = new Set<string>();
      for (const step of steps) {
        const state = states.get(step.step_id);
        if (state === MISSING) missing.add(step.step_id);
        if (state === LOST || (state === MISSING && this.#missing.has(step.step_id))) {
          await this.#end(step, state);
        }
      }
      this.#missing = missing;
    } catch (err) {
      this.#deps.logger.warn({ err }, 'fleet: could not look for lost steps');
    }
  }

  /** Ends `step` `WORKER_LOST` if its record is still open, and says so to those waiting. */
  async #end(step: StepRecord, state: string): Promise<void> {
    const error = new WorkerLostError(
      state === LOST
        ? `step ${step.step_id} was lost: its job failed (its replicas went away holding it)`
        : `step ${step.step_id} was lost: its job is no longer in its pool's queue`,
      { details: { reason: state === LOST ? 'job_failed' : 'job_missing' } },
    );
    const end = { status: 'failed', error: toErrorPayload(error) } as const;
    // Read again: it may have ended meanwhile.
    if (!(await endIfOpen(this.#deps, step.step_id, end, onFleet)).ended) return;
    this.#deps.logger.error(
      { step_id: step.step_id, pool_id: step.placement_decision?.pool_id, state },
      'fleet: a step nobody runs any more ended WORKER_LOST',
    );
    await this.#dispatch.endedHere(step.step_id, 'failed');
  }

  close(): Promise<void> {
    clearInterval(this.#timer);
    return this.#looking ?? Promise.resolve();
  }
}
