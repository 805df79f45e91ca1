/**
 * @module The in-memory store's durable agents (`MemoryRunStore.actors`): actors, their
 * mailboxes, wakes in a heap by due time, event waits by user and event name, schedules.
 * Every method's work is synchronous, so each is atomic as the other stores' are.
 */
import { NotFoundError } from '../../errors/not-found-error.js';
import { deepCopy } from '../deep-copy.js';
import {
  mailboxFull,
  ofActorPage,
  type ActorEndWrite,
  type ActorPageQuery,
  type ActorRecord,
  type ActorStatus,
  type ScheduleRecord,
  type SchedulePatch,
  type WakeRecord,
} from '../actor-records.js';
import type { AcceptedMessage, ActorStore } from '../actor-store.js';
import type { RunRecord, StepPatch, StepRecord } from '../records.js';
import { DueHeap } from './due-heap.js';

/** What the actors need of the store they belong to, synchronously. */
export interface MemoryActorsHost {
  /** Creates a run; an `Error` when it cannot be (its id is taken). */
  createRun(run: RunRecord): Error | null;
  /** Claims a step by its client token (as `RunStore.claimStep`). */
  claim(step: StepRecord): { readonly step: StepRecord; readonly created: boolean } | Error;
  /** A copy of the step of run `runId` with client token `token`, if there is one. */
  byToken(runId: string, token: string): StepRecord | undefined;
  /** A copy of a step's record. */
  step(stepId: string): StepRecord | undefined;
  /** Applies an end to a step's record (a merged message's). */
  patchStep(stepId: string, patch: StepPatch): void;
}

interface ActorEntry {
  record: ActorRecord;
  /** Its messages not ended, in the order accepted. */
  readonly open: string[];
  /** Those of `open` taken (being handled). */
  readonly taken: Set<string>;
}

/** The durable agents of a {@link MemoryRunStore}; see the module. */
export class MemoryActors implements ActorStore {
  readonly #host: MemoryActorsHost;
  readonly #actors = new Map<string, ActorEntry>();
  /** Actor ids in creation order. */
  readonly #order: string[] = [];
  readonly #wakes = new Map<string, WakeRecord>();
  readonly #due = new DueHeap();
  readonly #schedules = new Map<string, ScheduleRecord>();

  constructor(host: MemoryActorsHost) {
    this.#host = host;
  }

  openActor(actor: ActorRecord, run: RunRecord): Promise<{ actor: ActorRecord; created: boolean }> {
    const found = this.#actors.get(actor.actor_id);
    if (found) return Promise.resolve({ actor: deepCopy(found.record), created: false });
    const refused = this.#host.createRun(run);
    if (refused) return Promise.reject(refused);
    this.#actors.set(actor.actor_id, { record: deepCopy(actor), open: [], taken: new Set() });
    this.#order.push(actor.actor_id);
    return Promise.resolve({ actor: deepCopy(actor), created: true });
  }

  getActor(actorId: string): Promise<ActorRecord | null> {
    const found = this.#actors.get(actorId);
    return Promise.resolve(found ? deepCopy(found.record) : null);
  }

  pageActors(query: ActorPageQuery): Promise<ActorRecord[]> {
    let from = this.#order.length - 1;
    if (query.before !== undefined) {
      from = this.#order.lastIndexOf(query.before) - 1;
      if (from < -1) return Promise.reject(new NotFoundError('actor', query.before));
    }
    const out: ActorRecord[] = [];
    for (let i = from; i >= 0 && out.length < query.limit; i--) {
      const record = this.#actors.get(this.#order[i] ?? '')?.record;
      if (record && ofActorPage(record, query)) out.push(deepCopy(record));
    }
    return Promise.resolve(out);
  }

  acceptMessage(actorId: string, step: StepRecord, maxQueue: number): Promise<AcceptedMessage> {
    const entry = this.#actors.get(actorId);
    if (!entry) return Promise.reject(new NotFoundError('actor', actorId));
    // A token seen before answers with its message, full mailbox or not.
    const seen =
      step.client_token === null ? undefined : this.#host.byToken(step.run_id, step.client_token);
    if (seen) return Promise.resolve({ step: seen, created: false });
    if (entry.open.length - entry.taken.size >= maxQueue) {
      return Promise.reject(mailboxFull(entry.record, maxQueue));
    }
    const claimed = this.#host.claim(step);
    if (claimed instanceof Error) return Promise.reject(claimed);
    if (claimed.created) {
      entry.open.push(step.step_id);
      if (entry.record.status === 'idle') entry.record = { ...entry.record, status: 'live' };
    }
    return Promise.resolve(claimed);
  }

