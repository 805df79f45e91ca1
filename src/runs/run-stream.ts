/** @module The typed event stream of one invocation and its descendants. */
import { defer, Subject, type Observable } from 'rxjs';
import type { StreamTap } from '../context/stream-sink.js';
import {
  BoundedChannel,
  DEFAULT_CHANNEL_CAPACITY,
  DROPPABLE_TYPES,
} from '../streams/bounded-channel.js';
import type { StepEvent, StreamItem } from '../streams/events.js';
import { isolated, type SubscriberFailure } from '../streams/isolated-observable.js';
import type { AgentResult } from '../actors/agent-result.js';

/**
 * The events of an invocation tree — the root step's and, nested under it by actor path,
 * every delegated or tool step's — as an RxJS Observable and as an async iterable, plus the
 * final result.
 *
 * The run starts on the first subscription, iteration, or read of `result`. Subscribers
 * that arrive later see events from then on (the whole log stays readable in the store).
 * A subscriber that throws is isolated: its throw is counted ({@link subscriberFailures})
 * and logged, never an `uncaughtException`, and the others go on.
 *
 * Iteration is bounded and backpressured (STREAM-2003): past `capacity` items waiting for
 * the loop, the run's steps wait (a worker's producer waits for credit), except that
 * `metrics` and `narration` are dropped instead, counted in {@link dropped}. A stream is
 * iterated once; more consumers subscribe to {@link observable}.
 *
 * @example
 * for await (const { path, event } of runtime.stream('planner', 'Book a trip to Berlin')) {
 *   if (event.type === 'token') process.stdout.write(event.t);
 * }
 */
export class RunStream<TOutput = unknown> implements AsyncIterable<StreamItem> {
  /** Every event of the tree, in emission order; completes after the root step ends. */
  readonly observable: Observable<StreamItem>;
  readonly #subject = new Subject<StreamItem>();
  readonly #start: (tap: StreamTap) => Promise<AgentResult<TOutput>>;
  readonly #cancel: () => void;
  readonly #capacity: number;
  #channel: BoundedChannel<StreamItem> | null = null;
  #result: Promise<AgentResult<TOutput>> | null = null;
  #subscriberFailures = 0;

  /** @internal Built by `runtime.stream`. */
  constructor(
    start: (tap: StreamTap) => Promise<AgentResult<TOutput>>,
    cancel: () => void,
    capacity = DEFAULT_CHANNEL_CAPACITY,
    onSubscriberFailure: SubscriberFailure = noop,
  ) {
    this.#start = start;
    this.#cancel = cancel;
    if (!(Number.isInteger(capacity) && capacity >= 1)) {
      throw new RangeError(`stream capacity must be a whole number >= 1, got ${capacity}`);
    }
    this.#capacity = capacity;
    this.observable = isolated(
      defer(() => {
        // The result promise is observed by #begin itself; here only the start matters.
        void this.#begin();
        return this.#subject;
      }),
      (err, where) => {
        this.#subscriberFailures++;
        onSubscriberFailure(err, where);
      },
    );
  }

  /** The invocation's result; reading it starts the run. */
  get result(): Promise<AgentResult<TOutput>> {
    return this.#begin();
  }

  /** Cancels the context the stream runs under, and with it every step of the tree. */
  cancel(): void {
    this.#cancel();
  }

  /**
   * Throws of subscribers of {@link observable} (and errors none of them handled): each is
   * isolated — counted here and logged — and the stream and the other subscribers go on.
   */
  get subscriberFailures(): number {
    return this.#subscriberFailures;
  }

  /** `metrics` and `narration` events the iteration dropped because it fell behind. */
  get dropped(): number {
    return this.#channel?.dropped ?? 0;
  }

  [Symbol.asyncIterator](): AsyncIterator<StreamItem> {
    if (this.#channel) {
      throw new Error('a RunStream is iterated once; subscribe to .observable for more consumers');
    }
    const channel = new BoundedChannel<StreamItem>(this.#capacity, (item) =>
      DROPPABLE_TYPES.has(item.event.type),
    );
    this.#channel = channel;
    return {
      next: () => {
        // The run starts on the first pull; its failure is the iteration's error.
        void this.#begin();
        return channel.next();
      },
      return: () => {
        channel.abandon();
        return Promise.resolve({ done: true, value: undefined });
      },
    };
  }

  #begin(): Promise<AgentResult<TOutput>> {
    if (this.#result) return this.#result;
    const subject = this.#subject;
    const tap: StreamTap = {
      onEvent: (path, event) => {
        const item: StreamItem = { path, event: event as StepEvent };
        subject.next(item);
        return this.#channel?.push(item) ?? undefined;
      },
    };
    this.#result = this.#start(tap).then(
      (result) => {
        subject.complete();
        this.#channel?.close();
        return result;
      },
      (err: unknown) => {
        subject.error(err);
        this.#channel?.fail(err);
        throw err;
      },
    );
    // Whoever reads `result` sees a rejection; iteration sees it as the stream's error.
    void this.#result.catch(() => undefined);
    return this.#result;
  }
}

function noop(): void {
  /* nobody to tell */
}
