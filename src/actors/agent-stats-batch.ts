/** @module Batches an agent's invocation statistics into few messages to its actor. */
import type { Clock, TimerHandle } from '../context/clock.js';
import type { AgentActor, FinishedInvocation } from './agent-machine.js';

/** How long invocations gather before their statistics are sent, at most. */
export const STATS_BATCH_MS = 50;

/**
 * Gathers an agent's invocations and delivers them to its actor as one `INVOCATIONS`
 * message: when {@link AgentStatsBatch.flush} is called (reading the statistics does it),
 * or {@link STATS_BATCH_MS} after the first one gathered. An XState message costs tens of
 * microseconds; two per invocation were a sixth of a short run's time.
 *
 * Once its actor is stopped (`runtime.close()` stops every agent actor) the batch gathers
 * nothing and sends nothing: an invocation still running at the close ends after it, and
 * the statistics it would add have no actor left to hold them.
 */
export class AgentStatsBatch {
  readonly #actor: AgentActor;
  readonly #clock: Clock;
  #started = 0;
  #lastInvokedAt: number | null = null;
  #finished: FinishedInvocation[] = [];
  #timer: TimerHandle | null = null;

  constructor(actor: AgentActor, clock: Clock) {
    this.#actor = actor;
    this.#clock = clock;
  }

  /** An invocation started at `at`. */
  started(at: number): void {
    if (!this.#live) return;
    this.#started++;
    this.#lastInvokedAt = at;
    this.#schedule();
  }

  /** An invocation finished. */
  finished(ok: boolean, durationMs: number): void {
    if (!this.#live) return;
    this.#finished.push({ ok, durationMs });
    this.#schedule();
  }

  /** Sends what has gathered, if anything, now. */
  flush(): void {
    if (this.#timer !== null) {
      this.#clock.clearTimeout(this.#timer);
      this.#timer = null;
    }
    if (!this.#live || (this.#started === 0 && this.#finished.length === 0)) return;
    const event = {
      type: 'INVOCATIONS' as const,
      started: this.#started,
      lastInvokedAt: this.#lastInvokedAt,
      finished: this.#finished,
    };
    this.#started = 0;
    this.#lastInvokedAt = null;
    this.#finished = [];
    this.#actor.send(event);
  }

  /** Whether the actor still takes messages; XState drops (and warns of) any sent after stop. */
  get #live(): boolean {
    return this.#actor.getSnapshot().status === 'active';
  }

  #schedule(): void {
    this.#timer ??= this.#clock.setTimeout(() => {
      this.#timer = null;
      this.flush();
    }, STATS_BATCH_MS);
  }
}
