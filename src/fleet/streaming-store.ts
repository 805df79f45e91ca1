/**
 * @module A fleet worker's store: the shared Redis store, whose every append of events is
 * also added to the step's Redis Stream in the same call (bounded; the store's log holds
 * every event, so no `token` or `fact` is lost to the trim), which is how API processes learn
 * of it at once (`placement/fleet-relay.ts`). A worker handing its steps back fences the store first:
 * from then on every write is refused, so a step it gave up writes nothing more to a log
 * another worker now goes on with.
 */
import type { RedisClient } from '../store/redis-connection.js';
import { WorkerResetError } from '../errors/worker-reset-error.js';
import type { FleetKeys } from '../placement/fleet-keys.js';
import { announceEnded } from '../placement/fleet-relay.js';
import type { StepStatus } from '../store/records.js';
import type { RunStore } from '../store/run-store.js';

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
  'listRuns',
  'pageRuns',
  'flush',
  'close',
]);

/** The worker's store and its stream side; see the module. */
export class StreamingStore {
  readonly store: RunStore;
  readonly #client: RedisClient;
  readonly #keys: FleetKeys;
  #fenced = false;

  /** `inner` adds every append to its step's stream (`RedisStoreOptions.streams`). */
  constructor(inner: RunStore, client: RedisClient, keys: FleetKeys) {
    this.#client = client;
    this.#keys = keys;
    const fence = (name: string): Promise<never> =>
      Promise.reject(
        new WorkerResetError(`this worker handed its steps back: ${name} refused`, {
          details: { reason: 'handed_back' },
        }),
      );
    this.store = new Proxy(inner, {
      get: (target, prop, receiver) => {
        const value: unknown = Reflect.get(target, prop, receiver);
        if (typeof value !== 'function') return value;
        const method = value as (...args: unknown[]) => unknown;
        if (typeof prop === 'string' && !READS.has(prop)) {
          return (...args: unknown[]) => (this.#fenced ? fence(prop) : method.apply(target, args));
        }
        return (...args: unknown[]) => method.apply(target, args);
      },
    });
  }

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
