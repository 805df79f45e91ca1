/**
 * @module A circuit breaker per target (agent, tool, engine), itself an XState machine
 * (POLICY-3002): closed → open after N consecutive failures (timeouts count) → half-open
 * after the recovery time → a successful probe closes it, a failed one opens it again.
 * Its delays run on the runtime's clock, so tests drive recovery with a simulated one.
 */
import { assign, createActor, setup, type Actor } from 'xstate';
import type { Clock } from '../context/clock.js';

/** A breaker's state, as `escalation` events carry it. */
export type BreakerState = 'closed' | 'open' | 'half_open';

/** Options of a breaker; the defaults are Nerva's. */
export interface BreakerOptions {
  /** Consecutive failures that open the breaker; default 3. */
  readonly failureThreshold?: number;
  /** How long it stays open before a probe is let through; default 60 000 ms. */
  readonly recoveryMs?: number;
}

/** Defaults of {@link BreakerOptions} (Nerva's: 3 failures, 60 s, one probe). */
export const BREAKER_DEFAULTS = { failureThreshold: 3, recoveryMs: 60_000 } as const;

interface BreakerContext {
  readonly failures: number;
  readonly failureThreshold: number;
  readonly recoveryMs: number;
  /** In half-open: a probe call is out. */
  readonly probing: boolean;
}

type BreakerEvent =
  | { readonly type: 'SUCCESS' }
  | { readonly type: 'FAILURE' }
  /** A call asks to go through half-open as the probe. */
  | { readonly type: 'PROBE' }
  /** The probe ended without a verdict (cancelled by its caller): another may go. */
  | { readonly type: 'RELEASE' };

/** The breaker's lifecycle. */
export const breakerMachine = setup({
  types: {
    context: {} as BreakerContext,
    events: {} as BreakerEvent,
    input: {} as { readonly failureThreshold: number; readonly recoveryMs: number },
  },
  delays: {
    recovery: ({ context }) => context.recoveryMs,
  },
  guards: {
    tripsNow: ({ context }) => context.failures + 1 >= context.failureThreshold,
    noProbeOut: ({ context }) => !context.probing,
  },
  actions: {
    countFailure: assign({ failures: ({ context }) => context.failures + 1 }),
    reset: assign({ failures: 0, probing: false }),
    startProbe: assign({ probing: true }),
    endProbe: assign({ probing: false }),
  },
}).createMachine({
  id: 'breaker',
  context: ({ input }) => ({ ...input, failures: 0, probing: false }),
  initial: 'closed',
  states: {
    closed: {
      on: {
        SUCCESS: { actions: 'reset' },
        FAILURE: [
          { guard: 'tripsNow', target: 'open', actions: 'reset' },
          { actions: 'countFailure' },
        ],
      },
    },
    open: {
      after: { recovery: 'half_open' },
    },
    half_open: {
      on: {
        PROBE: { guard: 'noProbeOut', actions: 'startProbe' },
        RELEASE: { actions: 'endProbe' },
        SUCCESS: { target: 'closed', actions: 'reset' },
        FAILURE: { target: 'open', actions: 'reset' },
      },
    },
  },
});

/**
 * One target's breaker. Ask {@link tryAcquire} before a call and report its end with
 * {@link success} or {@link failure}.
 */
export class CircuitBreaker {
  /** `agent:planner`, `tool:search`, `engine:openai` … */
  readonly target: string;
  readonly recoveryMs: number;
  readonly #actor: Actor<typeof breakerMachine>;
  #openedAt = 0;
  readonly #clock: Clock;

  constructor(target: string, clock: Clock, options: BreakerOptions = {}) {
    const failureThreshold = options.failureThreshold ?? BREAKER_DEFAULTS.failureThreshold;
    const recoveryMs = options.recoveryMs ?? BREAKER_DEFAULTS.recoveryMs;
    if (!(Number.isInteger(failureThreshold) && failureThreshold >= 1)) {
      throw new RangeError(
        `breaker.failureThreshold must be a whole number >= 1, got ${failureThreshold}`,
      );
    }
    if (!(Number.isFinite(recoveryMs) && recoveryMs >= 0)) {
      throw new RangeError(`breaker.recoveryMs must be a number >= 0, got ${recoveryMs}`);
    }
    this.target = target;
    this.recoveryMs = recoveryMs;
    this.#clock = clock;
    this.#actor = createActor(breakerMachine, {
      input: { failureThreshold, recoveryMs },
      clock: {
        setTimeout: (fn, ms) => clock.setTimeout(fn, ms),
        clearTimeout: (handle) => {
          clock.clearTimeout(handle as Parameters<Clock['clearTimeout']>[0]);
        },
      },
    });
    this.#actor.start();
  }

  get state(): BreakerState {
    return this.#actor.getSnapshot().value;
  }

  /** Milliseconds until an open breaker lets a probe through (0 unless open). */
  get retryAfterMs(): number {
    if (this.state !== 'open') return 0;
    return Math.max(0, this.#openedAt + this.recoveryMs - this.#clock.now());
  }

  /**
   * May a call go through now? Closed: yes. Open: no. Half-open: the first caller becomes
   * the probe; others are refused until it reports.
   */
  tryAcquire(): boolean {
    const snap = this.#actor.getSnapshot();
    if (snap.value === 'closed') return true;
    if (snap.value === 'open') return false;
    if (snap.context.probing) return false;
    this.#tell({ type: 'PROBE' });
    return true;
  }

  /** A call went through and succeeded. */
  success(): void {
    // The usual case changes nothing: skip the machine (a transition costs microseconds).
    const snap = this.#actor.getSnapshot();
    if (snap.value === 'closed' && snap.context.failures === 0) return;
    this.#tell({ type: 'SUCCESS' });
  }

  /** A call failed (a timeout counts). Returns true when this failure opened the breaker. */
  failure(): boolean {
    const before = this.state;
    this.#tell({ type: 'FAILURE' });
    const opened = before !== 'open' && this.state === 'open';
    if (opened) this.#openedAt = this.#clock.now();
    return opened;
  }

  /** A call that was let through ended without a verdict (its caller cancelled it). */
  release(): void {
    this.#tell({ type: 'RELEASE' });
  }

  /**
   * Stops its timer. A call still running ends after it (`runtime.close()` stops the
   * breakers before the steps in flight end): its verdict is dropped, as no breaker is left
   * to act on it.
   */
  stop(): void {
    this.#actor.stop();
  }

  /** Sends `event` to the machine while it runs; XState drops (and warns of) one sent after stop. */
  #tell(event: BreakerEvent): void {
    if (this.#actor.getSnapshot().status === 'active') this.#actor.send(event);
  }
}
