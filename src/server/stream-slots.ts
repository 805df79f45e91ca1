/**
 * @module How many SSE streams a server holds open: at most `max` in all and `perUser` for
 * one user (every key of one `user_id` together, `anonymous` without keys). A stream past
 * either is refused before it opens with 429 `RATE_LIMITED`, `details.limit` naming which
 * (`streams` or `streams_per_user`) and its `max`; a slot is free again when its stream
 * closes, however it closes.
 */
import type { Caller } from './auth.js';
import { HttpError } from './http-errors.js';
import type { ServerMetrics } from './server-metrics.js';

/** How long a refused client is told to wait before trying again, ms. */
const RETRY_AFTER_MS = 1_000;

/** Open streams, counted in all and per user; see the module. */
export class StreamSlots {
  readonly max: number;
  readonly perUser: number;
  readonly #byUser = new Map<string, number>();
  #open = 0;

  constructor(max: number, perUser: number) {
    this.max = max;
    this.perUser = perUser;
  }

  /**
   * Takes a slot for a stream of `userId` and returns what frees it (once; later calls do
   * nothing). Throws {@link HttpError} 429 `RATE_LIMITED` when no slot is free, `onRefused`
   * told which limit it was first.
   */
  take(userId: string, onRefused?: (limit: 'streams' | 'streams_per_user') => void): () => void {
    const mine = this.#byUser.get(userId) ?? 0;
    if (this.#open >= this.max || mine >= this.perUser) {
      const limit = this.#open >= this.max ? 'streams' : 'streams_per_user';
      const max = limit === 'streams' ? this.max : this.perUser;
      onRefused?.(limit);
      throw new HttpError(
        429,
        'RATE_LIMITED',
        limit === 'streams'
          ? `the server has ${max} streams open, its bound; try again when one closes`
          : `this user has ${max} streams open, the bound of one user; close one first`,
        { limit, max, retry_after_ms: RETRY_AFTER_MS },
      );
    }
    this.#open++;
    this.#byUser.set(userId, mine + 1);
    let freed = false;
    return () => {
      if (freed) return;
      freed = true;
      this.#open--;
      const left = (this.#byUser.get(userId) ?? 1) - 1;
      if (left > 0) this.#byUser.set(userId, left);
      else this.#byUser.delete(userId);
    };
  }
}

/**
 * A slot of `deps.slots` for a stream of `caller`, counted in the metrics (open streams,
 * refusals); the function returned frees it. Throws 429 `RATE_LIMITED` when none is free.
 */
export function takeStreamSlot(
  deps: { readonly slots: StreamSlots; readonly metrics: ServerMetrics },
  caller: Caller,
): () => void {
  const free = deps.slots.take(caller.userId, (limit) => {
    deps.metrics.sseRefused.inc({ limit });
  });
  deps.metrics.sseClients.inc();
  return () => {
    free();
    deps.metrics.sseClients.dec();
  };
}
