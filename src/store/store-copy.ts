/**
 * @module Copies everything a store holds into another through the RunStore interface (`axon
 * store copy`, SQLite → PostgreSQL): flows, then run by run its record, steps, each step's
 * log (in pages), facts, checkpoints, call recordings and approvals — the same records, ids
 * and order, so the target answers what the source did.
 */
import { ConflictError } from '../errors/conflict-error.js';
import type { RunStore } from './run-store.js';

/** What {@link copyStore} copied. */
export interface CopyCounts {
  flows: number;
  runs: number;
  steps: number;
  events: number;
  facts: number;
  checkpoints: number;
  recordings: number;
  approvals: number;
}

/** Events read and appended at a time. */
const PAGE = 1_000;

/**
 * Copies `from` into `to`, which must hold no runs (a copy is not a merge: `ConflictError`
 * otherwise). `onRun` hears of each run copied. Stop whatever writes to `from` first: a run
 * that changes while it is copied may be copied half old, half new.
 */
export async function copyStore(
  from: RunStore,
  to: RunStore,
  onRun: (runId: string, done: number, total: number) => void = () => undefined,
): Promise<CopyCounts> {
  if (!from.listFlows) {
    throw new TypeError('this store cannot list its flows, so it cannot be copied from');
  }
  const there = await to.pageRuns({ limit: 1 });
  if (there.length > 0) {
    throw new ConflictError(
      `the target holds runs already (${there[0]?.run_id ?? ''}, …): copy into an empty store`,
    );
  }
  const counts: CopyCounts = {
    flows: 0,
    runs: 0,
    steps: 0,
    events: 0,
    facts: 0,
    checkpoints: 0,
    recordings: 0,
    approvals: 0,
  };
  for (const flow of await from.listFlows()) {
    if ((await to.putFlow(flow)).created) counts.flows++;
  }
  const runs = await from.listRuns();
  for (const run of runs) {
    await to.createRun(run);
    for (const step of await from.listSteps(run.run_id)) {
      await to.createStep(step);
      counts.steps++;
      for (let after = 0; ;) {
        const page = await from.readEvents(step.step_id, after, PAGE);
        if (page.length === 0) break;
        await to.appendEvents(page);
        counts.events += page.length;
        after = page.at(-1)?.seq ?? after;
      }
    }
    for (const fact of await from.listFacts({ runId: run.run_id })) {
      await to.appendFact(fact);
      counts.facts++;
    }
    for (const checkpoint of await from.listCheckpoints(run.run_id)) {
      await to.createCheckpoint(checkpoint);
      counts.checkpoints++;
    }
    for (const recording of await from.listRecordings(run.run_id)) {
      await to.putRecording(recording);
      counts.recordings++;
    }
    for (const approval of await from.listApprovals(run.run_id)) {
      await to.createApproval(approval);
      counts.approvals++;
    }
    counts.runs++;
    onRun(run.run_id, counts.runs, runs.length);
  }
  const flushing = to.flush();
  if (flushing) await flushing;
  return counts;
}
