/**
 * @module The step lifecycle as an XState machine that enforces STREAM-2001:
 * `started → (token | tool_suggest | fact | metrics | narration)* → checkpoint? → end | error`.
 *
 * The machine only decides: it numbers the events it accepts (`seq`, token index) and
 * ignores what its state does not allow. The step actor executes (logs and publishes).
 */
import { assign, setup } from 'xstate';
import type { ErrorPayload } from '../errors/to-error-payload.js';
import {
  copyErrorDetails,
  copyStartedOptions,
  type EmittableEvent,
  type Mutable,
  type Provenance,
  type StepEventBody,
} from '../streams/events.js';

/** An accepted event body with the `seq` the machine gave it. */
export type NumberedEventBody = StepEventBody & { readonly seq: number };

/** Machine context: the numbering of accepted events. */
export interface StepMachineContext {
  /** `seq` of the last accepted event; 0 before `started`. */
  readonly seq: number;
  /** Index the next token gets. */
  readonly tokenIndex: number;
  /** The events the last accepting transition took, numbered. */
  readonly accepted: readonly NumberedEventBody[];
}

/** The fields of a `started` event besides its stamp. */
export interface StartedFields {
  readonly provenance: Provenance;
  readonly pool_id?: string;
  readonly replica_id?: string;
  readonly queue_position?: number;
}

/** The fields of an `end` event besides its stamp. */
export type EndFields = Omit<Extract<StepEventBody, { type: 'end' }>, 'type'>;

/** Messages a step actor understands. */
export type StepMachineEvent =
  | { readonly type: 'START'; readonly fields: StartedFields }
  | { readonly type: 'TOKENS'; readonly texts: readonly string[] }
  | { readonly type: 'EMIT'; readonly body: EmittableEvent }
  | { readonly type: 'CHECKPOINT'; readonly checkpointId: string }
  | { readonly type: 'END'; readonly fields: EndFields }
  | { readonly type: 'FAIL'; readonly error: ErrorPayload }
  | { readonly type: 'CANCEL'; readonly error: ErrorPayload }
  /** A supervisor's word (a breaker tripped or refused): outside the order, never after the end. */
  | { readonly type: 'ESCALATE'; readonly escalation: EscalationFields };

/** The fields of an `escalation` event besides its stamp. */
export type EscalationFields = Omit<Extract<StepEventBody, { type: 'escalation' }>, 'type'>;

function one(context: StepMachineContext, body: NumberedEventBody): StepMachineContext {
  return { seq: body.seq, tokenIndex: context.tokenIndex, accepted: [body] };
}

/**
 * The context after the machine accepts `event`: the events it gives, numbered. Pure; the
 * machine's one action, and what the compiled lifecycle (`step-lifecycle.ts`) runs.
 */
export function acceptEvent(
  context: StepMachineContext,
  event: StepMachineEvent,
): StepMachineContext {
  const seq = context.seq + 1;
  switch (event.type) {
    case 'START': {
      const { provenance } = event.fields;
      const body: Mutable<Extract<NumberedEventBody, { type: 'started' }>> = {
        type: 'started',
        seq,
        provenance,
      };
      copyStartedOptions(body, event.fields);
      return one(context, body);
    }
    case 'TOKENS': {
      const accepted: NumberedEventBody[] = [];
      let last = context.seq;
      let i = context.tokenIndex;
      for (const t of event.texts) accepted.push({ type: 'token', t, i: i++, seq: ++last });
      return { seq: last, tokenIndex: i, accepted };
    }
    case 'EMIT':
      // Rare and of four shapes: a spread is fine here.
      return one(context, { ...event.body, seq });
    case 'CHECKPOINT':
      return one(context, { type: 'checkpoint', checkpoint_id: event.checkpointId, seq });
    case 'END': {
      const { output, budget_usage, provenance } = event.fields;
      return one(context, { type: 'end', seq, output, budget_usage, provenance });
    }
    case 'ESCALATE': {
      const { reason, target } = event.escalation;
      const body: Mutable<Extract<NumberedEventBody, { type: 'escalation' }>> = {
        type: 'escalation',
        seq,
        reason,
        target,
      };
      if (event.escalation.breaker_state !== undefined) {
        body.breaker_state = event.escalation.breaker_state;
      }
      return one(context, body);
    }
    case 'FAIL':
    case 'CANCEL': {
      const { code, message, retriable } = event.error;
      const body: Mutable<Extract<NumberedEventBody, { type: 'error' }>> = {
        type: 'error',
        seq,
        code,
        message,
        retriable,
      };
      copyErrorDetails(body, event.error);
      return one(context, body);
    }
  }
}

/** The context of a step that has accepted nothing yet. */
export const INITIAL_STEP_CONTEXT: StepMachineContext = { seq: 0, tokenIndex: 0, accepted: [] };

/**
 * The step lifecycle. States: `pending` (before `started`), `running`, `checkpointed`
 * (only `end` / `error` may follow), and the final `succeeded`, `failed`, `cancelled`.
 * A refused event leaves the context untouched (`seq` unchanged), which is how the step
 * actor knows; `accepted` then still holds the previous transition's events.
 */
export const stepMachine = setup({
  types: {
    context: {} as StepMachineContext,
    events: {} as StepMachineEvent,
  },
  actions: {
    accept: assign(({ context, event }) => acceptEvent(context, event)),
  },
}).createMachine({
  id: 'step',
  context: INITIAL_STEP_CONTEXT,
  initial: 'pending',
  states: {
    pending: {
      on: {
        START: { target: 'running', actions: 'accept' },
        ESCALATE: { actions: 'accept' },
        // A step can fail or be cancelled before it starts (e.g. while queued).
        FAIL: { target: 'failed', actions: 'accept' },
        CANCEL: { target: 'cancelled', actions: 'accept' },
      },
    },
    running: {
      on: {
        TOKENS: { actions: 'accept' },
        EMIT: { actions: 'accept' },
        ESCALATE: { actions: 'accept' },
        CHECKPOINT: { target: 'checkpointed', actions: 'accept' },
        END: { target: 'succeeded', actions: 'accept' },
        FAIL: { target: 'failed', actions: 'accept' },
        CANCEL: { target: 'cancelled', actions: 'accept' },
      },
    },
    checkpointed: {
      on: {
        ESCALATE: { actions: 'accept' },
        END: { target: 'succeeded', actions: 'accept' },
        FAIL: { target: 'failed', actions: 'accept' },
        CANCEL: { target: 'cancelled', actions: 'accept' },
      },
    },
    succeeded: { type: 'final' },
    failed: { type: 'final' },
    cancelled: { type: 'final' },
  },
});

/** The lifecycle states of a step. */
export type StepLifecycleState =
  'pending' | 'running' | 'checkpointed' | 'succeeded' | 'failed' | 'cancelled';
