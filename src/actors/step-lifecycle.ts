/**
 * @module The step lifecycle, compiled. The XState step machine stays the one definition of
 * the lifecycle; this module derives its transition table once, at load, by asking XState's
 * own pure `transition()` what every state does with every message, and then runs steps on
 * that table without an interpreter.
 *
 * Why: a step lives for one call, so interpreting it costs an actor, a system and a scheduler
 * per step — about 70 % of an inline run's CPU (docs/benchmarks.md). Long-lived actors (agents,
 * breakers, supervisors) still run on XState's interpreter. A compiled step converts to and
 * from XState snapshots (`toXState` / `fromXState`), so checkpoints hold the same persisted
 * snapshots an interpreted step would give, and a property test holds the two to the same
 * answers (test/actors/step-lifecycle.test.ts).
 */
import { transition, type SnapshotFrom } from 'xstate';
import type { ErrorPayload } from '../errors/to-error-payload.js';
import {
  copyErrorDetails,
  copyStartedOptions,
  emptyProvenance,
  type Mutable,
  type StepEvent,
} from '../streams/events.js';
import {
  acceptEvent,
  INITIAL_STEP_CONTEXT,
  stepMachine,
  type EscalationFields,
  type StartedFields,
  type StepLifecycleState,
  type StepMachineContext,
  type StepMachineEvent,
} from './step-machine.js';

type MessageType = StepMachineEvent['type'];

/** What a step's lifecycle is at one moment; the shape of an XState machine snapshot's core. */
export interface StepLifecycleSnapshot {
  readonly value: StepLifecycleState;
  /** `done` in the final states. */
  readonly status: 'active' | 'done';
  readonly context: StepMachineContext;
}

/** What an observer of a step's lifecycle sees (see `ActorSystem.inspect`). */
export type LifecycleObservation =
  | { readonly type: 'message'; readonly message: StepMachineEvent }
  | { readonly type: 'snapshot'; readonly snapshot: StepLifecycleSnapshot };

/** One message of every type, to ask the machine what each state does with it. */
const PROBES: { readonly [K in MessageType]: Extract<StepMachineEvent, { type: K }> } = {
  START: { type: 'START', fields: { provenance: emptyProvenance() } },
  TOKENS: { type: 'TOKENS', texts: ['probe'] },
  EMIT: { type: 'EMIT', body: { type: 'narration', text: 'probe' } },
  CHECKPOINT: { type: 'CHECKPOINT', checkpointId: 'probe' },
  END: {
    type: 'END',
    fields: {
      output: null,
      budget_usage: { tokens_in: 0, tokens_out: 0, cost_usd: 0, wall_ms: 0 },
      provenance: emptyProvenance(),
    },
  },
  FAIL: { type: 'FAIL', error: { code: 'INTERNAL', message: 'probe', retriable: false } },
  CANCEL: { type: 'CANCEL', error: { code: 'CANCELLED', message: 'probe', retriable: false } },
  ESCALATE: { type: 'ESCALATE', escalation: { reason: 'probe', target: 'probe' } },
};

type Row = Readonly<Partial<Record<MessageType, StepLifecycleState>>>;

/** The states, and for each the state every message it accepts leads to. */
export interface StepTransitionTable {
  readonly transitions: Readonly<Record<StepLifecycleState, Row>>;
  readonly final: ReadonlySet<StepLifecycleState>;
}

/**
 * Derives the transition table from `stepMachine` with XState's pure `transition()`: a
 * message is accepted in a state when the machine numbers it (its `seq` moves).
 */
export function compileStepMachine(): StepTransitionTable {
  const states = stepMachine.root.states;
  const transitions = {} as Record<StepLifecycleState, Row>;
  const final = new Set<StepLifecycleState>();
  for (const [key, node] of Object.entries(states)) {
    const value = key as StepLifecycleState;
    if (node.type === 'final') final.add(value);
    const from = stepMachine.resolveState({ value, context: INITIAL_STEP_CONTEXT });
    const row: Partial<Record<MessageType, StepLifecycleState>> = {};
    for (const probe of Object.values(PROBES)) {
      const [next] = transition(stepMachine, from, probe);
      if (next.context.seq !== from.context.seq) row[probe.type] = next.value;
    }
    transitions[value] = row;
  }
  return { transitions, final };
}

const TABLE = compileStepMachine();

/**
 * One step's lifecycle, on the compiled table. `send` returns whether the message was
 * accepted; a refused message changes nothing (as the machine ignores it).
 */
export class StepLifecycle {
  readonly id: string;
  #snapshot: StepLifecycleSnapshot;
  #observers: Set<(o: LifecycleObservation) => void> | null = null;

