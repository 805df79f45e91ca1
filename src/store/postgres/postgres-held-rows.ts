/**
 * @module Rows the PostgreSQL store holds back until its next batch (issue 47): a new run or
 * step is kept as its row, and what happens to it before the batch leaves — its events, its
 * end, its run's usage — goes into that row, so a short step is one insert carrying its whole
 * log and its end; a record written before is one update (and one chunk of its log) a batch,
 * and a run's usage one addition a batch, however many of its steps ended.
 *
 * A write is held only when the store can check it from what it knows: the runs and steps it
 * created itself (ids taken, logs' ends), each for as long as it keeps it
 * ({@link MAX_KNOWN} of each, the oldest forgotten first; a step when it ends). Anything else —
 * a record another process wrote, a step with a client token, a durable agent's message, a
 * fleet writer's fenced write — is asked of the server as before, and its promise waits for
 * the batch's commit. A held write resolves at once and is durable when `flush()` resolves
 * (`RunStore.flush`); the server checks every row again when it writes it
 * (`postgres-held-functions.ts`).
 */
import { ConflictError } from '../../errors/conflict-error.js';
import type { BudgetUsage, StepEvent } from '../../streams/events.js';
import { copyRunRecord, copyStepRecord, KEPT } from '../copy-records.js';
import { deepCopy } from '../deep-copy.js';
import { addUsage } from '../records.js';
import type { RunPatch, RunRecord, StepPatch, StepRecord } from '../records.js';
import type { StepEnd } from '../run-store.js';

/** Records of each kind the store keeps knowing at most; the oldest idle ones go first. */
export const MAX_KNOWN = 100_000;

/** A run the store created, and what it holds of it for the next batch. */
interface KnownRun {
  /** Its row, when it is not at the server yet: every held change is in it. */
  insert: Record<string, unknown> | null;
  /** Changes to a run at the server: the merged patch, then the usage to add. */
  patch: Record<string, unknown> | null;
  usage: BudgetUsage | null;
  /** Whether it has something for the next batch. */
  dirty: boolean;
}

/** A step the store created, its log's end, and what it holds of it for the next batch. */
interface KnownStep {
  readonly id: string;
  readonly runId: string;
  /** The seq of the last event of its log, held ones included. */
  last: number;
  /** Its log's last seq at the server once the batches sent so far commit. */
  sent: number;
  /** Its row, when it is not at the server yet. */
  insert: Record<string, unknown> | null;
  /** Its held events (`seq` `sent + 1` …), as JSON without `step_id` and `seq`. */
  events: string[];
  /** Changes to a step at the server: the merged patch and the fields removed first. */
  patch: Record<string, unknown> | null;
  drop: string[];
  /** Ended: forgotten once its end is sent. */
  ended: boolean;
  dirty: boolean;
}

/** An event as a chunk keeps it: without `step_id` and `seq`, its other keys in order. */
export function chunkEventJson(e: StepEvent): string {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(e)) {
    if (key !== 'step_id' && key !== 'seq') out[key] = (e as Record<string, unknown>)[key];
  }
  return JSON.stringify(out);
}

/** The events of a chunk (`first` the seq of its first), those after `afterSeq`, into `into`. */
export function chunkEvents(
  stepId: string,
  first: number,
  stored: readonly Record<string, unknown>[],
  afterSeq: number,
  into: StepEvent[],
): void {
  for (let k = Math.max(0, afterSeq - first + 1); k < stored.length; k++) {
    const s = stored[k] as Record<string, unknown>;
    const event: Record<string, unknown> = { type: s['type'], step_id: stepId, seq: first + k };
    for (const key of Object.keys(s)) if (key !== 'type') event[key] = s[key];
    into.push(event as StepEvent);
  }
}

/** A run's patch as its record takes it: only the fields a patch may set. */
function runFields(patch: RunPatch): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (patch.status !== undefined) out['status'] = patch.status;
  if (patch.budget_usage) out['budget_usage'] = { ...patch.budget_usage };
  if (patch.provenance !== undefined) out['provenance'] = deepCopy(patch.provenance);
  if (patch.ended_at !== undefined) out['ended_at'] = patch.ended_at;
  return out;
}

/** A step's patch as its record takes it; `output` present but undefined removes it. */
function stepFields(patch: StepPatch): { set: Record<string, unknown>; dropOutput: boolean } {
  const set: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(patch)) {
    // Copied: the caller may change its objects after the write resolves.
    if (value !== undefined) set[key] = deepCopy(value);
  }
  return { set, dropOutput: 'output' in patch && patch.output === undefined };
}

/** The typed refusal of an append whose `seq` does not continue the step's log. */
function seqConflict(stepId: string, expected: number, got: number): ConflictError {
  return new ConflictError(`step ${stepId}: expected seq ${expected}, got ${got}`, {
    details: { step_id: stepId, expected, got },
  });
}

