/**
 * @module Durable agents (issue 46): the agents addressed by key, each key an actor that keeps
 * its state between messages, handles them one at a time in the order they were accepted,
 * sleeps in the store when idle and wakes on its next message, a wake or a schedule. This is
 * the runtime's side of them, put together: the registered agents, the awake actors
 * (`awake-actors.ts`), accepting messages (`actor-intake.ts`), the answers to `ask`
 * (`message-answers.ts`), events (`actor-signals.ts`), schedules (`actor-schedules.ts`) and the
 * one clock of due wakes and schedules (`wake-clock.ts`, `due-wakes.ts`).
 */
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { ConflictError } from '../errors/conflict-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import type { InlineAgentDefinition } from '../actors/agent-runtime.js';
import type { DurableAgentDefinition } from '../actors/durable-agent.js';
import type { StepEnding } from '../runs/submitted-step.js';
import type { ActorRecord } from '../store/actor-records.js';
import type { ActorStore } from '../store/actor-store.js';
import type { StepRecord, StepStatus } from '../store/records.js';
import { flushed } from '../store/run-store.js';
import { Activation } from './activation.js';
import { actorIdAt, checkAddress, type ActorAddress } from './actor-address.js';
import { ActorIntake, checkToken, type MessageReceipt, type SendOptions } from './actor-intake.js';
import { ActorSchedules } from './actor-schedules.js';
import { signalEvent, type SignalResult } from './actor-signals.js';
import { viewActor, type ActorView } from './actor-view.js';
import { AwakeActors, type AwakeOptions } from './awake-actors.js';
import { dueWakesSource } from './due-wakes.js';
import { checkedMessage } from './message-check.js';
import { findLeftWork } from './actor-recovery.js';
import { durableHandler } from './durable-handler.js';
import type { DurableHost, DurableRuntimeParts } from './durable-host.js';
import { MessageAnswers } from './message-answers.js';
import type { MessageTurn } from './message-turn.js';
import { UndeliveredActors } from './undelivered-actors.js';
import { WakeClock } from './wake-clock.js';
import { drainLeased, type DurableFleet, type HeldLease } from './fleet-actors.js';

export type { ActorView } from './actor-view.js';
export type { MessageReceipt, SendOptions } from './actor-intake.js';

/** Options of the durable agents of a runtime (`createRuntime({ durable })`). */
export type DurableOptions = AwakeOptions;

/** See the module. */
export class DurableAgents implements DurableHost {
  readonly store: DurableRuntimeParts['store'];
  readonly clock: DurableRuntimeParts['clock'];
  readonly ids: DurableRuntimeParts['ids'];
  readonly logger: DurableRuntimeParts['logger'];
  readonly submissions: DurableRuntimeParts['submissions'];
  /** The schedules, whose next times the same clock watches. */
  readonly schedules: ActorSchedules;
  readonly #defs = new Map<string, DurableAgentDefinition>();
  readonly #awake: AwakeActors;
  readonly #intake: ActorIntake;
  readonly #answers: MessageAnswers;
  /** The messages being handled here, by step id (their handlers find them so). */
  readonly #turns = new Map<string, MessageTurn>();
  /** Actors with work to go on with whose agent is not registered (yet), by agent name. */
  readonly #unregistered = new Map<string, Set<string>>();
  readonly #clock: WakeClock;
  /** Its place in a fleet, if it has one (`attachFleet`). */
  #fleet: DurableFleet | null = null;
  /** The leases this replica holds, by actor id. */
  readonly #leases = new Map<string, HeldLease>();
  /** Actors whose work no pool of the fleet was live to take (an API process's). */
  readonly #undelivered = new UndeliveredActors();
  #sweep: NodeJS.Timeout | null = null;
  #started = false;
  #closed = false;

