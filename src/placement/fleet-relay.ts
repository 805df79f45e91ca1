/**
 * @module The API side of the steps' event streams: one blocking `XREAD` connection per
 * process reads the streams of the steps someone here waits on — followers (SSE clients,
 * `followStep`) and submitters waiting for a step's end — and wakes them. The streams only
 * wake: followers read the store's log, which holds every event, so a stream trimmed past
 * what a slow reader had seen loses it nothing. A new step to watch interrupts the blocked
 * read (`CLIENT UNBLOCK`) so it is read at once.
 */
import type { Redis } from 'ioredis';
import type { StepStatus } from '../store/records.js';
import type { FleetKeys } from './fleet-keys.js';

/** Field of a stream entry holding a page of events (JSON). */
export const EVENTS_FIELD = 'events';
/** Field of a stream entry saying the step's record has ended, with its status. */
export const ENDED_FIELD = 'ended';

/** How long a step's stream outlives its last entry, in ms (a day). */
export const STREAM_TTL_MS = 86_400_000;

/** Says on a step's stream that its record has ended, with its status (and counts it, given a counter). */
export async function announceEnded(
  client: Redis,
  keys: FleetKeys,
  stepId: string,
  status: StepStatus | null,
  maxLen: number,
  counter?: { readonly key: string; readonly field: string },
): Promise<void> {
  const key = keys.events(stepId);
  const multi = client
    .multi()
    .xadd(key, 'MAXLEN', '~', maxLen, '*', ENDED_FIELD, status ?? 'unknown')
    .pexpire(key, STREAM_TTL_MS);
  if (counter) multi.hincrby(counter.key, counter.field, 1);
  await multi.exec();
}

/** Who waits on one step's stream. */
interface Watch {
  /** The last entry read (`0` before any). */
  lastId: string;
  /** Open follows: each entry wakes them. */
  follows: number;
  /** Waiting for the step's end. */
  readonly enders: ((status: StepStatus | null) => void)[];
}

/** Reads the watched steps' streams; see the module. */
export class StepStreamRelay {
  readonly #reader: Redis;
  readonly #control: Redis;
  readonly #keys: FleetKeys;
  readonly #appended: (stepId: string) => void;
  readonly #onError: (err: unknown) => void;
  readonly #watched = new Map<string, Watch>();
  #readerId: number | null = null;
  #blocked = false;
  #kick: (() => void) | null = null;
  #closed = false;
  readonly #loop: Promise<void>;

  /**
   * `reader` is a connection of the relay's own (it blocks); `control` any other. Each entry
   * of a followed step calls `appended(stepId)`.
   */
  constructor(
    reader: Redis,
    control: Redis,
    keys: FleetKeys,
    appended: (stepId: string) => void,
    onError: (err: unknown) => void,
  ) {
    this.#reader = reader;
    this.#control = control;
    this.#keys = keys;
    this.#appended = appended;
    this.#onError = onError;
    reader.on('ready', () => {
      this.#readerId = null;
    });
    this.#loop = this.#run();
  }

  /** Wakes `appended` for each entry of the step's stream until `unfollow`. */
  follow(stepId: string): void {
    this.#watch(stepId).follows++;
  }

  unfollow(stepId: string): void {
    const watch = this.#watched.get(stepId);
    if (!watch) return;
    watch.follows = Math.max(0, watch.follows - 1);
    this.#drop(stepId, watch);
  }

  /** Resolves with the status the step's record ended with (`null` once the relay closes). */
  ended(stepId: string): Promise<StepStatus | null> {
    return new Promise((resolve) => {
      if (this.#closed) {
        resolve(null);
        return;
      }
      this.#watch(stepId).enders.push(resolve);
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#kick?.();
    await this.#unblock();
    for (const watch of this.#watched.values()) for (const end of watch.enders) end(null);
    this.#watched.clear();
    await this.#loop;
  }

  /** Whether `close` was called (read anew: it changes while the loop awaits). */
  #isClosed(): boolean {
    return this.#closed;
  }

  #watch(stepId: string): Watch {
    let watch = this.#watched.get(stepId);
    if (!watch) {
      watch = { lastId: '0', follows: 0, enders: [] };
      this.#watched.set(stepId, watch);
      this.#kick?.();
      if (this.#blocked) void this.#unblock();
    }
    return watch;
  }

  #drop(stepId: string, watch: Watch): void {
    if (watch.follows === 0 && watch.enders.length === 0 && this.#watched.get(stepId) === watch) {
      this.#watched.delete(stepId);
    }
  }

  /** Ends the reader's blocked read so that it reads again with the keys watched now. */
  async #unblock(): Promise<void> {
    const id = this.#readerId;
    if (id === null) return;
    try {
      await this.#control.client('UNBLOCK', id);
    } catch (err) {
      if (!this.#closed) this.#onError(err);
    }
  }

  async #run(): Promise<void> {
    while (!this.#closed) {
      if (this.#watched.size === 0) {
        await new Promise<void>((resolve) => {
          this.#kick = resolve;
        });
        this.#kick = null;
        continue;
      }
      const steps = [...this.#watched.keys()];
      const ids = steps.map((s) => (this.#watched.get(s) as Watch).lastId);
      let reply: [string, [string, string[]][]][] | null;
      try {
        this.#readerId ??= await this.#reader.client('ID');
        this.#blocked = true;
        reply = await this.#reader.xread(
          'COUNT',
          64,
          'BLOCK',
          2000,
          'STREAMS',
          ...steps.map((s) => this.#keys.events(s)),
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
      for (const [key, entries] of reply)
        this.#read(key.slice(this.#keys.events('').length), entries);
    }
  }

  #read(stepId: string, entries: [string, string[]][]): void {
    const watch = this.#watched.get(stepId);
    if (!watch || entries.length === 0) return;
    watch.lastId = (entries.at(-1) as [string, string[]])[0];
    if (watch.follows > 0) this.#appended(stepId);
    for (const [, fields] of entries) {
      if (fields[0] !== ENDED_FIELD) continue;
      const status = (fields[1] ?? null) as StepStatus | null;
      for (const end of watch.enders.splice(0)) end(status);
      this.#drop(stepId, watch);
      return;
    }
  }
}
