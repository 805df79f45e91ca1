/**
 * @module A fleet worker's store: the shared records, whose every append of events also adds
 * an entry to the step's Redis Stream (bounded; the store's log holds every event, so no
 * `token` or `fact` is lost to the trim), which is how API processes learn of it at once
 * (`placement/fleet/fleet-relay.ts`). The Redis store adds it in the same call as the append; with
 * the records elsewhere (PostgreSQL) this store adds it once the append has committed — the
 * entries of one turn of the event loop in one round trip. A worker handing its steps back fences the store first:
 * from then on every write is refused, so a step it gave up writes nothing more to a log
 * another worker now goes on with.
 */
import type { RedisClient } from '../store/redis/redis-connection.js';
import { WorkerResetError } from '../errors/worker-reset-error.js';
import type { FleetKeys } from '../placement/fleet/fleet-keys.js';
import { announceEnded } from '../placement/fleet/fleet-relay.js';
import type { StepStatus } from '../store/records.js';
import type { RunStore, StepEnd } from '../store/run-store.js';
import type { StepEvent } from '../streams/events.js';

/** Methods of a RunStore that only read. */
const READS: ReadonlySet<string> = new Set([
  'getRun',
  'getStep',
  'listSteps',
  'readEvents',
  'getFlow',
  'getFlowByHash',
  'listFacts',
  'listCheckpoints',
  'getRecording',
  'listRecordings',
  'getApproval',
  'listApprovals',
  'identity',
  'listRuns',
  'pageRuns',
  'flush',
  'close',
]);

/** How a worker's store adds the stream entries of records kept outside Redis. */
export interface StreamWakes {
  /** Entries a step's stream keeps (approximately). */
  readonly maxLen: number;
  /** How long a stream outlives its last entry, in ms. */
  readonly ttlMs: number;
  /** The entry's field (its value is the `seq` of the step's last event appended). */
  readonly field: string;
  /** Told when the entries could not be added (a follower then waits for its next read). */
  readonly onError: (err: unknown) => void;
}

/** The worker's store and its stream side; see the module. */
export class StreamingStore {
  readonly store: RunStore;
  readonly #client: RedisClient;
  readonly #keys: FleetKeys;
  #fenced = false;
  readonly #wakes: StreamWakes | null;
  /** The entries to add at the end of this turn: each step's last seq committed. */
  readonly #due = new Map<string, number>();

  /**
   * Without `wakes`, `inner` adds every append to its step's stream itself
   * (`RedisStoreOptions.streams`); with them, this store adds it after the append commits.
   */
  constructor(inner: RunStore, client: RedisClient, keys: FleetKeys, wakes?: StreamWakes) {
    this.#client = client;
    this.#keys = keys;
    this.#wakes = wakes ?? null;
    const woken = (prop: string | symbol, method: (...args: unknown[]) => unknown) =>
      prop === 'appendEvents'
        ? async (events: readonly StepEvent[]) => {
            await method.call(inner, events);
            this.#wake(events);
          }
        : async (end: StepEnd) => {
            await method.call(inner, end);
            this.#wake(end.events);
          };
    const fence = (name: string): Promise<never> =>
      Promise.reject(
        new WorkerResetError(`this worker handed its steps back: ${name} refused`, {
          details: { reason: 'handed_back' },
        }),
      );
    const writes = new Map<string, (...args: unknown[]) => unknown>();
    this.store = new Proxy(inner, {
      get: (target, prop, receiver) => {
        const value: unknown = Reflect.get(target, prop, receiver);
        if (typeof value !== 'function') return value;
        const method = value as (...args: unknown[]) => unknown;
        if (typeof prop === 'string' && !READS.has(prop)) {
          // Made once per method: every write passes here.
          let write = writes.get(prop);
          if (!write) {
            const call =
              this.#wakes && (prop === 'appendEvents' || prop === 'endStep')
                ? (woken(prop, method) as (...args: unknown[]) => unknown)
                : method.bind(target);
            write = (...args: unknown[]) => (this.#fenced ? fence(prop) : call(...args));
            writes.set(prop, write);
          }
          return write;
        }
        return (...args: unknown[]) => method.apply(target, args);
      },
    });
  }

  /** Adds the stream entries of `events`, committed, at the end of this turn. */
  #wake(events: readonly StepEvent[]): void {
    if (events.length === 0) return;
    const first = this.#due.size === 0;
    for (const e of events)
      this.#due.set(e.step_id, Math.max(e.seq, this.#due.get(e.step_id) ?? 0));
    if (first) setImmediate(this.#sendWakes);
  }

  readonly #sendWakes = (): void => {
    const wakes = this.#wakes;
    if (!wakes || this.#due.size === 0) return;
    const pipeline = this.#client.pipeline();
    for (const [stepId, seq] of this.#due) {
      const key = this.#keys.events(stepId);
      pipeline
        .xadd(key, 'MAXLEN', '~', String(wakes.maxLen), '*', wakes.field, String(seq))
        .pexpire(key, wakes.ttlMs);
    }
    this.#due.clear();
    pipeline.exec().then(
      (replies) => {
        const failed = replies?.find(([err]) => err !== null)?.[0];
        if (failed) wakes.onError(failed);
      },
      (err: unknown) => {
        wakes.onError(err);
      },
    );
  };

  /** Refuses every write from now on (see the module). */
  fence(): void {
    this.#fenced = true;
  }

  /** Whether {@link fence} was called: this worker writes nothing more. */
  get fenced(): boolean {
    return this.#fenced;
  }

  /**
   * Says on the step's stream that its record has ended, with its status; counts it in
   * `counter` — only while `fence` holds, given one (see `announceEnded`).
   */
  ended(
    stepId: string,
    status: StepStatus | null,
    counter?: { readonly key: string; readonly field: string },
    fence?: { readonly key: string; readonly token: string },
  ): Promise<boolean> {
    return announceEnded(this.#client, this.#keys, stepId, status, counter, fence);
  }
}
