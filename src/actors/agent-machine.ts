/** @module An agent as an actor: idle or busy, with the registry's call statistics. */
import { assign, setup, type Actor } from 'xstate';

/** Nerva's registry statistics of an agent. */
export interface AgentStats {
  readonly totalCalls: number;
  readonly successes: number;
  readonly failures: number;
  readonly lastInvokedAt: number | null;
  /** Exponential moving average of durations (α = 0.2). */
  readonly avgDurationMs: number;
}

/** Context of an agent actor. */
export interface AgentMachineContext extends AgentStats {
  readonly name: string;
  /** Invocations in flight. */
  readonly active: number;
}

/** One finished invocation, as an agent actor's statistics count it. */
export interface FinishedInvocation {
  readonly ok: boolean;
  readonly durationMs: number;
}

/**
 * Messages an agent actor understands: a batch of invocations that started and finished
 * since the last one (see `AgentStatsBatch`), in order.
 */
export type AgentMachineEvent = {
  readonly type: 'INVOCATIONS';
  readonly started: number;
  readonly lastInvokedAt: number | null;
  readonly finished: readonly FinishedInvocation[];
};

const EMA_ALPHA = 0.2;

/**
 * The agent actor: `idle` while none of its invocations runs, `busy` while any does. Its
 * context holds the call statistics the registry reports (Nerva's, with an EMA of
 * durations, α = 0.2).
 */
export const agentMachine = setup({
  types: {
    context: {} as AgentMachineContext,
    events: {} as AgentMachineEvent,
    input: {} as { readonly name: string },
  },
  actions: {
    apply: assign(({ context, event }) => {
      let { successes, failures, avgDurationMs } = context;
      for (const f of event.finished) {
        avgDurationMs =
          successes + failures === 0
            ? f.durationMs
            : EMA_ALPHA * f.durationMs + (1 - EMA_ALPHA) * avgDurationMs;
        if (f.ok) successes++;
        else failures++;
      }
      return {
        active: Math.max(0, context.active + event.started - event.finished.length),
        totalCalls: context.totalCalls + event.started,
        lastInvokedAt: event.lastInvokedAt ?? context.lastInvokedAt,
        successes,
        failures,
        avgDurationMs,
      };
    }),
  },
  guards: {
    busyAfter: ({ context, event }) => context.active + event.started - event.finished.length > 0,
  },
}).createMachine({
  id: 'agent',
  context: ({ input }) => ({
    name: input.name,
    active: 0,
    totalCalls: 0,
    successes: 0,
    failures: 0,
    lastInvokedAt: null,
    avgDurationMs: 0,
  }),
  initial: 'idle',
  on: {
    INVOCATIONS: [
      { guard: 'busyAfter', target: '.busy', actions: 'apply' },
      { target: '.idle', actions: 'apply' },
    ],
  },
  states: {
    idle: {},
    busy: {},
  },
});

/** A running agent actor. */
export type AgentActor = Actor<typeof agentMachine>;
