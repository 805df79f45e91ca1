/**
 * @module The Redis store's durable agents (`RedisRunStore.actors`, issue 46): an actor is a
 * hash of its record's fields; its mailbox a sorted set of its open messages (steps of its
 * run); it is found through sorted sets by creation (all, by user, by agent), by key (a
 * `BYLEX` range for a key prefix) and by status (in id order). Each check-then-write is one
 * operation of the store's script (`redis-actor-scripts.ts`) in the turn's call: an actor
 * and its run are created once, a message is accepted under its mailbox's bound, and a
 * message's end writes its actor's state and mailbox in the call of its step's end
 * ({@link RedisActors.endOp}). Wakes and schedules: `redis-actor-timers.ts`.
 */
import { ConflictError } from '../../errors/conflict-error.js';
import { NotFoundError } from '../../errors/not-found-error.js';
import {
  mailboxFull,
  ofActorPage,
  type ActorEndWrite,
  type ActorPageQuery,
  type ActorRecord,
  type ActorStatus,
} from '../actor-records.js';
import type { AcceptedMessage, ActorStore } from '../actor-store.js';
import type { RunRecord, StepRecord } from '../records.js';
import type { StepEnd } from '../run-store.js';
import { ACTOR_STATUSES } from './redis-actor-keys.js';
import { RedisActorTimers, countArg, type RedisActorsHost } from './redis-actor-timers.js';
import type { ScriptOp } from './redis-batch.js';
import { asStep, fromFlat, keyPart, toFields } from './redis-fields.js';
import { runScore } from './redis-run-index.js';
import { Op } from './redis-scripts.js';

/** The keys of the store's own records the actors write with theirs. */
export interface RedisRecordKeys {
  run(runId: string): string;
  step(stepId: string): string;
  runSteps(runId: string): string;
  /** The key naming the step of run `runId` with client token `token`. */
  token(runId: string, token: string): string;
  /** The run indexes a new run goes in. */
  runIndexes(run: RunRecord): string[];
}

/** How many index entries a page reads at a time, at least. */
const PAGE_CHUNK = 64;

/** A status checked: `TypeError` naming `what` for one that is not an {@link ActorStatus}. */
function checkStatus(status: string, what: string): ActorStatus {
  if (!ACTOR_STATUSES.includes(status as ActorStatus)) {
    throw new TypeError(
      `${what}: ${JSON.stringify(status)} is not one of ${ACTOR_STATUSES.join(', ')}`,
    );
  }
  return status as ActorStatus;
}

/** The durable agents of a Redis store; see the module. */
export class RedisActors extends RedisActorTimers implements ActorStore {
  readonly #records: RedisRecordKeys;

  constructor(host: RedisActorsHost, records: RedisRecordKeys) {
    super(host);
    this.#records = records;
  }

  async openActor(
    actor: ActorRecord,
    run: RunRecord,
  ): Promise<{ actor: ActorRecord; created: boolean }> {
    const id = actor.actor_id;
    if (!keyPart(id)) {
      throw new TypeError(
        `openActor: actor_id ${JSON.stringify(id)} cannot be part of a key (1..256 characters, no ':', '{' or '}')`,
      );
    }
    const k = this.keys;
    const status = checkStatus(actor.status, 'openActor: status');
    const runFields = toFields(run);
    const r = (await this.host.write(
      Op.openActor,
      [
        k.actor(id),
        this.#records.run(run.run_id),
        k.actorSeq,
        k.actors,
        k.byUser(actor.user_id),
        k.byName(actor.name),
        k.keys,
        k.status(status),
        ...this.#records.runIndexes(run),
      ],
      [
        String(runScore(run)),
        run.run_id,
        String(runFields.length),
        ...runFields,
        `${actor.key}\0${id}`,
        id,
        ...toFields(actor),
      ],
    )) as unknown[];
    if (r[0] === 'found')
      return { actor: fromFlat(r[1]) as unknown as ActorRecord, created: false };
    if (r[0] === 'run-exists') throw new ConflictError(`run ${run.run_id} exists`);
    return { actor: JSON.parse(JSON.stringify(actor)) as ActorRecord, created: true };
  }

  async getActor(actorId: string): Promise<ActorRecord | null> {
    if (!keyPart(actorId)) return null;
    return (await this.hash(this.keys.actor(actorId))) as ActorRecord | null;
  }

