/**
 * @module Copies everything a store holds into another through the RunStore interface (`axon
 * store copy`, SQLite → PostgreSQL): flows, then run by run its record, steps, each step's
 * log (in pages), facts, checkpoints, call recordings and approvals — the same records, ids
 * and order, so the target answers what the source did. Durable agents too (issue 46): each
 * actor with its run, its open messages back in its mailbox (the one it was handling still
 * taken), its wakes, and the schedules.
 */
import { ConflictError } from '../errors/conflict-error.js';
import type { ActorRecord } from './actor-records.js';
import type { ActorStore } from './actor-store.js';
import type { StepRecord } from './records.js';
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
  actors: number;
  wakes: number;
  schedules: number;
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
    actors: 0,
    wakes: 0,
    schedules: 0,
  };
  const actors = await copyActors(from, to, counts);
  for (const flow of await from.listFlows()) {
    if ((await to.putFlow(flow)).created) counts.flows++;
  }
  const runs = await from.listRuns();
  for (const run of runs) {
    const actor = actors.get(run.run_id);
    // An actor's run was made with its actor.
    if (!actor) await to.createRun(run);
    for (const step of await from.listSteps(run.run_id)) {
      await (actor ? copyMessage(to, actor, step) : to.createStep(step));
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

/** The statuses of a message still in its actor's mailbox. */
const OPEN = new Set(['queued', 'running', 'waiting']);

/** Actors read per page. */
const ACTOR_PAGE = 500;

/**
 * Copies `from`'s actors (each with its run, in `to`, which must keep actors when `from`
 * has any), their wakes and the schedules; resolves the actors by their run's id.
 */
async function copyActors(
  from: RunStore,
  to: RunStore,
  counts: CopyCounts,
): Promise<Map<string, ActorRecord>> {
  const byRun = new Map<string, ActorRecord>();
  const source = from.actors;
  if (!source) return byRun;
  const all: ActorRecord[] = [];
  for (let before: string | undefined; ;) {
    const page = await source.pageActors({
      limit: ACTOR_PAGE,
      ...(before === undefined ? {} : { before }),
    });
    all.push(...page);
    if (page.length < ACTOR_PAGE) break;
    before = page.at(-1)?.actor_id;
  }
  const schedules = await source.listSchedules();
  if (all.length === 0 && schedules.length === 0) return byRun;
  const target = to.actors;
  if (!target) {
    throw new TypeError('the source keeps durable agents and the target store keeps none');
  }
  // Oldest first, so that the target pages them as the source did.
  for (const actor of all.reverse()) {
    const run = await from.getRun(actor.run_id);
    if (!run) continue;
    await target.openActor(actor, run);
    byRun.set(run.run_id, actor);
    counts.actors++;
    for (const wake of await source.actorWakes(actor.actor_id)) {
      await target.putWake(wake);
      counts.wakes++;
    }
  }
  for (const schedule of schedules) {
    await target.putSchedule(schedule);
    counts.schedules++;
  }
  return byRun;
}

/** A step of an actor's run: an open message goes back into its mailbox (taken if it was). */
async function copyMessage(to: RunStore, actor: ActorRecord, step: StepRecord): Promise<void> {
  const actors = to.actors as ActorStore;
  if (!OPEN.has(step.status) || step.parent_step_id !== null) {
    await to.createStep(step);
    return;
  }
  await actors.acceptMessage(actor.actor_id, step, Number.MAX_SAFE_INTEGER);
  if (step.status !== 'queued') await actors.takeMessage(actor.actor_id, step.step_id);
}
