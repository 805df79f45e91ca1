/**
 * @module An Observable whose subscribers cannot hurt the process. RxJS 7 catches a
 * subscriber's throw and rethrows it on a timer, as an `uncaughtException` (one per event),
 * and reports an error nobody handles the same way: either kills a service. Here each
 * subscriber's callbacks are guarded as it subscribes — directly or at the end of a `pipe` —
 * so a throw, or an error without a handler, is handed to `onFailure` (the runtime logs and
 * counts it) and the stream and the other subscribers go on.
 */
import { Observable, type Observer, type Operator, type Subscription } from 'rxjs';

/** Told of each failure a subscriber caused; must not throw. */
export type SubscriberFailure = (err: unknown, where: 'next' | 'error' | 'complete') => void;

/** Calls `fn` with `arg`, handing a throw to `onFailure`. */
function guarded<T>(
  fn: ((value: T) => void) | undefined,
  where: 'next' | 'error' | 'complete',
  onFailure: SubscriberFailure,
): ((value: T) => void) | undefined {
  if (!fn) return undefined;
  return (value: T) => {
    try {
      fn(value);
    } catch (err) {
      onFailure(err, where);
    }
  };
}

/** An Observable whose subscribers, and those of every `pipe` of it, are guarded. */
class IsolatedObservable<T> extends Observable<T> {
  readonly #onFailure: SubscriberFailure;

  constructor(onFailure: SubscriberFailure, upstream?: Observable<T>) {
    super(
      upstream
        ? (subscriber) => {
            upstream.subscribe(subscriber);
          }
        : undefined,
    );
    this.#onFailure = onFailure;
  }

  /* eslint-disable @typescript-eslint/no-deprecated -- RxJS 7's operators build their
     observable with `lift`; this sets what Observable.lift itself sets, so the result stays
     guarded. */
  override lift<R>(operator?: Operator<T, R>): Observable<R> {
    const lifted = new IsolatedObservable<R>(this.#onFailure);
    lifted.source = this;
    lifted.operator = operator;
    return lifted;
  }
  /* eslint-enable @typescript-eslint/no-deprecated */

  override subscribe(
    observerOrNext?: Partial<Observer<T>> | ((value: T) => void) | null,
  ): Subscription {
    const given: Partial<Observer<T>> =
      typeof observerOrNext === 'function' ? { next: observerOrNext } : (observerOrNext ?? {});
    const onFailure = this.#onFailure;
    const error = guarded(given.error?.bind(given), 'error', onFailure);
    return super.subscribe({
      next: guarded(given.next?.bind(given), 'next', onFailure) ?? noop,
      // An error nobody handles is a failure to report, not a crash.
      error:
        error ??
        ((err: unknown) => {
          onFailure(err, 'error');
        }),
      complete: () => {
        try {
          given.complete?.();
        } catch (err) {
          onFailure(err, 'complete');
        }
      },
    });
  }
}

function noop(): void {
  /* nothing to do */
}

/**
 * `source` with every subscriber guarded (see the module); `onFailure` hears of each throw
 * and of each error no subscriber handles.
 *
 * @example
 * const events = isolated(subject.asObservable(), (err) => logger.warn({ err }, 'a subscriber failed'));
 */
export function isolated<T>(source: Observable<T>, onFailure: SubscriberFailure): Observable<T> {
  return new IsolatedObservable(onFailure, source);
}
