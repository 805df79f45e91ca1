/**
 * @module A RunStore that redacts configured fields before anything is stored: in step
 * inputs and outputs, event payloads, facts and recorded tool results, every property named
 * in the keys (at any depth, case-insensitive) is stored as `[REDACTED]`. What is stored is
 * what SSE clients, replays and operators read later; the running step keeps the real
 * values.
 */
import { REDACTED, redactSecrets } from '../observability/logger.js';
import type { StepEvent } from '../streams/events.js';
import type { CallRecording, FactRecord, StepPatch, StepRecord } from './records.js';
import type { RunStore } from './run-store.js';

/** Event fields that are the event's frame, never redacted. */
const FRAME: ReadonlySet<string> = new Set(['type', 'step_id', 'seq', 'ts']);

/**
 * `store` with the fields named in `keys` redacted from everything written to it; see the
 * module (snapshots of step lifecycles in checkpoints and approvals too). With no keys it is
 * `store` itself.
 *
 * @example
 * const store = redactingStore(sqliteStore(), ['password', 'ssn']);
 */
export function redactingStore(store: RunStore, keys: readonly string[]): RunStore {
  if (keys.length === 0) return store;
  const set = new Set(keys.map((k) => k.toLowerCase()));
  const redact = <T>(value: T): T => redactSecrets(value, set) as T;
  const event = (e: StepEvent): StepEvent => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(e)) {
      out[k] = FRAME.has(k) ? v : set.has(k.toLowerCase()) ? REDACTED : redact(v);
    }
    return out as StepEvent;
  };
  const step = (s: StepRecord): StepRecord => ({
    ...s,
    input: redact(s.input),
    output: redact(s.output),
  });
  const patch = (p: StepPatch): StepPatch =>
    'output' in p ? { ...p, output: redact(p.output) } : p;
  const fact = (f: FactRecord): FactRecord => ({ ...f, data: redact(f.data) });
  const recording = (r: CallRecording): CallRecording =>
    r.kind === 'tool' ? { ...r, output: redact(r.output) } : r;
  // Every method delegates; the writes carry redacted copies.
  const wrapped: RunStore = {
    createRun: (run) => store.createRun(run),
    getRun: (id) => store.getRun(id),
    updateRun: (id, p) => store.updateRun(id, p),
    createStep: (s) => store.createStep(step(s)),
    getStep: (id) => store.getStep(id),
    updateStep: (id, p) => store.updateStep(id, patch(p)),
    listSteps: (id) => store.listSteps(id),
    appendEvents: (events) => store.appendEvents(events.map(event)),
    endStep: (end) =>
      store.endStep({ ...end, events: end.events.map(event), patch: patch(end.patch) }),
    readEvents: (id, after, limit) => store.readEvents(id, after, limit),
    claimStep: (s) => store.claimStep(step(s)),
    putFlow: (f) => store.putFlow(f),
    getFlow: (id) => store.getFlow(id),
    getFlowByHash: (h) => store.getFlowByHash(h),
    appendFact: (f) => store.appendFact(fact(f)),
    listFacts: (q) => store.listFacts(q),
    // Persisted lifecycles hold the last events a step accepted: redacted like the events.
    createCheckpoint: (c) => store.createCheckpoint({ ...c, snapshots: redact(c.snapshots) }),
    listCheckpoints: (id) => store.listCheckpoints(id),
    addRunUsage: (id, u, stepId) => store.addRunUsage(id, u, stepId),
    putRecording: (r) => store.putRecording(recording(r)),
    getRecording: (id, k) => store.getRecording(id, k),
    listRecordings: (id) => store.listRecordings(id),
    createApproval: (a) => store.createApproval({ ...a, snapshot: redact(a.snapshot) }),
    getApproval: (id) => store.getApproval(id),
    listApprovals: (id) => store.listApprovals(id),
    decideApproval: (id, d) => store.decideApproval(id, d),
    listRuns: (q) => store.listRuns(q),
    pageRuns: (q) => store.pageRuns(q),
    releaseClientToken: (id) => store.releaseClientToken(id),
    flush: () => store.flush(),
    close: () => store.close(),
    ...(store.leases ? { leases: store.leases } : {}),
    ...(store.budgets ? { budgets: store.budgets } : {}),
  };
  return wrapped;
}
