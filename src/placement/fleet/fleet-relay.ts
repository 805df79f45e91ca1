/**
 * @module The API side of the fleet's streams: one blocking `XREAD` connection per process
 * reads the fleet's `ended` stream (every step's end, said once by the replica that ended it:
 * an entry holds the ends of one call, pairs of step id and status), the relay's own wake
 * stream (`<prefix>fleet:wake:<id>`) and the streams of the steps someone here follows (SSE
 * clients, `followStep`), and wakes them. With the records in Redis, a followed step is
 * watched in its record (`RedisRunStore.watchStep`, by the link): each call of a replica's
 * store that appends to it adds `<step id> <seq>` to the wake stream of each process watching
 * it, so a step has no stream of its own and one nobody follows wakes no one. With the
 * records in PostgreSQL, a replica adds each append to the step's own stream
 * (`<prefix>fleet:events:<id>`), read here for the steps followed. Either only wakes:
 * followers read the store's log, which holds every event, so an entry trimmed or lost (the
 * wake stream gone while this process could not reach Redis) costs a follower no event, only
 * the wait for its next poll. A newly followed step interrupts the blocked read so that its
 * stream is read at once: an entry on the wake stream, which, under the fleet's hash tag,
 * reaches the node the read blocks on also on a Redis Cluster (where `CLIENT UNBLOCK` would
 * name a connection of whichever node answered `CLIENT ID`). Waiting for a step's end does
 * not interrupt it (the `ended` stream is always read).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { RedisClient } from '../../store/redis/redis-connection.js';
import type { StepStatus } from '../../store/records.js';
import { ENDED } from '../../store/redis/redis-scripts.js';
import { WAKE_MAX_LEN } from '../../store/redis/redis-step-scripts.js';
import type { FleetKeys } from './fleet-keys.js';

/**
 * Field of a step stream's entry: the `seq` of the last event of the append it stands for.
 * An entry only wakes followers, who read the store's log: it carries no events.
 */
export const EVENTS_FIELD = 'seq';
/** How long a step's stream outlives its last entry, in ms (a day). */
export const STREAM_TTL_MS = 86_400_000;
/** Entries the fleet's `ended` stream keeps (approximately). */
const ENDED_MAX_LEN = 100_000;
/** How long a relay's wake stream outlives its last refresh, in ms (a relay gone, it goes). */
const WAKE_TTL_MS = 60_000;
/** Entries a wake stream keeps (approximately): a writer's wakes and the relay's own. */
const WAKE_LEN = String(WAKE_MAX_LEN);
/** The field of the relay's own entries on its wake stream (a step id is never `w`). */
const UNBLOCK_FIELD = 'w';

/** The script that says a step's end by itself: `Op.ended` of the store's script. */
const ANNOUNCE = `local k, a = KEYS, ARGV\n${ENDED}`;
const ANNOUNCE_SHA = createHash('sha1').update(ANNOUNCE).digest('hex');

/**
 * The keys and arguments of `Op.ended` (see `ENDED`): the notice of a step's end with its
 * status, counted in `counter` given one, said only while `fence` holds given one.
 */
export function endedNotice(
  keys: FleetKeys,
  stepId: string,
  status: StepStatus | null,
  counter?: { readonly key: string; readonly field: string },
  fence?: { readonly key: string; readonly token: string },
): { readonly keys: string[]; readonly args: string[] } {
  return {
    // An absent counter or fence is named by the first key (same slot on a cluster).
    keys: [keys.ended, counter?.key ?? keys.ended, fence?.key ?? keys.ended, keys.open],
    args: [
      stepId,
      status ?? 'unknown',
      String(ENDED_MAX_LEN),
      counter?.field ?? '',
      fence?.token ?? '',
    ],
  };
}

/**
 * Says on the fleet's `ended` stream that a step's record has ended, with its status (and
 * counts it in `counter`, given one), in one round trip — only while `fence` (the step's
 * job lock and the token of the turn that ended it) still holds, given one; the step leaves
 * the fleet's open steps. Resolves whether it was said.
 */
