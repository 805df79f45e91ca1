/** @module The in-memory RunStore: fast and ephemeral, the default of an embedded runtime. */
import { ConflictError } from '../../errors/conflict-error.js';
import { NotFoundError } from '../../errors/not-found-error.js';
import type { BudgetUsage, StepEvent } from '../../streams/events.js';
import {
  copyRunRecord,
  copyStepEvent,
  KEPT,
  copyStepRecord,
  patchRunRecord,
  patchStepRecord,
} from '../copy-records.js';
import { deepCopy } from '../deep-copy.js';
import { checkFactQuery, selectFacts } from '../fact-query.js';
import { decided } from '../approval-records.js';
import { addUsage, recordingKey, STEP_ENDED } from '../records.js';
import type {
  ApprovalDecision,
  ApprovalRecord,
  CallRecording,
  CheckpointRecord,
  FactQuery,
  FactRecord,
  FlowRecord,
  RecordingKey,
  RunPatch,
  RunRecord,
  RunStatus,
  StepPatch,
  StepRecord,
} from '../records.js';
import { ofRunPage } from '../run-pages.js';
import type { RunPageQuery, RunStore, StepEnd } from '../run-store.js';
import { MemoryActors } from './memory-actors.js';

interface StepEntry {
  record: StepRecord;
  log: StepEvent[];
}

interface RunEntry {
  run: RunRecord;
  /** The run's steps in creation order. */
  steps: StepEntry[];
  /** Steps by client token (NERVE-4003). */
  tokens: Map<string, StepEntry> | null;
  /** Facts in append order, each with its place among all facts of the store. */
  facts: { readonly seq: number; readonly fact: FactRecord }[];
  checkpoints: CheckpointRecord[];
  /** Call recordings by key (see `recordingKey`), in the order first stored. */
  recordings: Map<string, CallRecording> | null;
  /** Approvals by id, in the order requested. */
  approvals: Map<string, ApprovalRecord> | null;
}

/** Options of {@link memoryStore}. */
export interface MemoryStoreOptions {
  /**
   * Finished runs (completed, failed, cancelled) kept, with their steps and logs; past it the
   * oldest are dropped. Runs still going are never dropped. Default 10 000; `Infinity`
   * keeps everything (and grows without bound).
   */
  readonly maxRuns?: number;
}

/** Default of {@link MemoryStoreOptions.maxRuns}. */
export const DEFAULT_MAX_RUNS = 10_000;

const FINISHED: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

/**
 * A {@link RunStore} in the process heap. Nothing survives the process; use the SQLite or
 * Redis store for that. Records and events are deep-copied in and out,
 * so neither the caller's objects nor returned ones share state with the store; like any
 * store, it needs inputs, outputs and event data that can be cloned (plain data, no
 * functions).
 *
 * It keeps at most `maxRuns` finished runs (default 10 000), dropping the oldest, so a
 * long-running service does not grow without bound.
 *
 * @example
 * const runtime = createRuntime({ store: memoryStore({ maxRuns: 1_000 }) });
 */
export class MemoryRunStore implements RunStore {
  readonly maxRuns: number;
  readonly #runs = new Map<string, RunEntry>();
  readonly #steps = new Map<string, StepEntry>();
  readonly #flows = new Map<string, FlowRecord>();
  readonly #flowsByHash = new Map<string, string>();
  /** The run of each approval. */
  readonly #approvalRuns = new Map<string, string>();
  #factSeq = 0;
  /** Ids of finished runs, oldest first from `#evictFrom`; may hold ids already dropped. */
  #finished: string[] = [];
  #evictFrom = 0;

  /** Durable agents (issue 46): actors, mailboxes, wakes and schedules, in the heap too. */
  readonly actors: MemoryActors;