  constructor(parts: DurableRuntimeParts, options: DurableOptions = {}) {
    this.store = parts.store;
    this.clock = parts.clock;
    this.ids = parts.ids;
    this.logger = parts.logger;
    this.submissions = parts.submissions;
    this.#awake = new AwakeActors((def, record) => new Activation(this, def, record), options);
    this.#answers = new MessageAnswers(parts.store);
    const actors = (): ActorStore => this.actors;
    this.#intake = new ActorIntake({
      store: parts.store,
      get actors() {
        return actors();
      },
      clock: parts.clock,
      ids: parts.ids,
      awake: this.#awake,
      closing: () => this.#closed,
      deliver: (def, actorId, record, stepId) => this.#deliver(def, actorId, record, stepId),
      messageEnded: (stepId, merged, status, ending) => {
        this.messageEnded(stepId, merged, status, ending);
      },
    });
    this.schedules = new ActorSchedules({
      store: parts.store,
      get actors() {
        return actors();
      },
      clock: parts.clock,
      logger: parts.logger,
      checkMessage: (agent, message) => this.#checked(this.definition(agent), message),
      busy: (address) => this.#busy(address),
      cancelOpen: async (address) => {
        await this.#cancelOpen(
          address,
          'cancelled by its schedule firing again (overlap cancel_previous)',
        );
      },
      deliver: async (address, message, token) => {
        await this.#intake.accept(this.definition(address.name), address, message, token);
      },
      wakeAdded: (at) => {
        this.#due(at);
      },
    });
    this.#clock = new WakeClock(
      parts.clock,
      parts.logger,
      dueWakesSource({
        store: parts.store,
        get actors() {
          return actors();
        },
        logger: parts.logger,
        definitionOf: (name) => this.#defs.get(name),
        accept: (def, address, message, token) => this.#intake.accept(def, address, message, token),
        resume: (actorId) => this.resume(actorId),
        wakeAdded: (at) => {
          this.#due(at);
        },
      }),
      { next: () => this.schedules.next(), fire: (now: number) => this.schedules.fire(now) },
    );
  }

  /** The store's actors; refused when the store keeps none. */
  get actors(): ActorStore {
    const actors = this.store.actors;
    if (!actors) {
      throw new InvalidParamsError(
        'this runtime\'s store keeps no durable agents (it has no "actors"): use the memory, SQLite, Redis or PostgreSQL store',
        { param: 'store' },
      );
    }
    return actors;
  }

  /** How many actors are awake here. */
  get awake(): number {
    return this.#awake.size;
  }

  /**
   * Puts every idle actor to sleep now (they wake from the store on their next message);
   * resolves how many slept. For an operator, and for measuring what an asleep actor costs.
   */
  sleepAll(): number {
    return this.#awake.sleepIdle();
  }

  /**
   * Registers a durable agent; gives the inline agent its messages' steps run as (registered
   * under the same name). `ConflictError` for a name taken.
   */
  register(def: DurableAgentDefinition): InlineAgentDefinition {
    if (this.#defs.has(def.name))
      throw new ConflictError(`agent "${def.name}" is registered already`);
    const actors = this.actors;
    this.#defs.set(def.name, def);
    this.start();
    const waiting = this.#unregistered.get(def.name);
    this.#unregistered.delete(def.name);
    // Registered after the recovery found its actors' work: they go on now.
    for (const actorId of waiting ?? []) queueMicrotask(() => void this.resume(actorId));
    return durableHandler(def, {
      turnOf: (stepId) => this.#turns.get(stepId),
      waits: {
        actors,
        clock: this.clock,
        wakeAdded: (due) => {
          this.#due(due);
        },
        checkMessage: (message) => this.#checked(def, message),
        flush: () => flushed(this.store),
      },
    });
  }

  /** The registered durable agents. */
  list(): DurableAgentDefinition[] {
    return [...this.#defs.values()];
  }

  /** The durable agent `name`; `NotFoundError` when none is registered. */
  definition(name: string): DurableAgentDefinition {
    const def = this.#defs.get(name);
    if (!def) throw new NotFoundError('agent', name);
    return def;
  }

  /** Starts the clock of due wakes, the sweep of idle actors and the recovery (once). */
  start(): void {
    if (this.#started || this.#closed) return;
    this.#started = true;
    // What a stopped runtime left: picked up once the agents registered with this one are.
    queueMicrotask(() => {
      this.recover().catch((err: unknown) => {
        this.logger.error(
          { err },
          "the durable agents' work left in the store could not be picked up",
        );
      });
    });
    this.#clock.start();
    this.#sweep = setInterval(() => {
      this.#awake.sweep(this.clock.now());
    }, 1_000);
    this.#sweep.unref();
  }

  /** `message` checked against `def`'s input schema, as plain JSON data. */
  #checked(def: DurableAgentDefinition, message: unknown): unknown {
    return checkedMessage(def, message);
  }

  /**
   * Accepts `message` for the actor at `address` (see `ActorHandle.send`): refused before
   * anything is stored when the agent is unknown (`NOT_FOUND`), the key malformed
   * (`INVALID_PARAMS`), the message fails the input schema (`SCHEMA_VIOLATION`), the mailbox
   * is full (`QUEUE_FULL`) or the actor busy under `reject` (`CONFLICT`). Resolves once the
   * message is durable.
   */
  async send(
    address: ActorAddress,
    message: unknown,
    options: SendOptions = {},
  ): Promise<MessageReceipt> {
    const def = this.definition(address.name);
    checkAddress(address);
    const token = checkToken(options.clientToken);
    return this.#intake.accept(def, address, this.#checked(def, message), token);
  }

  /**
   * Sends `message` (as {@link send}) and resolves its receipt and its end, once it ends
   * (`ActorHandle.ask`): a new message is watched from its acceptance, with no read of the
   * store; one whose token was seen is looked up.
   */
  async sendAndWait(
    address: ActorAddress,
    message: unknown,
    options: SendOptions = {},
  ): Promise<{ readonly receipt: MessageReceipt; readonly ended: Promise<StepEnding> }> {
    const def = this.definition(address.name);
    checkAddress(address);
    const token = checkToken(options.clientToken);
    const watched: { ending?: Promise<StepEnding> } = {};
    const receipt = await this.#intake.accept(
      def,
      address,
      this.#checked(def, message),
      token,
      (id) => {
        watched.ending = this.#answers.watch(id);
      },
    );
    // Handled on a fleet's replica: its end is read from the store.
    const elsewhere = this.#fleet !== null && !this.#fleet.runsActors;
    const ending = elsewhere
      ? this.#answers.polled(receipt.step_id)
      : (watched.ending ?? this.#answers.ended(receipt.step_id));
    // What the caller learns is durable first.
    return { receipt, ended: ending.then(async (e) => (await flushed(this.store), e)) };
  }

  /** Whether the actor is busy: a message being handled (here), queued or waiting. */
  async #busy(address: ActorAddress): Promise<boolean> {
    const awake = this.#awake.peek(actorIdAt(address));
    const actor = awake ? null : await this.actors.getActor(actorIdAt(address));
    return awake ? awake.busy : actor !== null && actor.status !== 'idle';
  }

  /**
   * Has the actor handle its messages: here (woken from the store when asleep: `record` when
   * the caller read it just now); on a fleet's replica, under the actor's lease; from a
   * fleet's API process, by a job on a pool (`stepId` the message it is for).
   */
  async #deliver(
    def: DurableAgentDefinition,
    actorId: string,
    record?: ActorRecord,
    stepId?: string,
  ): Promise<void> {
    try {
      const fleet = this.#fleet;
      if (fleet && !fleet.runsActors) {
        const handOff = async (): Promise<void> => {
          const id = stepId ?? (await this.actors.openMessages(actorId, 1))[0]?.step_id;
          if (id !== undefined) await fleet.dispatch.deliver(actorId, id);
        };
        const retry = (): Promise<void> => this.#deliver(def, actorId);
        await this.#undelivered.handOff(this.logger, actorId, handOff, retry);
        return;
      }
      if (fleet) {
        await this.#drainLeased(fleet, def, actorId);
        return;
      }
      const activation = await this.#awake.wake(actorId, def, () =>
        record ? Promise.resolve(record) : this.actors.getActor(actorId),
      );
      await activation?.drain();
    } catch (err) {
      this.logger.error({ err, actor_id: actorId }, 'an actor could not be woken');
    }
  }

  /** Handles the actor's messages under its lease (see `fleet-actors.ts`). */
  #drainLeased(
    fleet: DurableFleet,
    def: DurableAgentDefinition,
    actorId: string,
  ): Promise<'done' | 'held'> {
    return drainLeased(
      {
        actors: this.actors,
        held: this.#leases,
        wake: (record) => this.#awake.wake(actorId, def, () => Promise.resolve(record)),
        passivate: (activation) => {
          this.passivate(activation);
        },
      },
      fleet,
      actorId,
    );
  }

  /**
   * A fleet replica's `actor` job: handles the actor's messages here if none other holds its
   * lease. `done` (or nothing left to do: the message ended), `held` (put the job off),
   * `unregistered` (no such durable agent is registered here).
   */
  async drainHere(actorId: string, stepId: string): Promise<'done' | 'held' | 'unregistered'> {
    const fleet = this.#fleet;
    const step = await this.store.getStep(stepId);
    if (!step || ['succeeded', 'failed', 'cancelled'].includes(step.status)) return 'done';
    const actor = await this.actors.getActor(actorId);
    if (!actor) return 'done';
    const def = this.#defs.get(actor.name);
    if (!def) return 'unregistered';
    if (!fleet?.runsActors) {
      await this.#deliver(def, actorId, actor);
      return 'done';
    }
    return this.#drainLeased(fleet, def, actorId);
  }

  /** A fleet's `tick` job: everything due now fires (each once, fleet-wide). */
  tick(): Promise<void> {
    return this.#clock.ringNow();
  }

  /**
   * Joins a fleet: a replica runs actors under leases, with fenced writes; an API process
   * queues their work on the pools. Every due time goes to the pools as a delayed job too.
   */
  attachFleet(fleet: DurableFleet): void {
    this.#fleet = fleet;
  }

  /** A wake or schedule due at `at`: this process's clock rings by then, and a fleet's job. */
  #due(at: number): void {
    this.#clock.added(at);
    this.#fleet?.dispatch.tick(at).catch((err: unknown) => {
      this.logger.warn({ err, at }, 'a due time could not be queued on the fleet');
    });
  }

  /** Wakes the actor `actorId`, whatever its agent, to go on with its messages. */
  async resume(actorId: string, record?: ActorRecord): Promise<void> {
    const actor = record ?? (await this.actors.getActor(actorId));
    if (!actor) return;
    const def = this.#defs.get(actor.name);
    if (!def) {
      // Its agent may be registered later: it goes on then.
      const waiting = this.#unregistered.get(actor.name) ?? new Set<string>();
      waiting.add(actorId);
      this.#unregistered.set(actor.name, waiting);
      return;
    }
    await this.#deliver(def, actorId, record);
  }

  /** See {@link MessageAnswers.ended} (on a fleet's API process, the record is read). */
  ended(stepId: string): Promise<StepEnding> {
    if (this.#fleet !== null && !this.#fleet.runsActors) return this.#answers.polled(stepId);
    return this.#answers.ended(stepId);
  }

  turnStarted(turn: MessageTurn): void {
    this.#turns.set(turn.stepId, turn);
    const lease = this.#leases.get(turn.actor.actor_id);
    const fences = this.#fleet?.fences;
    if (lease && fences) {
      fences.hold(
        turn.stepId,
        turn.actor.run_id,
        this.#fleet?.leaseKey(lease.key) ?? '',
        lease.owner,
      );
    }
  }

  turnEnded(turn: MessageTurn): void {
    if (this.#turns.get(turn.stepId) === turn) this.#turns.delete(turn.stepId);
    this.#fleet?.fences?.drop(turn.stepId, turn.actor.run_id);
  }

  messageEnded(
    stepId: string,
    merged: readonly StepRecord[],
    status: StepStatus | null,
    ending: StepEnding | null,
  ): void {
    this.#answers.messageEnded(stepId, merged, status, ending);
  }

  passivate(activation: { readonly actor: { readonly actor_id: string } }): void {
    const awake = this.#awake.peek(activation.actor.actor_id);
    if (awake === activation) this.#awake.remove(awake);
  }

  /** The actor at `address` as API.md shows it; `null` for an actor never messaged. */
  view(address: ActorAddress): Promise<ActorView | null> {
    this.definition(address.name);
    const actorId = actorIdAt(checkAddress(address));
    return viewActor(this.actors, actorId, this.#awake.peek(actorId));
  }

  /**
   * Cancels the actor's messages: the one being handled (here) and every other open one end
   * `CANCELLED`; its state stays. Resolves how many were cancelled.
   */
  async cancel(address: ActorAddress): Promise<number> {
    this.definition(address.name);
    const actorId = actorIdAt(checkAddress(address));
    if (!(await this.actors.getActor(actorId))) {
      throw new NotFoundError('actor', `${address.name}/${address.key}`);
    }
    return this.#cancelOpen(address, "cancelled by its actor's cancel()");
  }

  async #cancelOpen(address: ActorAddress, why: string): Promise<number> {
    const actorId = actorIdAt(address);
    const actor = await this.actors.getActor(actorId);
    return actor ? this.#intake.cancelOpen(actor, this.#awake.peek(actorId), why) : 0;
  }

  /**
   * Fires the waits of `userId` for `event` whose `match` fits `data` and whose schema it
   * meets (`runtime.signal`, `POST /v1/events`); see `actor-signals.ts`.
   */
  signal(userId: string | null, event: string, data: unknown): Promise<SignalResult> {
    return signalEvent(
      {
        store: this.store,
        actors: this.actors,
        now: () => this.clock.now(),
        resume: (actorId) => this.resume(actorId),
      },
      userId,
      event,
      data,
    );
  }

  /**
   * Picks up what a stopped runtime left: every `live` actor handles its messages (one left
   * being handled runs again from its log), and every message whose wake fired goes on.
   */
  async recover(): Promise<{ readonly actors: number; readonly wakes: number }> {
    const found = await findLeftWork(this.actors, (actorId, record) => {
      void this.resume(actorId, record);
    });
    this.#clock.poke();
    return found;
  }

  /** Stops the clock and the sweep; waits (bounded) for the messages being handled. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#clock.stop();
    this.#undelivered.close();
    if (this.#sweep) clearInterval(this.#sweep);
    await this.#awake.drainBusy(10_000);
    this.#awake.clear();
  }
}