  openMessages(actorId: string, limit: number): Promise<StepRecord[]> {
    const entry = this.#actors.get(actorId);
    const out: StepRecord[] = [];
    if (!entry) return Promise.resolve(out);
    // The taken one (there is at most one) first, then the queued in order.
    const ordered = [
      ...entry.open.filter((id) => entry.taken.has(id)),
      ...entry.open.filter((id) => !entry.taken.has(id)),
    ];
    for (const id of ordered.slice(0, limit)) {
      const step = this.#host.step(id);
      if (step) out.push(step);
    }
    return Promise.resolve(out);
  }

  takeMessage(actorId: string, stepId: string): Promise<void> {
    const entry = this.#actors.get(actorId);
    if (entry?.open.includes(stepId)) entry.taken.add(stepId);
    return Promise.resolve();
  }

  mailboxDepth(actorId: string): Promise<number> {
    const entry = this.#actors.get(actorId);
    return Promise.resolve(entry ? entry.open.length - entry.taken.size : 0);
  }

  setActorStatus(actorId: string, status: ActorStatus, updatedAt: string): Promise<void> {
    const entry = this.#actors.get(actorId);
    if (!entry) return Promise.reject(new NotFoundError('actor', actorId));
    entry.record = { ...entry.record, status, updated_at: updatedAt };
    return Promise.resolve();
  }

