/**
 * @module A fleet worker's store: the shared Redis store, whose every append of events is
 * also added to the step's Redis Stream (bounded; the store's log holds every event, so no
 * `token` or `fact` is lost to the trim), which is how API processes learn of it at once
 * (`placement/fleet-relay.ts`). A worker handing its steps back fences the store first:
 * from then on every write is refused, so a step it gave up writes nothing more to a log
 * another worker now goes on with.
 */
import type { Redis } from 'ioredis';
import { WorkerResetError } from '../errors/worker-reset-error.js';
import type { FleetKeys } from '../placement/fleet-keys.js';
import { announceEnded, EVENTS_FIELD, STREAM_TTL_MS } from '../placement/fleet-relay.js';
import type { StepStatus } from '../store/records.js';
import type { RunStore } from '../store/run-store.js';
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
  'listRuns',
  'pageRuns',
  'flush',
  'close',
]);

/** The worker's store and its stream side; see the module. */
export class StreamingStore {
  readonly store: RunStore;
  readonly #client: Redis;
  readonly #keys: FleetKeys;
  readonly #maxLen: number;
  #fenced = false;

  /** `client` is the connection the Redis store writes on: the stream entries follow its writes in order. */
  constructor(inner: RunStore, client: Redis, keys: FleetKeys, maxLen: number) {
    this.#client = client;
    this.#keys = keys;
    this.#maxLen = maxLen;
    const fence = (name: string): Promise<never> =>
      Promise.reject(
        new WorkerResetError(`this worker handed its steps back: ${name} refused`, {
          details: { reason: 'handed_back' },
        }),
      );
    const appendEvents = async (events: readonly StepEvent[]): Promise<void> => {
      if (this.#fenced) return fence('appendEvents');
      await inner.appendEvents(events);
      this.#announce(events);
    };
    this.store = new Proxy(inner, {
      get: (target, prop, receiver) => {
        if (prop === 'appendEvents') return appendEvents;
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

  /** Adds each step's page of `events` to its stream (not awaited: the log has them). */
  #announce(events: readonly StepEvent[]): void {
    const pages = new Map<string, StepEvent[]>();
    for (const event of events) {
      let page = pages.get(event.step_id);
      if (!page) pages.set(event.step_id, (page = []));
      page.push(event);
    }
    const multi = this.#client.multi();
    for (const [stepId, page] of pages) {
      const key = this.#keys.events(stepId);
      multi
        .xadd(key, 'MAXLEN', '~', this.#maxLen, '*', EVENTS_FIELD, JSON.stringify(page))
        .pexpire(key, STREAM_TTL_MS);
    }
    // A lost entry only delays a follower until its next poll of the log.
    multi.exec().catch(() => undefined);
  }
}