  async pageActors(query: ActorPageQuery): Promise<ActorRecord[]> {
    if (!Number.isInteger(query.limit) || query.limit < 1) {
      throw new RangeError(`pageActors: limit must be a whole number >= 1, got ${query.limit}`);
    }
    const redis = this.host.read();
    let below = Infinity;
    if (query.before !== undefined) {
      const seq = await redis.zscore(this.keys.actors, query.before);
      if (seq === null) throw new NotFoundError('actor', query.before);
      below = Number(seq);
    }
    // The smallest index that holds every actor of the page: by user, by agent, or all.
    const sets: string[] = [];
    if (query.userId !== undefined) sets.push(this.keys.byUser(query.userId));
    if (query.name !== undefined) sets.push(this.keys.byName(query.name));
    if (sets.length === 0) sets.push(this.keys.actors);
    const prefix = query.keyPrefix ?? '';
    const [sizes, keyed] = await Promise.all([
      Promise.all(sets.map((s) => redis.zcard(s))),
      prefix === '' ? null : redis.zlexcount(this.keys.keys, ...lexRange(prefix)),
    ]);
    const least = Math.min(...sizes);
    if (keyed !== null && keyed <= least) return this.#pageByKey(prefix, below, query);
    return this.#pageBySeq(sets[sizes.indexOf(least)] as string, below, query);
  }