  actorsWith(
    statuses: readonly ActorStatus[],
    after: string | null,
    limit: number,
  ): Promise<ActorRecord[]> {
    const ids = [...this.#actors.keys()].filter((id) => after === null || id > after).sort();
    const out: ActorRecord[] = [];
    for (const id of ids) {
      if (out.length >= limit) break;
      const record = this.#actors.get(id)?.record;
      if (record && statuses.includes(record.status)) out.push(deepCopy(record));
    }
    return Promise.resolve(out);
  }

  /** Whether `write` can be applied: its actor exists. */
  checkEnd(write: ActorEndWrite): Error | null {
    return this.#actors.has(write.actor_id) ? null : new NotFoundError('actor', write.actor_id);
  }

  /** Applies a message's end to its actor (with the step's end, see `StepEnd.actor`). */
  applyEnd(write: ActorEndWrite, stepId: string): void {
    const entry = this.#actors.get(write.actor_id);
    if (!entry) return;
    const gone = new Set([stepId, ...(write.merged ?? []).map((m) => m.stepId)]);
    for (const merged of write.merged ?? []) this.#host.patchStep(merged.stepId, merged.patch);
    const open = entry.open.filter((id) => !gone.has(id));
    entry.open.length = 0;
    entry.open.push(...open);
    for (const id of gone) entry.taken.delete(id);
    for (const [id, wake] of this.#wakes) {
      if (wake.step_id !== null && gone.has(wake.step_id)) this.#dropWake(id);
    }
    entry.record = {
      ...entry.record,
      ...(write.state ? { state: deepCopy(write.state.value), version: write.state.version } : {}),
      status: entry.open.length > entry.taken.size ? 'live' : 'idle',
      updated_at: write.updated_at,
    };
  }

  putWake(wake: WakeRecord): Promise<{ wake: WakeRecord; created: boolean }> {
    const found = this.#wakes.get(wake.wake_id);
    if (found) return Promise.resolve({ wake: deepCopy(found), created: false });
    this.#wakes.set(wake.wake_id, deepCopy(wake));
    if (wake.status === 'pending' && wake.due_at !== null)
      this.#due.push(wake.due_at, wake.wake_id);
    return Promise.resolve({ wake: deepCopy(wake), created: true });
  }

  getWake(wakeId: string): Promise<WakeRecord | null> {
    const found = this.#wakes.get(wakeId);
    return Promise.resolve(found ? deepCopy(found) : null);
  }

  actorWakes(actorId: string): Promise<WakeRecord[]> {
    const out = [...this.#wakes.values()].filter((w) => w.actor_id === actorId);
    out.sort((a, b) => (a.due_at ?? Infinity) - (b.due_at ?? Infinity));
    return Promise.resolve(out.map((w) => deepCopy(w)));
  }

  dueWakes(now: number, limit: number): Promise<WakeRecord[]> {
    const ids = this.#due.upTo(now, limit, (id, due) => this.#isDue(id, due));
    return Promise.resolve(ids.map((id) => deepCopy(this.#wakes.get(id) as WakeRecord)));
  }

  nextWakeAt(): Promise<number | null> {
    return Promise.resolve(this.#due.peek((id, due) => this.#isDue(id, due)));
  }

  #isDue(wakeId: string, due: number): boolean {
    const wake = this.#wakes.get(wakeId);
    return wake?.status === 'pending' && wake.due_at === due;
  }

  fireWake(
    wakeId: string,
    data: unknown,
    firedAt: number,
    timedOut: boolean,
  ): Promise<WakeRecord | null> {
    const wake = this.#wakes.get(wakeId);
    if (wake?.status !== 'pending') return Promise.resolve(null);
    const fired: WakeRecord = {
      ...wake,
      status: 'fired',
      data: deepCopy(data),
      fired_at: firedAt,
      timed_out: timedOut,
    };
    this.#wakes.set(wakeId, fired);
    return Promise.resolve(deepCopy(fired));
  }

  firedWakes(limit: number): Promise<WakeRecord[]> {
    const out = [...this.#wakes.values()]
      .filter((w) => w.status === 'fired' && w.kind !== 'reminder')
      .sort((a, b) => (a.fired_at ?? 0) - (b.fired_at ?? 0))
      .slice(0, limit);
    return Promise.resolve(out.map((w) => deepCopy(w)));
  }

  rearmWake(wakeId: string, dueAt: number): Promise<void> {
    const wake = this.#wakes.get(wakeId);
    if (!wake) return Promise.resolve();
    this.#wakes.set(wakeId, { ...wake, status: 'pending', due_at: dueAt, fired_at: null });
    this.#due.push(dueAt, wakeId);
    return Promise.resolve();
  }

  deleteWakes(wakeIds: readonly string[]): Promise<void> {
    for (const id of wakeIds) this.#dropWake(id);
    return Promise.resolve();
  }

  #dropWake(wakeId: string): void {
    // Its heap entry is stale from now on: skipped when met.
    this.#wakes.delete(wakeId);
  }

  eventWaiters(userId: string | null, event: string, limit: number): Promise<WakeRecord[]> {
    const out: WakeRecord[] = [];
    for (const wake of this.#wakes.values()) {
      if (out.length >= limit) break;
      if (
        wake.kind === 'event' &&
        wake.status === 'pending' &&
        wake.event === event &&
        wake.user_id === userId
      ) {
        out.push(deepCopy(wake));
      }
    }
    out.sort((a, b) => a.created_at - b.created_at);
    return Promise.resolve(out);
  }

  putSchedule(schedule: ScheduleRecord): Promise<{ schedule: ScheduleRecord; created: boolean }> {
    const found = this.#schedules.get(schedule.schedule_id);
    if (found) return Promise.resolve({ schedule: deepCopy(found), created: false });
    this.#schedules.set(schedule.schedule_id, deepCopy(schedule));
    return Promise.resolve({ schedule: deepCopy(schedule), created: true });
  }

  getSchedule(scheduleId: string): Promise<ScheduleRecord | null> {
    const found = this.#schedules.get(scheduleId);
    return Promise.resolve(found ? deepCopy(found) : null);
  }

  listSchedules(userId?: string | null): Promise<ScheduleRecord[]> {
    const all = [...this.#schedules.values()].filter(
      (s) => userId === undefined || s.user_id === userId,
    );
    return Promise.resolve(all.map((s) => deepCopy(s)));
  }

  updateSchedule(scheduleId: string, patch: SchedulePatch): Promise<void> {
    const found = this.#schedules.get(scheduleId);
    if (!found) return Promise.reject(new NotFoundError('schedule', scheduleId));
    this.#schedules.set(scheduleId, { ...found, ...patch });
    return Promise.resolve();
  }

  deleteSchedule(scheduleId: string): Promise<boolean> {
    return Promise.resolve(this.#schedules.delete(scheduleId));
  }

  dueSchedules(now: number, limit: number): Promise<ScheduleRecord[]> {
    const out = [...this.#schedules.values()]
      .filter((s) => s.status === 'active' && s.next_at !== null && s.next_at <= now)
      .sort((a, b) => (a.next_at ?? 0) - (b.next_at ?? 0))
      .slice(0, limit);
    return Promise.resolve(out.map((s) => deepCopy(s)));
  }

  nextScheduleAt(): Promise<number | null> {
    let soonest: number | null = null;
    for (const s of this.#schedules.values()) {
      if (s.status === 'active' && s.next_at !== null && (soonest === null || s.next_at < soonest))
        soonest = s.next_at;
    }
    return Promise.resolve(soonest);
  }
}