export async function announceEnded(
  client: RedisClient,
  keys: FleetKeys,
  stepId: string,
  status: StepStatus | null,
  counter?: { readonly key: string; readonly field: string },
  fence?: { readonly key: string; readonly token: string },
): Promise<boolean> {
  const notice = endedNotice(keys, stepId, status, counter, fence);
  const args = [...notice.keys, ...notice.args];
  const said = await client.evalsha(ANNOUNCE_SHA, 4, ...args).catch((err: unknown) => {
    // NOSCRIPT: nothing ran; the script is sent whole, and cached, with this call.
    if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
    return client.eval(ANNOUNCE, 4, ...args);
  });
  return said === 1;
}

/** Reads the fleet's streams for this process; see the module. */
export class StepStreamRelay {
  readonly #reader: RedisClient;
  readonly #control: RedisClient;
  readonly #keys: FleetKeys;
  readonly #appended: (stepId: string) => void;
  readonly #onError: (err: unknown) => void;
  /** Open follows by step, and the last entry of its stream read (`0` before any). */
  readonly #follows = new Map<string, { count: number; lastId: string }>();
  /** Who waits for each step's end. */
  readonly #enders = new Map<string, ((status: StepStatus | null) => void)[]>();
  /** The last entry of the `ended` stream read: entries from when the relay was made on. */
  #endedId = `${Date.now()}-0`;
  /** This relay's wake stream (see the module), its watcher id, and its last entry read. */
  readonly #wake: string;
  readonly watcher: string;
  #wakeId = '0';
  /** When the wake stream was last made sure of (ms): it is kept alive while the relay is. */
  #keptAt = 0;
  #blocked = false;
  #closed = false;
  /** How long one read blocks, ms. */
  readonly #blockMs: number;
  readonly #loop: Promise<void>;

  /**
   * `reader` is a connection of the relay's own (it blocks); `control` any other. Each entry
   * of a followed step calls `appended(stepId)`. `blockMs`: how long one read blocks (2 s).
   */
  constructor(
    reader: RedisClient,
    control: RedisClient,
    keys: FleetKeys,
    appended: (stepId: string) => void,
    onError: (err: unknown) => void,
    blockMs = 2_000,
  ) {
    this.#blockMs = blockMs;
    this.#reader = reader;
    this.#control = control;
    this.#keys = keys;
    this.#appended = appended;
    this.#onError = onError;
    this.watcher = randomBytes(8).toString('hex');
    this.#wake = keys.wake(this.watcher);
    this.#loop = this.#run();
  }