  constructor(id: string, snapshot?: StepLifecycleSnapshot) {
    this.id = id;
    this.#snapshot = snapshot ?? {
      value: 'pending',
      status: 'active',
      context: INITIAL_STEP_CONTEXT,
    };
  }

  /** A lifecycle resumed from an XState snapshot of the step machine (a checkpoint's). */
  static fromXState(id: string, snapshot: SnapshotFrom<typeof stepMachine>): StepLifecycle {
    const value = snapshot.value;
    return new StepLifecycle(id, {
      value,
      status: TABLE.final.has(value) ? 'done' : 'active',
      context: snapshot.context,
    });
  }

  /**
   * The lifecycle a step's log leaves it in: its events fed through the machine again, from
   * a checkpoint's persisted snapshot of the step when there is one (NERVE-4005), else from
   * the start. How a runtime restarted on a durable store picks up a step its predecessor
   * left running. An event the machine refuses means the log is not one the machine wrote:
   * `TypeError` naming its `seq`.
   */
  static fromLog(
    id: string,
    events: readonly StepEvent[],
    checkpoint?: SnapshotFrom<typeof stepMachine>,
  ): StepLifecycle {
    const lifecycle = checkpoint ? StepLifecycle.fromXState(id, checkpoint) : new StepLifecycle(id);
    for (const event of events) {
      if (event.seq <= lifecycle.getSnapshot().context.seq) continue;
      if (!lifecycle.send(messageOf(event))) {
        throw new TypeError(
          `the log of step ${id} does not follow the step lifecycle at seq ${event.seq} (${event.type})`,
        );
      }
    }
    return lifecycle;
  }

  getSnapshot(): StepLifecycleSnapshot {
    return this.#snapshot;
  }

  /** The same moment as an XState snapshot of `stepMachine`. */
  toXState(): SnapshotFrom<typeof stepMachine> {
    const { value, context } = this.#snapshot;
    return stepMachine.resolveState({ value, context });
  }

  /** What a checkpoint stores: XState's persisted form of {@link toXState}. */
  getPersistedSnapshot(): unknown {
    return stepMachine.getPersistedSnapshot(this.toXState());
  }

  /** Delivers `message`; true when the lifecycle accepted it. */
  send(message: StepMachineEvent): boolean {
    const observers = this.#observers;
    if (observers) for (const o of observers) o({ type: 'message', message });
    const from = this.#snapshot;
    const to = TABLE.transitions[from.value][message.type];
    if (to === undefined) return false;
    this.#snapshot = {
      value: to,
      status: TABLE.final.has(to) ? 'done' : 'active',
      context: acceptEvent(from.context, message),
    };
    if (observers) for (const o of observers) o({ type: 'snapshot', snapshot: this.#snapshot });
    return true;
  }

  /** Nothing runs between messages, so there is nothing to stop; kept for the actor registry. */
  stop(): void {
    this.#observers = null;
  }

  /** Observes every message and state change until the returned function is called. */
  observe(observer: (o: LifecycleObservation) => void): () => void {
    (this.#observers ??= new Set()).add(observer);
    return () => {
      this.#observers?.delete(observer);
      if (this.#observers?.size === 0) this.#observers = null;
    };
  }
}

/** The message that makes the machine give `event` (a logged event fed back). */
function messageOf(event: StepEvent): StepMachineEvent {
  switch (event.type) {
    case 'started': {
      const fields: Mutable<StartedFields> = { provenance: event.provenance };
      copyStartedOptions(fields, event);
      return { type: 'START', fields };
    }
    case 'token':
      return { type: 'TOKENS', texts: [event.t] };
    case 'checkpoint':
      return { type: 'CHECKPOINT', checkpointId: event.checkpoint_id };
    case 'end':
      return {
        type: 'END',
        fields: {
          output: event.output,
          budget_usage: event.budget_usage,
          provenance: event.provenance,
        },
      };
    case 'error': {
      const error: Mutable<ErrorPayload> = {
        code: event.code,
        message: event.message,
        retriable: event.retriable,
      };
      copyErrorDetails(error, event);
      return { type: 'FAIL', error };
    }
    case 'escalation': {
      const escalation: Mutable<EscalationFields> = { reason: event.reason, target: event.target };
      if (event.breaker_state !== undefined) escalation.breaker_state = event.breaker_state;
      return { type: 'ESCALATE', escalation };
    }
    default: {
      const { step_id: _step, seq: _seq, ts: _ts, ...body } = event;
      return { type: 'EMIT', body };
    }
  }
}
