/**
 * @module Accepting an actor's messages (issue 46): the actor found or created with its run,
 * the mailbox policy asked when it is busy (`queue` bounded by `maxQueue`, `reject`,
 * `interrupt`, `merge` at handling time), the message's step claimed `queued` by its client
 * token — the same token again answers with the first — and the acceptance made durable
 * before it is acknowledged. And ending an actor's open messages from outside their handler
 * (an `interrupt`, a `cancel()`, a schedule's `cancel_previous`).
 */
import { isoTime, type Clock } from '../context/clock.js';
import type { IdSource } from '../context/id-source.js';
import { CancelledError } from '../errors/cancelled-error.js';
import { ConflictError } from '../errors/conflict-error.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { QueueFullError } from '../errors/queue-full-error.js';
import type { DurableAgentDefinition } from '../actors/durable-agent.js';
import type { StepEnding } from '../runs/submitted-step.js';
import { actorEntry, type ActorRecord } from '../store/actor-records.js';
import type { ActorStore } from '../store/actor-store.js';
import { zeroUsage, type StepRecord, type StepStatus } from '../store/records.js';
import { flushed, type RunStore } from '../store/run-store.js';
import { actorRun, type Activation } from './activation.js';
import { actorIdAt, type ActorAddress } from './actor-address.js';
import type { AwakeActors } from './awake-actors.js';
import { endOpenMessage } from './message-ends.js';

/** What accepting a message gives back (API.md: `POST /v1/agents/{name}/{key}/messages`). */
export interface MessageReceipt {
  /** The message's id: its step's. */
  readonly message_id: string;
  readonly step_id: string;
  readonly run_id: string;
  readonly status: StepStatus;
  /** False when the client token was seen before: nothing was accepted. */
  readonly created: boolean;
}

/** Options of a message. */
export interface SendOptions {
  /** The same token for the same actor answers with the first message, and runs nothing. */
  readonly clientToken?: string;
}

/** The longest client token. */
const TOKEN_MAX = 256;

/** What acceptance needs. */
export interface IntakeHost {
  readonly store: RunStore;
  readonly actors: ActorStore;
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly awake: AwakeActors;
  /** Whether the runtime is closing (messages are refused). */
  closing(): boolean;
  /** Wakes the actor and has it handle its messages (not awaited by acceptance). */
  deliver(
    def: DurableAgentDefinition,
    actorId: string,
    record: ActorRecord,
    stepId: string,
  ): Promise<void>;
  /** A message ended outside its handler: who waits for it is told. */
  messageEnded(
    stepId: string,
    merged: readonly StepRecord[],
    status: StepStatus | null,
    ending: StepEnding | null,
  ): void;
}

/** A client token checked: absent, or a string of 1 to 256 characters. */
export function checkToken(token: unknown): string | null {
  if (token === undefined || token === null) return null;
  if (typeof token !== 'string' || token.length === 0 || token.length > TOKEN_MAX) {
    throw new InvalidParamsError(`client_token must be a string of 1 to ${TOKEN_MAX} characters`, {
      param: 'client_token',
    });
  }
  return token;
}

/** See the module. */
export class ActorIntake {
  readonly #host: IntakeHost;

  constructor(host: IntakeHost) {
    this.#host = host;
  }