/** The held rows of one store; see the module. */
export class PostgresHeldRows {
  readonly #runs = new Map<string, KnownRun>();
  readonly #steps = new Map<string, KnownStep>();
  /** What the next batch writes, in the order first held. */
  #dirtyRuns: KnownRun[] = [];
  #dirtyRunIds: string[] = [];
  #dirtySteps: KnownStep[] = [];
  #released: (readonly [string, string])[] = [];

  /** Whether a write is held for the next batch. */
  get pending(): boolean {
    return this.#dirtyRuns.length > 0 || this.#dirtySteps.length > 0;
  }

  /** Forgets everything (the store's held writes failed: it asks the server from now on). */
  clear(): void {
    this.#runs.clear();
    this.#steps.clear();
  }

  /** Forgets a step (a write of it goes to the server): its held rows still go. */
  forgetStep(stepId: string): void {
    this.#steps.delete(stepId);
  }

  #runDirty(id: string, run: KnownRun): void {
    if (run.dirty) return;
    run.dirty = true;
    this.#dirtyRuns.push(run);
    this.#dirtyRunIds.push(id);
  }

  #stepDirty(step: KnownStep): void {
    if (step.dirty) return;
    step.dirty = true;
    this.#dirtySteps.push(step);
  }

  /** Learns of a run the server created for this store (before it held writes). */
  knowRun(runId: string): void {
    if (!this.#runs.has(runId)) {
      this.#runs.set(runId, { insert: null, patch: null, usage: null, dirty: false });
    }
  }

  /** Learns of a step the server created for this store, its log empty. */
  knowStep(step: StepRecord): void {
    if (this.#steps.has(step.step_id)) return;
    this.#steps.set(step.step_id, {
      id: step.step_id,
      runId: step.run_id,
      last: 0,
      sent: 0,
      insert: null,
      events: [],
      patch: null,
      drop: [],
      ended: false,
      dirty: false,
    });
  }

  /** Holds a new run; `ConflictError` when the store made one with its id. */
  createRun(run: RunRecord): true {
    if (this.#runs.has(run.run_id)) throw new ConflictError(`run ${run.run_id} exists`);
    const known: KnownRun = {
      insert: { ...copyRunRecord(run, KEPT) },
      patch: null,
      usage: null,
      dirty: false,
    };
    this.#runs.set(run.run_id, known);
    this.#runDirty(run.run_id, known);
    return true;
  }

  /** Holds a run's patch; false when the store does not know the run. */
  updateRun(runId: string, patch: RunPatch): boolean {
    const run = this.#runs.get(runId);
    if (!run) return false;
    const fields = runFields(patch);
    if (run.insert) Object.assign(run.insert, fields);
    else {
      run.patch = { ...run.patch, ...fields };
      // A usage set replaces what earlier steps' ends added.
      if (fields['budget_usage']) run.usage = null;
    }
    this.#runDirty(runId, run);
    return true;
  }

  /** Whether the store knows `runId` (it can hold a write of it). */
  knowsRun(runId: string): boolean {
    return this.#runs.has(runId);
  }

  #addUsage(runId: string, usage: BudgetUsage): void {
    const run = this.#runs.get(runId) as KnownRun;
    if (run.insert) {
      run.insert['budget_usage'] = addUsage(run.insert['budget_usage'] as BudgetUsage, usage);
    } else run.usage = run.usage ? addUsage(run.usage, usage) : { ...usage };
    this.#runDirty(runId, run);
  }

  /**
   * Holds a new step without a client token of a run the store knows; false otherwise.
   * `ConflictError` when the store made a step with its id.
   */
  createStep(step: StepRecord): boolean {
    if (this.#steps.has(step.step_id)) throw new ConflictError(`step ${step.step_id} exists`);
    if (step.client_token !== null || !this.#runs.has(step.run_id)) return false;
    const known: KnownStep = {
      id: step.step_id,
      runId: step.run_id,
      last: 0,
      sent: 0,
      insert: { ...copyStepRecord(step, KEPT) },
      events: [],
      patch: null,
      drop: [],
      ended: false,
      dirty: false,
    };
    this.#steps.set(step.step_id, known);
    this.#stepDirty(known);
    return true;
  }

  /**
   * Holds events of steps the store knows, all of them or none: false when it does not know
   * one of their steps; `ConflictError` (nothing held) when a `seq` does not continue its log.
   */
  appendEvents(events: readonly StepEvent[]): boolean {
    const lasts = new Map<KnownStep, number>();
    for (const e of events) {
      const step = this.#steps.get(e.step_id);
      if (!step) return false;
      const at = lasts.get(step) ?? step.last;
      if (e.seq !== at + 1) throw seqConflict(e.step_id, at + 1, e.seq);
      lasts.set(step, e.seq);
    }
    for (const e of events) {
      const step = this.#steps.get(e.step_id) as KnownStep;
      step.events.push(chunkEventJson(e));
      step.last = e.seq;
      this.#stepDirty(step);
    }
    return true;
  }

  /** Holds a step's patch; false when the store does not know the step. */
  updateStep(stepId: string, patch: StepPatch): boolean {
    const step = this.#steps.get(stepId);
    if (!step) return false;
    this.#patchStep(step, patch);
    return true;
  }

  #patchStep(step: KnownStep, patch: StepPatch): void {
    const { set, dropOutput } = stepFields(patch);
    if (step.insert) {
      if (dropOutput) delete step.insert['output'];
      Object.assign(step.insert, set);
    } else {
      if (dropOutput) {
        if (step.patch) delete step.patch['output'];
        step.drop = ['output'];
      }
      step.patch = { ...step.patch, ...set };
    }
    this.#stepDirty(step);
  }

  /**
   * Holds a step's end — its last events, its patch, its run's usage — when the store knows
   * the step (and its run, with a usage) and the events are the step's own; false otherwise
   * (and a durable agent's message's end is never held). `ConflictError` as
   * {@link appendEvents}.
   */
  endStep(end: StepEnd): boolean {
    const step = this.#steps.get(end.stepId);
    if (!step || end.actor) return false;
    if (end.runUsage && !this.#runs.has(end.runId)) return false;
    if (end.events.some((e) => e.step_id !== end.stepId)) return false;
    this.appendEvents(end.events);
    this.#patchStep(step, end.patch);
    step.ended = true;
    if (end.runUsage) {
      this.#addUsage(end.runId, end.runUsage);
      this.#released.push([end.runId, end.stepId]);
    }
    return true;
  }

  /**
   * What the next batch writes, as `write_held`'s argument (JSON text), and nothing held any
   * more; `null` when nothing is held.
   */
  take(): string | null {
    if (!this.pending) return null;
    const runs: string[] = [];
    const runUpdates: string[] = [];
    for (let i = 0; i < this.#dirtyRuns.length; i++) {
      const run = this.#dirtyRuns[i] as KnownRun;
      run.dirty = false;
      if (run.insert) {
        runs.push(JSON.stringify(run.insert));
        run.insert = null;
        continue;
      }
      const update: Record<string, unknown> = { id: this.#dirtyRunIds[i] };
      if (run.patch) update['patch'] = run.patch;
      if (run.usage) update['usage'] = run.usage;
      runUpdates.push(JSON.stringify(update));
      run.patch = run.usage = null;
    }
    const steps: string[] = [];
    const stepUpdates: string[] = [];
    for (const step of this.#dirtySteps) {
      step.dirty = false;
      const log = step.events.length > 0 ? `[${step.events.join(',')}]` : null;
      if (step.insert) {
        const head = JSON.stringify({ id: step.id, run: step.runId, last: step.last });
        const record = JSON.stringify(step.insert);
        steps.push(`${head.slice(0, -1)},"record":${record}${log ? `,"log":${log}` : ''}}`);
        step.insert = null;
      } else {
        const update: Record<string, unknown> = { id: step.id };
        if (log) Object.assign(update, { prev: step.sent, last: step.last });
        if (step.patch) Object.assign(update, { patch: step.patch, drop: step.drop });
        const head = JSON.stringify(update);
        stepUpdates.push(log ? `${head.slice(0, -1)},"events":${log}}` : head);
        step.patch = null;
        step.drop = [];
      }
      step.events = [];
      step.sent = step.last;
      if (step.ended) this.#steps.delete(step.id);
    }
    const parts: string[] = [];
    if (runs.length > 0) parts.push(`"runs":[${runs.join(',')}]`);
    if (steps.length > 0) parts.push(`"steps":[${steps.join(',')}]`);
    if (stepUpdates.length > 0) parts.push(`"step_updates":[${stepUpdates.join(',')}]`);
    if (runUpdates.length > 0) parts.push(`"run_updates":[${runUpdates.join(',')}]`);
    if (this.#released.length > 0) parts.push(`"released":${JSON.stringify(this.#released)}`);
    this.#dirtyRuns = [];
    this.#dirtyRunIds = [];
    this.#dirtySteps = [];
    this.#released = [];
    this.#bound();
    return `{${parts.join(',')}}`;
  }

  /** Forgets the oldest records past {@link MAX_KNOWN} (none is held now). */
  #bound(): void {
    for (const map of [this.#runs, this.#steps] as Map<string, unknown>[]) {
      if (map.size <= MAX_KNOWN) continue;
      let over = map.size - MAX_KNOWN;
      for (const key of map.keys()) {
        if (over-- <= 0) break;
        map.delete(key);
      }
    }
  }
}
