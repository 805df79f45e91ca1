/** @module The typed event stream of one invocation and its descendants. */
import { defer, Subject, type Observable } from 'rxjs';
import type { StreamTap } from '../context/stream-sink.js';
import type { StepEvent, StreamItem } from '../streams/events.js';
import { toAsyncIterable } from '../streams/to-async-iterable.js';
import type { AgentResult } from './agent-result.js';

/**
 * The events of an invocation tree — the root step's and, nested under it by actor path,
 * every delegated or tool step's — as an RxJS Observable and as an async iterable, plus the
 * final result.
 *
 * The run starts on the first subscription, iteration, or read of `result`. Subscribers
 * that arrive later see events from then on (the whole log stays readable in the store).
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
  #result: Promise<AgentResult<TOutput>> | null = null;

  /** @internal Built by `runtime.stream`. */
  constructor(start: (tap: StreamTap) => Promise<AgentResult<TOutput>>, cancel: () => void) {
    this.#start = start;
    this.#cancel = cancel;
    this.observable = defer(() => {
      // The result promise is observed by #begin itself; here only the start matters.
      void this.#begin();
      return this.#subject;
    });
  }

  /** The invocation's result; reading it starts the run. */
  get result(): Promise<AgentResult<TOutput>> {
    return this.#begin();
  }

  /** Cancels the context the stream runs under, and with it every step of the tree. */
  cancel(): void {
    this.#cancel();
  }

  [Symbol.asyncIterator](): AsyncIterator<StreamItem> {
    return toAsyncIterable(this.observable)[Symbol.asyncIterator]();
  }

  #begin(): Promise<AgentResult<TOutput>> {
    if (this.#result) return this.#result;
    const subject = this.#subject;
    const tap: StreamTap = {
      onEvent: (path, event) => {
        subject.next({ path, event: event as StepEvent });
      },
    };
    this.#result = this.#start(tap).then(
      (result) => {
        subject.complete();
        return result;
      },
      (err: unknown) => {
        subject.error(err);
        throw err;
      },
    );
    // Whoever reads `result` sees a rejection; iteration sees it as the stream's error.
    void this.#result.catch(() => undefined);
    return this.#result;
  }
}