  constructor(options: MemoryStoreOptions = {}) {
    const maxRuns = options.maxRuns ?? DEFAULT_MAX_RUNS;
    if (!(maxRuns >= 1)) throw new RangeError(`memoryStore: maxRuns must be >= 1, got ${maxRuns}`);
    this.maxRuns = maxRuns;
    this.actors = new MemoryActors({
      createRun: (run) => this.#createRun(run),
      claim: (step) => this.#claim(step),
      byToken: (runId, token) => {
        const found = this.#runs.get(runId)?.tokens?.get(token);
        return found ? copyStepRecord(found.record) : undefined;
      },
      step: (stepId) => {
        const found = this.#steps.get(stepId);
        return found ? copyStepRecord(found.record) : undefined;
      },
      patchStep: (stepId, patch) => {
        const found = this.#steps.get(stepId);
        if (found) found.record = patchStepRecord(found.record, patch);
      },
    });
  }

  createRun(run: RunRecord): Promise<void> {
    const refused = this.#createRun(run);
    return refused ? Promise.reject(refused) : Promise.resolve();
  }

  #createRun(run: RunRecord): Error | null {
    if (this.#runs.has(run.run_id)) return new ConflictError(`run ${run.run_id} exists`);
    this.#runs.set(run.run_id, {
      run: copyRunRecord(run, KEPT),
      steps: [],
      tokens: null,
      facts: [],
      checkpoints: [],
      recordings: null,
      approvals: null,
    });
    if (FINISHED.has(run.status)) this.#finished.push(run.run_id);
    if (this.#runs.size > this.maxRuns) this.#evict();
    return null;
  }

  /**
   * Drops the oldest finished runs until within `maxRuns` (runs still going are kept). Runs
   * are dropped in the order they finished, each in constant time.
   */
  #evict(): void {
    while (this.#runs.size > this.maxRuns && this.#evictFrom < this.#finished.length) {
      const runId = this.#finished[this.#evictFrom++] ?? '';
      const entry = this.#runs.get(runId);
      if (!entry || !FINISHED.has(entry.run.status)) continue;
      for (const step of entry.steps) this.#steps.delete(step.record.step_id);
      for (const id of entry.approvals?.keys() ?? []) this.#approvalRuns.delete(id);
      this.#runs.delete(runId);
    }
    if (this.#evictFrom > 1024 && this.#evictFrom * 2 > this.#finished.length) {
      this.#finished = this.#finished.slice(this.#evictFrom);
      this.#evictFrom = 0;
    }
  }

  getRun(runId: string): Promise<RunRecord | null> {
    const entry = this.#runs.get(runId);
    return Promise.resolve(entry ? copyRunRecord(entry.run) : null);
  }

  updateRun(runId: string, patch: RunPatch): Promise<void> {
    const entry = this.#runs.get(runId);
    if (!entry) return Promise.reject(new NotFoundError('run', runId));
    const wasFinished = FINISHED.has(entry.run.status);
    entry.run = patchRunRecord(entry.run, patch);
    if (!wasFinished && FINISHED.has(entry.run.status)) {
      entry.steps = entry.steps.slice();
      this.#finished.push(runId);
      if (this.#runs.size > this.maxRuns) this.#evict();
    }
    return Promise.resolve();
  }

  createStep(step: StepRecord): Promise<void> {
    const refused = this.#createStep(step);
    return refused ? Promise.reject(refused) : Promise.resolve();
  }

  #createStep(step: StepRecord): Error | null {
    const entry = this.#runs.get(step.run_id);
    if (!entry) return new NotFoundError('run', step.run_id);
    if (this.#steps.has(step.step_id)) return new ConflictError(`step ${step.step_id} exists`);
    const stepEntry: StepEntry = { record: copyStepRecord(step, KEPT), log: [] };
    this.#steps.set(step.step_id, stepEntry);
    entry.steps.push(stepEntry);
    if (step.client_token !== null) (entry.tokens ??= new Map()).set(step.client_token, stepEntry);
    return null;
  }

  claimStep(step: StepRecord): Promise<{ step: StepRecord; created: boolean }> {
    const claimed = this.#claim(step);
    return claimed instanceof Error ? Promise.reject(claimed) : Promise.resolve(claimed);
  }

  #claim(step: StepRecord): { step: StepRecord; created: boolean } | Error {
    const token = step.client_token;
    const existing = token === null ? undefined : this.#runs.get(step.run_id)?.tokens?.get(token);
    if (existing) return { step: copyStepRecord(existing.record), created: false };
    const refused = this.#createStep(step);
    // The caller's own record: the store keeps a copy of its own, so nothing is shared.
    return refused ?? { step, created: true };
  }

  putFlow(flow: FlowRecord): Promise<{ flow: FlowRecord; created: boolean }> {
    const id = this.#flowsByHash.get(flow.hash);
    const existing = id === undefined ? undefined : this.#flows.get(id);
    if (existing) return Promise.resolve({ flow: deepCopy(existing), created: false });
    if (this.#flows.has(flow.flow_id))
      return Promise.reject(new ConflictError(`flow ${flow.flow_id} exists`));
    this.#flows.set(flow.flow_id, deepCopy(flow));
    this.#flowsByHash.set(flow.hash, flow.flow_id);
    return Promise.resolve({ flow: deepCopy(flow), created: true });
  }

  getFlow(flowId: string): Promise<FlowRecord | null> {
    const flow = this.#flows.get(flowId);
    return Promise.resolve(flow ? deepCopy(flow) : null);
  }

  listFlows(): Promise<FlowRecord[]> {
    return Promise.resolve([...this.#flows.values()].map((f) => deepCopy(f)));
  }

  getFlowByHash(hash: string): Promise<FlowRecord | null> {
    const id = this.#flowsByHash.get(hash);
    return this.getFlow(id ?? '');
  }

  appendFact(fact: FactRecord): Promise<void> {
    const entry = this.#runs.get(fact.run_id);
    if (!entry) return Promise.reject(new NotFoundError('run', fact.run_id));
    if (entry.facts.some((f) => f.fact.fact_id === fact.fact_id)) {
      return Promise.reject(new ConflictError(`fact ${fact.fact_id} exists`));
    }
    entry.facts.push({ seq: ++this.#factSeq, fact: deepCopy(fact) });
    return Promise.resolve();
  }

  listFacts(query: FactQuery): Promise<FactRecord[]> {
    try {
      checkFactQuery(query);
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    let runs: RunEntry[];
    if (query.runId !== undefined) {
      const entry = this.#runs.get(query.runId);
      runs =
        entry && (query.flowId === undefined || entry.run.flow_id === query.flowId) ? [entry] : [];
    } else {
      runs = [...this.#runs.values()].filter((e) => e.run.flow_id === query.flowId);
    }
    const ordered = runs
      .flatMap((e) => e.facts)
      .sort((a, b) => a.seq - b.seq)
      .map((f) => f.fact);
    return Promise.resolve(selectFacts(ordered, query).map((f) => deepCopy(f)));
  }

  addRunUsage(runId: string, usage: BudgetUsage): Promise<BudgetUsage> {
    const entry = this.#runs.get(runId);
    if (!entry) return Promise.reject(new NotFoundError('run', runId));
    const total = addUsage(entry.run.budget_usage, usage);
    entry.run = patchRunRecord(entry.run, { budget_usage: total });
    return Promise.resolve({ ...total });
  }

  createCheckpoint(checkpoint: CheckpointRecord): Promise<void> {
    const entry = this.#runs.get(checkpoint.run_id);
    if (!entry) return Promise.reject(new NotFoundError('run', checkpoint.run_id));
    entry.checkpoints.push(deepCopy(checkpoint));
    return Promise.resolve();
  }

  listCheckpoints(runId: string): Promise<CheckpointRecord[]> {
    const entry = this.#runs.get(runId);
    return Promise.resolve(entry ? entry.checkpoints.map((c) => deepCopy(c)) : []);
  }

  putRecording(recording: CallRecording): Promise<void> {
    const entry = this.#runs.get(recording.run_id);
    if (!entry) return Promise.reject(new NotFoundError('run', recording.run_id));
    (entry.recordings ??= new Map()).set(recordingKey(recording), deepCopy(recording));
    return Promise.resolve();
  }

  getRecording(runId: string, key: RecordingKey): Promise<CallRecording | null> {
    const found = this.#runs.get(runId)?.recordings?.get(recordingKey(key));
    return Promise.resolve(found ? deepCopy(found) : null);
  }

  listRecordings(runId: string): Promise<CallRecording[]> {
    const recordings = this.#runs.get(runId)?.recordings;
    return Promise.resolve(recordings ? [...recordings.values()].map((r) => deepCopy(r)) : []);
  }

  createApproval(
    approval: ApprovalRecord,
  ): Promise<{ readonly approval: ApprovalRecord; readonly created: boolean }> {
    const entry = this.#runs.get(approval.run_id);
    if (!entry) return Promise.reject(new NotFoundError('run', approval.run_id));
    const approvals = (entry.approvals ??= new Map<string, ApprovalRecord>());
    const found = approvals.get(approval.approval_id);
    if (found) return Promise.resolve({ approval: deepCopy(found), created: false });
    approvals.set(approval.approval_id, deepCopy(approval));
    this.#approvalRuns.set(approval.approval_id, approval.run_id);
    return Promise.resolve({ approval: deepCopy(approval), created: true });
  }

  getApproval(approvalId: string): Promise<ApprovalRecord | null> {
    const found = this.#approval(approvalId);
    return Promise.resolve(found ? deepCopy(found) : null);
  }

  listApprovals(runId: string): Promise<ApprovalRecord[]> {
    const approvals = this.#runs.get(runId)?.approvals;
    return Promise.resolve(approvals ? [...approvals.values()].map((a) => deepCopy(a)) : []);
  }

  decideApproval(approvalId: string, decision: ApprovalDecision): Promise<ApprovalRecord> {
    const found = this.#approval(approvalId);
    if (!found) return Promise.reject(new NotFoundError('approval', approvalId));
    let next: ApprovalRecord;
    try {
      next = decided(found, decision);
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    this.#runs.get(found.run_id)?.approvals?.set(approvalId, next);
    return Promise.resolve(deepCopy(next));
  }

  #approval(approvalId: string): ApprovalRecord | undefined {
    const runId = this.#approvalRuns.get(approvalId);
    return runId === undefined ? undefined : this.#runs.get(runId)?.approvals?.get(approvalId);
  }

  listRuns(query: { readonly status?: readonly RunStatus[] } = {}): Promise<RunRecord[]> {
    const out: RunRecord[] = [];
    for (const entry of this.#runs.values()) {
      if (!query.status || query.status.includes(entry.run.status)) {
        out.push(copyRunRecord(entry.run));
      }
    }
    return Promise.resolve(out);
  }

  /** A page of runs (see `RunStore.pageRuns`); in memory, by walking them newest first. */
  pageRuns(query: RunPageQuery): Promise<RunRecord[]> {
    const all = [...this.#runs.values()];
    let from = all.length - 1;
    if (query.before !== undefined) {
      const at = all.findIndex((e) => e.run.run_id === query.before);
      if (at < 0) return Promise.reject(new NotFoundError('run', query.before));
      from = at - 1;
    }
    const out: RunRecord[] = [];
    for (let i = from; i >= 0 && out.length < query.limit; i--) {
      const run = all[i]?.run;
      if (run && ofRunPage(run, query)) out.push(copyRunRecord(run));
    }
    return Promise.resolve(out);
  }

  releaseClientToken(stepId: string): Promise<StepRecord> {
    const entry = this.#steps.get(stepId);
    if (!entry) return Promise.reject(new NotFoundError('step', stepId));
    const token = entry.record.client_token;
    if (token !== null) {
      const tokens = this.#runs.get(entry.record.run_id)?.tokens;
      if (tokens?.get(token) === entry) tokens.delete(token);
      entry.record = { ...entry.record, client_token: null };
    }
    return Promise.resolve(copyStepRecord(entry.record));
  }

  getStep(stepId: string): Promise<StepRecord | null> {
    const entry = this.#steps.get(stepId);
    return Promise.resolve(entry ? copyStepRecord(entry.record) : null);
  }

  updateStep(stepId: string, patch: StepPatch): Promise<void> {
    const entry = this.#steps.get(stepId);
    if (!entry) return Promise.reject(new NotFoundError('step', stepId));
    entry.record = patchStepRecord(entry.record, patch);
    // A finished step's log is complete: keep it at its size (a growing array keeps slack).
    if (STEP_ENDED.has(entry.record.status)) entry.log = entry.log.slice();
    return Promise.resolve();
  }

  listSteps(runId: string): Promise<StepRecord[]> {
    const entry = this.#runs.get(runId);
    return Promise.resolve(entry ? entry.steps.map((s) => copyStepRecord(s.record)) : []);
  }

  appendEvents(events: readonly StepEvent[]): Promise<void> {
    const refused = this.#append(events);
    return refused ? Promise.reject(refused) : Promise.resolve();
  }

  endStep(end: StepEnd): Promise<void> {
    const entry = this.#steps.get(end.stepId);
    if (!entry) return Promise.reject(new NotFoundError('step', end.stepId));
    const run = end.runUsage === undefined ? undefined : this.#runs.get(end.runId);
    if (end.runUsage !== undefined && !run) {
      return Promise.reject(new NotFoundError('run', end.runId));
    }
    const unknownActor = end.actor ? this.actors.checkEnd(end.actor) : null;
    if (unknownActor) return Promise.reject(unknownActor);
    const refused = this.#append(end.events);
    if (refused) return Promise.reject(refused);
    entry.record = patchStepRecord(entry.record, end.patch);
    if (STEP_ENDED.has(entry.record.status)) entry.log = entry.log.slice();
    if (end.actor) this.actors.applyEnd(end.actor, end.stepId);
    if (run && end.runUsage !== undefined) {
      run.run = patchRunRecord(run.run, {
        budget_usage: addUsage(run.run.budget_usage, end.runUsage),
      });
    }
    return Promise.resolve();
  }

  /** Appends `events` when all of them continue their logs; else writes none and returns why. */
  #append(events: readonly StepEvent[]): Error | null {
    // Check the whole batch before writing any of it, so a refused batch leaves no trace.
    // Batches usually hold one step's events: the map of others is made only when needed.
    let others: Map<string, number> | null = null;
    let step: StepEntry | undefined;
    let stepId: string | null = null;
    let last = 0;
    for (const ev of events) {
      if (ev.step_id !== stepId) {
        if (stepId !== null) (others ??= new Map()).set(stepId, last);
        step = this.#steps.get(ev.step_id);
        if (!step) return new NotFoundError('step', ev.step_id);
        stepId = ev.step_id;
        last = others?.get(stepId) ?? step.log.length;
      }
      if (ev.seq !== last + 1) {
        const expected = last + 1;
        return new ConflictError(`step ${ev.step_id}: expected seq ${expected}, got ${ev.seq}`, {
          details: { step_id: ev.step_id, expected, got: ev.seq },
        });
      }
      last = ev.seq;
    }
    for (const ev of events) {
      // One step's batch (the usual case) needs no second lookup.
      const log = (others === null ? step : this.#steps.get(ev.step_id))?.log;
      log?.push(copyStepEvent(ev, KEPT));
    }
    return null;
  }

  readEvents(stepId: string, afterSeq = 0, limit = Infinity): Promise<StepEvent[]> {
    const log = this.#steps.get(stepId)?.log ?? [];
    const from = Math.max(0, afterSeq);
    const to = limit === Infinity ? undefined : from + Math.max(0, limit);
    return Promise.resolve(log.slice(from, to).map((e) => copyStepEvent(e)));
  }

  /** Nothing is ever held back. */
  flush(): null {
    return null;
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** A new, empty {@link MemoryRunStore}. */
export function memoryStore(options: MemoryStoreOptions = {}): MemoryRunStore {
  return new MemoryRunStore(options);
}
