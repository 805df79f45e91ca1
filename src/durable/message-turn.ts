/**
 * @module One message of an actor being handled (issue 46): the message (or the messages a
 * `merge` mailbox folded into it), the state it starts from, what its handler gets
 * (`ActorContext`), and what its end writes to the actor with the step's end — the next state
 * when it succeeded, nothing of it otherwise.
 */
import type { ExecContext } from '../context/exec-context.js';
import { isoTime, type Clock } from '../context/clock.js';
import { SchemaViolationError } from '../errors/schema-violation-error.js';
import type { ErrorPayload } from '../errors/to-error-payload.js';
import type { ActorContext, ActorTurn, DurableAgentDefinition } from '../actors/durable-agent.js';
import type { ActorEndWrite, ActorRecord } from '../store/actor-records.js';
import type { StepPatch, StepStatus } from '../store/records.js';
import { deepCopy } from '../store/deep-copy.js';
import { zodIssues } from '../tools/zod-issues.js';
import { MessageWaits, type WaitsHost } from './actor-waits.js';

/** What a turn was started with. */
export interface TurnStart {
  readonly def: DurableAgentDefinition;
  /** The actor, its state brought up to the definition's version. */
  readonly actor: ActorRecord;
  /** Why the actor's stored state cannot be used (no migration): its messages fail with it. */
  readonly broken: Error | null;
  readonly stepId: string;
  /** The message handled (the fold of several, for a `merge` mailbox). */
  readonly message: unknown;
  /** Queued messages folded into this one: they end with it. */
  readonly merged: readonly string[];
}

/** See the module. */
export class MessageTurn {
  readonly def: DurableAgentDefinition;
  readonly actor: ActorRecord;
  readonly stepId: string;
  readonly message: unknown;
  readonly merged: readonly string[];
  readonly broken: Error | null;
  /** The state the handler's end left, checked; `undefined` until it ended well. */
  #next: { readonly value: unknown } | undefined;
  /** The message's step context, once its step runs. */
  ctx: ExecContext | null = null;
  readonly #clock: Clock;

  constructor(start: TurnStart, clock: Clock) {
    this.def = start.def;
    this.actor = start.actor;
    this.stepId = start.stepId;
    this.message = start.message;
    this.merged = start.merged;
    this.broken = start.broken;
    this.#clock = clock;
  }

  /** The next state the handler's end left (checked), once it ended well. */
  get nextState(): { readonly value: unknown } | undefined {
    return this.#next;
  }

  /** What the handler gets besides its message, on the message's step context `ctx`. */
  context(ctx: ExecContext, host: WaitsHost): ActorContext<unknown> {
    this.ctx = ctx;
    const waits = new MessageWaits(host, this.actor, this.stepId, ctx);
    return {
      name: this.actor.name,
      key: this.actor.key,
      state: deepCopy(this.actor.state),
      messageId: this.stepId,
      ctx,
      sleep: (duration) => waits.sleep(duration),
      waitFor: (event, options) => waits.waitFor(event, options),
      remind: (name, options) => waits.remind(name, options),
      cancelReminder: (name) => waits.cancelReminder(name),
    };
  }

  /**
   * The handler's result taken: its next state checked against the state's schema (kept for
   * the end write), its output given back. `SchemaViolationError` for a bad state or result:
   * the message fails and the state stays.
   */
  finish(result: unknown): unknown {
    if (typeof result !== 'object' || result === null || Array.isArray(result)) {
      throw new SchemaViolationError(`the result of durable agent ${this.def.name}`, [
        { path: [], message: 'expected { state?, output? }' },
      ]);
    }
    const turn = result as ActorTurn<unknown>;
    if ('state' in turn && turn.state !== undefined) {
      const parsed = this.def.durable.state.safeParse(turn.state);
      if (!parsed.success) {
        throw new SchemaViolationError(
          `the state ${this.def.name}/${this.actor.key} would have`,
          zodIssues(parsed.error),
        );
      }
      // Kept as plain JSON data: what the store will read back.
      this.#next = { value: JSON.parse(JSON.stringify(parsed.data)) as unknown };
    } else if (this.actor.version !== this.def.durable.version) {
      // A migrated state is written with the first message that succeeds.
      this.#next = { value: this.actor.state };
    }
    return turn.output ?? null;
  }

  /** What the message's end writes to its actor, for the status (and error) its step ends with. */
  actorEnd(status: StepStatus, error: ErrorPayload | null): ActorEndWrite {
    const now = isoTime(this.#clock.now());
    const merged = this.merged.map((stepId) => ({
      stepId,
      patch: this.#mergedEnd(status, error, now),
    }));
    return {
      actor_id: this.actor.actor_id,
      updated_at: now,
      ...(status === 'succeeded' && this.#next
        ? { state: { value: this.#next.value, version: this.def.durable.version } }
        : {}),
      ...(merged.length > 0 ? { merged } : {}),
    };
  }

  /** The end of a message folded into this one: as this one ended (its error), pointing to it. */
  #mergedEnd(status: StepStatus, error: ErrorPayload | null, now: string): StepPatch {
    const ended: StepStatus = status === 'succeeded' || status === 'cancelled' ? status : 'failed';
    return {
      status: ended,
      started_at: now,
      ended_at: now,
      output: { merged_into: this.stepId },
      ...(ended === 'succeeded' || error === null
        ? {}
        : { error: { ...error, details: { ...error.details, merged_into: this.stepId } } }),
    };
  }
}
