/** @module An agent as an actor: idle or busy, with the registry's call statistics. */
import { assign, setup } from 'xstate';

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

/** Messages an agent actor understands. */
export type AgentMachineEvent =
  | { readonly type: 'INVOCATION_STARTED'; readonly at: number }
  | { readonly type: 'INVOCATION_FINISHED'; readonly ok: boolean; readonly durationMs: number };

const EMA_ALPHA = 0.2;

/**
 * The agent actor: `idle` until an invocation starts, `busy` while any runs. Its context
 * holds the call statistics the registry reports.
 */
export const agentMachine = setup({
  types: {
    context: {} as AgentMachineContext,
    events: {} as AgentMachineEvent,
    input: {} as { readonly name: string },
  },
  actions: {
    started: assign(({ context, event }) =>
      event.type === 'INVOCATION_STARTED'
        ? {
            active: context.active + 1,
            totalCalls: context.totalCalls + 1,
            lastInvokedAt: event.at,
          }
        : {},
    ),
    finished: assign(({ context, event }) => {
      if (event.type !== 'INVOCATION_FINISHED') return {};
      const avg =
        context.successes + context.failures === 0
          ? event.durationMs
          : EMA_ALPHA * event.durationMs + (1 - EMA_ALPHA) * context.avgDurationMs;
      return {
        active: Math.max(0, context.active - 1),
        successes: context.successes + (event.ok ? 1 : 0),
        failures: context.failures + (event.ok ? 0 : 1),
        avgDurationMs: avg,
      };
    }),
  },
  guards: {
    lastOne: ({ context }) => context.active <= 1,
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
  states: {
    idle: {
      on: { INVOCATION_STARTED: { target: 'busy', actions: 'started' } },
    },
    busy: {
      on: {
        INVOCATION_STARTED: { actions: 'started' },
        INVOCATION_FINISHED: [
          { guard: 'lastOne', target: 'idle', actions: 'finished' },
          { actions: 'finished' },
        ],
      },
    },
  },
});
