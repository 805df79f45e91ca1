/**
 * @module Actors whose work a fleet's API process could not hand to a pool: none was live
 * (`POOL_UNAVAILABLE`: no worker has registered yet, or the last one went), or Redis did not
 * take the job (a dropped connection). Their messages are in the store already — `send`
 * acknowledged them — so nothing is lost: the hand-off is tried again every
 * {@link REDELIVER_MS} until a pool takes it, and a worker that starts after the messages
 * were accepted runs them.
 */
import type { Logger } from '../observability/logger.js';

/** How often an actor no pool took is handed on again. */
export const REDELIVER_MS = 1_000;

/** See the module. */
export class UndeliveredActors {
  /** By actor id: what hands its work on again. */
  readonly #waiting = new Map<string, () => Promise<void>>();
  /** Actors being handed on again now. */
  readonly #retrying = new Set<string>();
  #timer: NodeJS.Timeout | null = null;
  #closed = false;

  /**
   * Runs `handOff` (the read of the message it is for, and the job), and when any of it fails
   * — no pool live, no Redis for the read or for the job — {@link failed} with `retry` (which
   * reads the actor's first open message again: it may have been handled meanwhile).
   */
  async handOff(
    logger: Logger,
    actorId: string,
    handOff: () => Promise<void>,
    retry: () => Promise<void>,
  ): Promise<void> {
    try {
      await handOff();
    } catch (err) {
      this.failed(logger, actorId, err, retry);
    }
  }

  /**
   * Handing actor `actorId`'s work to a pool failed with `err`: `retry` runs in
   * {@link REDELIVER_MS}, and again until it succeeds (said once an actor, as a warning).
   */
  failed(logger: Logger, actorId: string, err: unknown, retry: () => Promise<void>): void {
    if (this.#closed) return;
    if (!this.#waiting.has(actorId) && !this.#retrying.has(actorId)) {
      logger.warn(
        { err, actor_id: actorId, retry_ms: REDELIVER_MS },
        "an actor's work could not be handed to a pool of the fleet: its messages stay queued, handed on again until a pool takes them",
      );
    }
    this.#waiting.set(actorId, retry);
    this.#timer ??= setTimeout(() => {
      this.#timer = null;
      const retries = [...this.#waiting];
      this.#waiting.clear();
      for (const [actorId, again] of retries) {
        this.#retrying.add(actorId);
        void again().finally(() => this.#retrying.delete(actorId));
      }
    }, REDELIVER_MS);
    // As the wake clock's: it does not hold the process open (the messages are in the store,
    // and a later start's recovery hands them on).
    this.#timer.unref();
  }

  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#waiting.clear();
  }
}