  /**
   * Wakes `appended` for each entry of the step's stream, and each wake of the step on the
   * relay's wake stream, until `unfollow`. Returns whether the step was not followed here yet.
   */
  follow(stepId: string): boolean {
    const follow = this.#follows.get(stepId);
    if (follow) {
      follow.count++;
      return false;
    }
    this.#follows.set(stepId, { count: 1, lastId: '0' });
    if (this.#blocked) void this.#unblock();
    return true;
  }

  /** Ends one follow of the step; returns whether it was the last one here. */
  unfollow(stepId: string): boolean {
    const follow = this.#follows.get(stepId);
    if (!follow) return false;
    if (--follow.count > 0) return false;
    this.#follows.delete(stepId);
    return true;
  }

  /**
   * Resolves with the status the step's record ended with, once the `ended` stream says so
   * (`null` once the relay closes). Only ends said after the relay was made are seen: wait
   * before the step can end, or check its record after waiting.
   */
  ended(stepId: string): Promise<StepStatus | null> {
    return new Promise((resolve) => {
      if (this.#closed) {
        resolve(null);
        return;
      }
      const list = this.#enders.get(stepId);
      if (list) list.push(resolve);
      else this.#enders.set(stepId, [resolve]);
    });
  }

  /** The steps someone here waits on ({@link ended}) or follows. */
  watched(): string[] {
    return [...new Set([...this.#enders.keys(), ...this.#follows.keys()])];
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#unblock();
    for (const list of this.#enders.values()) for (const end of list) end(null);
    this.#enders.clear();
    this.#follows.clear();
    await this.#loop;
  }

  /** Whether `close` was called (read anew: it changes while the loop awaits). */
  #isClosed(): boolean {
    return this.#closed;
  }

  /**
   * Ends the reader's blocked read so that it reads again with the streams followed now: an
   * entry on the wake stream (a read not blocked yet returns at once with it).
   */
  async #unblock(): Promise<void> {
    try {
      this.#keptAt = Date.now();
      await this.#control
        .pipeline()
        .xadd(this.#wake, 'MAXLEN', '~', WAKE_LEN, '*', UNBLOCK_FIELD, '1')
        .pexpire(this.#wake, WAKE_TTL_MS)
        .exec();
    } catch (err) {
      if (!this.#closed) this.#onError(err);
    }
  }

  async #run(): Promise<void> {
    while (!this.#isClosed()) {
      // The wake stream lives while the relay does (writers only add to one that exists).
      if (Date.now() - this.#keptAt >= WAKE_TTL_MS / 3) await this.#unblock();
      const steps = [...this.#follows.keys()];
      const ids = steps.map((s) => this.#follows.get(s)?.lastId ?? '0');
      let reply: [string, [string, string[]][]][] | null;
      try {
        this.#blocked = true;
        reply = await this.#reader.xread(
          'COUNT',
          256,
          'BLOCK',
          this.#blockMs,
          'STREAMS',
          this.#keys.ended,
          this.#wake,
          ...steps.map((s) => this.#keys.events(s)),
          this.#endedId,
          this.#wakeId,
          ...ids,
        );
      } catch (err) {
        if (this.#isClosed()) return;
        this.#onError(err);
        await new Promise((resolve) => setTimeout(resolve, 250));
        continue;
      } finally {
        this.#blocked = false;
      }
      if (reply === null) continue;
      for (const [key, entries] of reply) {
        if (entries.length === 0) continue;
        if (key === this.#keys.ended) this.#readEnded(entries);
        else if (key === this.#wake) this.#readWakes(entries);
        else this.#readStep(key.slice(this.#keys.events('').length), entries);
      }
    }
  }

  /** Entries of the `ended` stream: pairs `stepId status`, one per step that ended. */
  #readEnded(entries: [string, string[]][]): void {
    this.#endedId = (entries.at(-1) as [string, string[]])[0];
    for (const [, fields] of entries) {
      for (let i = 0; i + 1 < fields.length; i += 2) {
        const stepId = fields[i] as string;
        const status = fields[i + 1] as string;
        const list = this.#enders.get(stepId);
        if (!list) continue;
        this.#enders.delete(stepId);
        for (const end of list) end(status === 'unknown' ? null : (status as StepStatus));
      }
    }
  }

  /** Entries of the wake stream: pairs `stepId seq` (a writer's), or the relay's own. */
  #readWakes(entries: [string, string[]][]): void {
    this.#wakeId = (entries.at(-1) as [string, string[]])[0];
    const woken = new Set<string>();
    for (const [, fields] of entries) {
      for (let i = 0; i + 1 < fields.length; i += 2) {
        const stepId = fields[i] as string;
        if (stepId !== UNBLOCK_FIELD && this.#follows.has(stepId)) woken.add(stepId);
      }
    }
    for (const stepId of woken) this.#appended(stepId);
  }

  #readStep(stepId: string, entries: [string, string[]][]): void {
    const follow = this.#follows.get(stepId);
    if (!follow) return;
    follow.lastId = (entries.at(-1) as [string, string[]])[0];
    this.#appended(stepId);
  }
}
