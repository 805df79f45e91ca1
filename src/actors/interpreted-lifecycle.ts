/**
 * @module A step's lifecycle on a real XState actor of the step machine — what a runtime made
 * with `createRuntime({ inspect })` runs every step on, so that XState's inspection (the
 * callback `createActor(..., { inspect })` and `@statelyai/inspect` take) sees each step's
 * messages and states. It answers exactly as the compiled lifecycle (`step-lifecycle.ts`)
 * does: the same machine decides, interpreted instead of compiled, so the same run logs the
 * same events byte for byte in either mode (tested); it costs an interpreter per step.
 */
import { createActor, type Actor, type InspectionEvent, type SnapshotFrom } from 'xstate';
import type { StepLifecycleSnapshot } from './step-lifecycle.js';
import { stepMachine, type StepMachineEvent } from './step-machine.js';

/** XState's inspection callback, as `createActor(machine, { inspect })` takes it. */
export type XStateInspect = (event: InspectionEvent) => void;

/** A step's lifecycle on an interpreted XState actor; see the module. */
export class InterpretedStepLifecycle {
  readonly id: string;
  /** The XState actor of the step machine: what the actor system registers for the step. */
  readonly xstate: Actor<typeof stepMachine>;

  /**
   * Starts the step's actor, from `from` (a step picked up where its log left it) or before
   * `started`; `onError` hears of a failure of the actor (none is expected: the machine only
   * numbers events).
   */
  constructor(
    id: string,
    inspect: XStateInspect,
    from: StepLifecycleSnapshot | null,
    onError: (err: unknown) => void,
  ) {
    this.id = id;
    const snapshot = from
      ? stepMachine.getPersistedSnapshot(
          stepMachine.resolveState({ value: from.value, context: from.context }),
        )
      : undefined;
    this.xstate = createActor(stepMachine, {
      id,
      inspect,
      ...(snapshot ? { snapshot } : {}),
    });
    this.xstate.subscribe({ error: onError });
    this.xstate.start();
  }

  getSnapshot(): StepLifecycleSnapshot {
    const s = this.xstate.getSnapshot();
    return { value: s.value, status: s.status === 'done' ? 'done' : 'active', context: s.context };
  }

  /** The same moment as an XState snapshot of `stepMachine`. */
  toXState(): SnapshotFrom<typeof stepMachine> {
    return this.xstate.getSnapshot();
  }

  getPersistedSnapshot(): unknown {
    return this.xstate.getPersistedSnapshot();
  }

  /**
   * Delivers `message`; true when the machine accepted it (numbered it). An ended step's
   * actor has stopped: nothing is sent to it, and the message is refused, as the compiled
   * lifecycle refuses it.
   */
  send(message: StepMachineEvent): boolean {
    const before = this.xstate.getSnapshot();
    if (before.status !== 'active') return false;
    this.xstate.send(message);
    return this.xstate.getSnapshot().context.seq !== before.context.seq;
  }

  stop(): void {
    this.xstate.stop();
  }
}