  /** Accepts a checked message for the actor at `address` (see `DurableAgents.send`). */
  async accept(
    def: DurableAgentDefinition,
    address: ActorAddress,
    message: unknown,
    token: string | null,
    watch?: (stepId: string) => void,
  ): Promise<MessageReceipt> {
    // An ask is answered once its message ended, and its end is made durable first: its
    // acceptance need not be durable before its actor takes it (it is, with the end, in the
    // store's next commit — often one commit for both). A send is acknowledged once durable.
    const host = this.#host;
    if (host.closing())
      throw new ConflictError('the runtime is closing: it takes no more messages');
    const actorId = actorIdAt(address);
    const awake = host.awake.get(actorId);
    const actor = awake?.actor ?? (await this.#open(def, address, actorId));
    const { policy, maxQueue } = def.durable.mailbox;
    // Awake here, the activation knows; asleep, the stored status says. Under `reject` a
    // queued message counts through the store's bound below, so busy is a message handled now.
    const busy = awake
      ? policy === 'reject'
        ? awake.turn !== null
        : awake.busy
      : actor.status !== 'idle';
    if (busy && (policy === 'reject' || policy === 'interrupt')) {
      // A message sent again under its token is answered as the first was, busy or not.
      const seen = await this.#seen(actor, token);
      if (seen) return receiptOf(seen, false);
      if (policy === 'reject') throw busyActor(def, actor);
      await this.cancelOpen(
        actor,
        awake,
        'interrupted by a newer message (mailbox policy interrupt)',
      );
    }
    // A message sent without a token has none (its calls are recorded under its step's id):
    // no token to look up, nor to keep in the token's index.
    const step = this.#message(actor, message, token);
    let accepted;
    try {
      accepted = await host.actors.acceptMessage(actorId, step, policy === 'reject' ? 1 : maxQueue);
    } catch (err) {
      if (policy === 'reject' && err instanceof QueueFullError) throw busyActor(def, actor);
      throw err;
    }
    // Whoever waits for its end listens before its actor may take it.
    if (accepted.created) watch?.(accepted.step.step_id);
    if (!watch) await flushed(host.store);
    if (accepted.created) void host.deliver(def, actorId, actor, accepted.step.step_id);
    return receiptOf(accepted.step, accepted.created);
  }

  /** A queued message step of `actor`. */
  #message(actor: ActorRecord, message: unknown, token: string | null): StepRecord {
    return {
      step_id: this.#host.ids.id('step'),
      run_id: actor.run_id,
      type: 'agent',
      name: actor.name,
      parent_step_id: null,
      actor_path: [actor.name],
      client_token: token,
      input: message,
      placement: 'inline',
      status: 'queued',
      budget_usage: zeroUsage(),
      provenance: null,
      output: null,
      error: null,
      created_at: isoTime(this.#host.clock.now()),
      started_at: null,
      ended_at: null,
      budgets: {},
      placement_decision: null,
      first_token_at: null,
    };
  }

  /**
   * The actor's message with client token `token`, if it has one: asked as an acceptance
   * with no room (the store answers a token it has seen before it looks at the room).
   */
  async #seen(actor: ActorRecord, token: string | null): Promise<StepRecord | null> {
    if (token === null) return null;
    try {
      const found = await this.#host.actors.acceptMessage(
        actor.actor_id,
        this.#message(actor, null, token),
        0,
      );
      return found.created ? null : found.step;
    } catch (err) {
      if (err instanceof QueueFullError) return null;
      throw err;
    }
  }

  /** The actor at `address`, created (with its run) when it has none: one read when it has. */
  async #open(
    def: DurableAgentDefinition,
    address: ActorAddress,
    actorId: string,
  ): Promise<ActorRecord> {
    const { actors, clock, ids } = this.#host;
    const now = isoTime(clock.now());
    const actor: ActorRecord = {
      actor_id: actorId,
      user_id: address.userId,
      name: def.name,
      key: address.key,
      run_id: ids.id('run'),
      version: def.durable.version,
      state: JSON.parse(JSON.stringify(def.durable.initial ?? null)) as unknown,
      status: 'idle',
      created_at: now,
      updated_at: now,
    };
    const run = { ...actorRun(actor), entry: actorEntry(def.name, address.key) };
    return (await actors.openActor(actor, run)).actor;
  }

  /**
   * Ends the actor's open messages `CANCELLED` with `why`: the one being handled here through
   * its context (its step ends `CANCELLED`, its state change not applied), every other one now.
   * Resolves how many.
   */
  async cancelOpen(
    actor: ActorRecord,
    awake: Activation | undefined,
    why: string,
  ): Promise<number> {
    const host = this.#host;
    const running = awake?.turn;
    running?.ctx?.cancel(new CancelledError(why));
    const open = await host.actors.openMessages(actor.actor_id, 1_000_000);
    for (const step of open) {
      if (step.step_id === running?.stepId) continue;
      await endOpenMessage(host, actor, step, why);
      host.messageEnded(step.step_id, [], 'cancelled', {
        status: 'cancelled',
        output: null,
        error: { code: 'CANCELLED', message: why, retriable: false },
      });
    }
    await flushed(host.store);
    return open.length;
  }
}

/** The refusal of a message to a busy actor under mailbox policy `reject`. */
function busyActor(def: DurableAgentDefinition, actor: ActorRecord): ConflictError {
  return new ConflictError(
    `${def.name}/${actor.key} is busy with a message and its mailbox policy is "reject": try again once it is done`,
    { details: { agent: def.name, key: actor.key, policy: 'reject' } },
  );
}

/** What accepting message `step` gives back. */
function receiptOf(step: StepRecord, created: boolean): MessageReceipt {
  const { step_id: stepId, run_id: runId, status } = step;
  return { message_id: stepId, step_id: stepId, run_id: runId, status, created };
}
