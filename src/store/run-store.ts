/** @module The RunStore interface: runs, steps and each step's append-only event log. */
import type { StepEvent } from '../streams/events.js';
import type { RunPatch, RunRecord, StepPatch, StepRecord } from './records.js';

/**
 * Where runs, steps and event logs live. The log is the truth: an event a subscriber has
 * seen has been appended first. One conformance suite (`test/store/run-store.conformance.ts`)
 * runs against every implementation.
 *
 * Every method is async; lookups of unknown ids resolve `null`, updates of unknown ids
 * reject with `NotFoundError`.
 */
export interface RunStore {
  createRun(run: RunRecord): Promise<void>;
  getRun(runId: string): Promise<RunRecord | null>;
  updateRun(runId: string, patch: RunPatch): Promise<RunRecord>;
  createStep(step: StepRecord): Promise<void>;
  getStep(stepId: string): Promise<StepRecord | null>;
  updateStep(stepId: string, patch: StepPatch): Promise<StepRecord>;
  /** Steps of a run in creation order. */
  listSteps(runId: string): Promise<StepRecord[]>;
  /**
   * Appends events of one or more steps, in order. Per step, `seq` must continue the log
   * (1, 2, 3, …) or the whole batch is refused with `ConflictError`.
   */
  appendEvents(events: readonly StepEvent[]): Promise<void>;
  /** Events of a step with `seq > afterSeq` (default 0: all), in order. */
  readEvents(stepId: string, afterSeq?: number): Promise<StepEvent[]>;
  /** Releases connections and handles. */
  close(): Promise<void>;
}
