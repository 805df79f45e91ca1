/**
 * @module What the durable agents' parts need of the runtime and of each other (issue 46):
 * the store and its actors, time, ids, the submission machinery a message's step runs
 * through, and the table of awake actors they report to.
 */
import type { Clock } from '../context/clock.js';
import type { IdSource } from '../context/id-source.js';
import type { Logger } from '../observability/logger.js';
import type { StepEnding } from '../runs/submitted-step.js';
import type { SubmissionHost } from '../steps/submission-host.js';
import type { ActorStore } from '../store/actor-store.js';
import type { StepRecord, StepStatus } from '../store/records.js';
import type { RunStore } from '../store/run-store.js';
import type { MessageTurn } from './message-turn.js';

/** The runtime's parts the durable agents work through. */
export interface DurableRuntimeParts {
  readonly store: RunStore;
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly logger: Logger;
  /** How a message's step runs: as a step submitted to the actor's run. */
  readonly submissions: SubmissionHost;
}

/** What an activation needs: the runtime's parts, and the table it is awake in. */
export interface DurableHost extends DurableRuntimeParts {
  readonly actors: ActorStore;
  /**
   * Takes an activation (an awake actor, `activation.ts`) out of memory: idle, waiting, or
   * out of step with the store.
   */
  passivate(activation: { readonly actor: { readonly actor_id: string } }): void;
  /** Wakes the actor again (a new activation): work came while this one was leaving. */
  resume(actorId: string): Promise<void>;
  /** A message began being handled (its handler finds its turn by its step). */
  turnStarted(turn: MessageTurn): void;
  turnEnded(turn: MessageTurn): void;
  /** A message (and those merged into it) ended here, or waits (`waiting`), or could not be stored (`null`). */
  messageEnded(
    stepId: string,
    merged: readonly StepRecord[],
    status: StepStatus | null,
    ending: StepEnding | null,
  ): void;
}