  /** A page from an index by creation, newest first from below `below`, a chunk at a time. */
  async #pageBySeq(set: string, below: number, query: ActorPageQuery): Promise<ActorRecord[]> {
    const out: ActorRecord[] = [];
    const chunk = Math.max(PAGE_CHUNK, query.limit);
    let max = below === Infinity ? '+inf' : `(${below}`;
    for (;;) {
      const flat = await this.host
        .read()
        .zrevrangebyscore(set, max, '-inf', 'WITHSCORES', 'LIMIT', 0, chunk);
      const ids = flat.filter((_, i) => i % 2 === 0);
      for (const actor of await this.#actors(ids)) {
        if (ofActorPage(actor, query)) out.push(actor);
        if (out.length === query.limit) return out;
      }
      if (ids.length < chunk) return out;
      max = `(${flat.at(-1) ?? '-inf'}`;
    }
  }

  /**
   * A page from the actors whose key begins with `prefix` (fewer than any other index
   * holds): all of them ranked by creation, then read newest first, a chunk at a time.
   */
  async #pageByKey(prefix: string, below: number, query: ActorPageQuery): Promise<ActorRecord[]> {
    const redis = this.host.read();
    const members = await redis.zrangebylex(this.keys.keys, ...lexRange(prefix));
    const ids = members.map((m) => m.slice(m.lastIndexOf('\0') + 1));
    if (ids.length === 0) return [];
    const seqs = await redis.zmscore(this.keys.actors, ...ids);
    const ranked = ids
      .map((id, i) => ({ id, seq: Number(seqs[i] ?? NaN) }))
      .filter((e) => e.seq < below)
      .sort((a, b) => b.seq - a.seq);
    const out: ActorRecord[] = [];
    const chunk = Math.max(PAGE_CHUNK, query.limit);
    for (let at = 0; at < ranked.length; at += chunk) {
      const actors = await this.#actors(ranked.slice(at, at + chunk).map((e) => e.id));
      for (const actor of actors) {
        if (ofActorPage(actor, query)) out.push(actor);
        if (out.length === query.limit) return out;
      }
    }
    return out;
  }

  /** Actors by id, in order, in one operation; a missing one is left out. */
  async #actors(ids: readonly string[]): Promise<ActorRecord[]> {
    if (ids.length === 0) return [];
    const flats = (await this.host.write(
      Op.hashes,
      [this.keys.actors],
      [this.keys.actor(''), ...ids],
    )) as unknown[];
    return flats.map(fromFlat).filter((a) => a !== null) as unknown as ActorRecord[];
  }

  async acceptMessage(
    actorId: string,
    step: StepRecord,
    maxQueue: number,
  ): Promise<AcceptedMessage> {
    if (Number.isNaN(maxQueue) || maxQueue < 0) {
      throw new RangeError(`acceptMessage: maxQueue must be >= 0, got ${maxQueue}`);
    }
    if (!keyPart(actorId)) throw new NotFoundError('actor', actorId);
    const k = this.keys;
    const rec = this.#records;
    const run = rec.run(step.run_id);
    const r = (await this.host.write(
      Op.acceptMessage,
      [
        k.actor(actorId),
        k.mailbox(actorId),
        run,
        rec.step(step.step_id),
        rec.runSteps(step.run_id),
        step.client_token === null ? run : rec.token(step.run_id, step.client_token),
        ...k.statuses,
      ],
      [
        maxQueue === Infinity ? '1e308' : String(maxQueue),
        actorId,
        step.step_id,
        ...toFields(step),
      ],
    )) as string[];
    switch (r[0]) {
      case 'no-actor':
        throw new NotFoundError('actor', actorId);
      case 'full': {
        const [name, key] = [JSON.parse(r[1] ?? '""'), JSON.parse(r[2] ?? '""')] as string[];
        throw mailboxFull({ name: name ?? '', key: key ?? '' }, maxQueue);
      }
      case 'no-run':
        throw new NotFoundError('run', step.run_id);
      case 'exists':
        throw new ConflictError(`step ${step.step_id} exists`);
      case 'found': {
        const found = asStep(
          fromFlat(await this.host.write(Op.readStep, [rec.step(r[1] ?? '')], [])),
        );
        if (!found) throw new NotFoundError('step', r[1] ?? '');
        return { step: found, created: false };
      }
      default:
        return { step, created: true };
    }
  }

  async openMessages(actorId: string, limit: number): Promise<StepRecord[]> {
    const n = countArg(limit, 'openMessages: limit');
    if (n === 0 || !keyPart(actorId)) return [];
    const at = this.#records.step('');
    const to = n === -1 ? '-1' : String(n - 1);
    const found = await this.range<Record<string, unknown>>(
      this.keys.mailbox(actorId),
      at,
      'rank',
      '0',
      to,
      -1,
      true,
    );
    return found.map((s) => asStep(s) as StepRecord);
  }

  async takeMessage(actorId: string, stepId: string): Promise<void> {
    if (!keyPart(actorId)) return;
    await this.host.write(Op.takeMessage, [this.keys.mailbox(actorId)], [stepId]);
  }

  async mailboxDepth(actorId: string): Promise<number> {
    if (!keyPart(actorId)) return 0;
    return this.host.read().zcount(this.keys.mailbox(actorId), '(0', '+inf');
  }

  async setActorStatus(actorId: string, status: ActorStatus, updatedAt: string): Promise<void> {
    checkStatus(status, 'setActorStatus: status');
    if (!keyPart(actorId)) throw new NotFoundError('actor', actorId);
    const r = await this.host.write(
      Op.setActorStatus,
      [this.keys.actor(actorId), ...this.keys.statuses],
      [actorId, status, JSON.stringify(updatedAt)],
    );
    if (r !== 1) throw new NotFoundError('actor', actorId);
  }

  async actorsWith(
    statuses: readonly ActorStatus[],
    after: string | null,
    limit: number,
  ): Promise<ActorRecord[]> {
    const n = countArg(limit, 'actorsWith: limit');
    const wanted = [...new Set(statuses.map((s) => checkStatus(s, 'actorsWith: statuses')))];
    if (n === 0 || wanted.length === 0) return [];
    const flats = (await this.host.write(
      Op.actorsWith,
      wanted.map((s) => this.keys.status(s)),
      [
        after === null ? '-' : `(${after}`,
        String(n === -1 ? Number.MAX_SAFE_INTEGER : n),
        this.keys.actor(''),
      ],
    )) as unknown[];
    return flats.map(fromFlat).filter((a) => a !== null) as unknown as ActorRecord[];
  }

  /**
   * The operation of a message's end with its actor's (`StepEnd.actor`), to go in the call
   * instead of the step's plain end: `base` the keys of that (the step's hash, its run's
   * hash and ledger), `tail` its arguments after the events (the patch, the usage).
   * Events may be of the step and of the steps merged into it (`TypeError` for another's).
   * `stepIds` are the steps an append's refusal counts, in order.
   */
  endOp(
    end: StepEnd & { readonly actor: ActorEndWrite },
    base: readonly string[],
    tail: readonly string[],
  ): { readonly op: ScriptOp; readonly stepIds: readonly string[] } {
    const write = end.actor;
    const id = write.actor_id;
    // An id that cannot be part of a key names no actor.
    if (!keyPart(id)) throw new NotFoundError('actor', id);
    const merged = write.merged ?? [];
    const stepIds = [end.stepId, ...merged.map((m) => m.stepId)];
    const at = new Map(stepIds.map((s, i) => [s, i + 1]));
    const events: string[] = [];
    for (const ev of end.events) {
      const i = at.get(ev.step_id);
      if (i === undefined) {
        throw new TypeError(
          `endStep: an event of step ${ev.step_id}, neither ${end.stepId} nor merged into it`,
        );
      }
      events.push(String(i), String(ev.seq), JSON.stringify(ev));
    }
    const sub = ['0', ...tail];
    const patches = merged.flatMap((m) => {
      const fields = toFields(m.patch);
      return [m.stepId, String(fields.length), ...fields];
    });
    const state = write.state
      ? ['1', JSON.stringify(write.state.value ?? null), JSON.stringify(write.state.version)]
      : ['0', '', ''];
    const k = this.keys;
    const rec = this.#records;
    const keys = [
      ...base,
      k.actor(id),
      k.mailbox(id),
      ...k.statuses,
      k.actorWakes(id),
      ...merged.map((m) => rec.step(m.stepId)),
    ];
    const args = [
      this.host.prefix,
      id,
      end.stepId,
      String(sub.length),
      ...sub,
      String(end.events.length),
      ...events,
      String(merged.length),
      ...patches,
      ...state,
      JSON.stringify(write.updated_at),
    ];
    return { op: { code: Op.endMessage, keys, args }, stepIds };
  }
}

/** The `BYLEX` range of the keys' index members whose key begins with `prefix`. */
function lexRange(prefix: string): [Buffer, Buffer] {
  // A member is `<key>\0<id>`; no byte of UTF-8 is 0xff, so `prefix` and 0xff bounds them.
  const start = Buffer.from(`[${prefix}`);
  return [start, Buffer.concat([Buffer.from(`(${prefix}`), Buffer.from([0xff])])];
}
