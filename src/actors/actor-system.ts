/**
 * @module The actor system of a runtime: the registry by id, the injected clock and ids,
 * and inspection through one choke point.
 */
import type { AnyActorRef, InspectionEvent as XStateInspectionEvent, Subscription } from 'xstate';
import { systemClock, type Clock } from '../context/clock.js';
import type { ExecContext } from '../context/exec-context.js';
import { defaultIdSource, type IdSource } from '../context/id-source.js';
import { StepLifecycle } from './step-lifecycle.js';

/** What kind of actor an entry is. */
export type ActorKind = 'agent' | 'step';

/**
 * A registered actor and what the registry knows of it. Its ref is an XState actor, or for a
 * step the compiled step lifecycle (see `step-lifecycle.ts`).
 */
export interface ActorEntry {
  readonly id: string;
  readonly kind: ActorKind;
  /** The agent, tool or engine name. */
  readonly name: string;
  readonly ref: AnyActorRef | StepLifecycle;
  /** The run a step belongs to. */
  readonly runId?: string;
  /** A step's context, through which it is cancelled. */
  readonly ctx?: ExecContext;
}

/** What an inspection observer sees. */
export type InspectionEvent =
  | {
      readonly type: 'actor.registered';
      readonly actorId: string;
      readonly kind: ActorKind;
      readonly name: string;
    }
  | {
      readonly type: 'actor.unregistered';
      readonly actorId: string;
      readonly kind: ActorKind;
      readonly name: string;
    }
  | {
      readonly type: 'actor.event';
      readonly actorId: string;
      readonly event: { readonly type: string };
    }
  | {
      readonly type: 'actor.snapshot';
      readonly actorId: string;
      readonly value: unknown;
      readonly status: string;
    }
  | { readonly type: 'actor.failed'; readonly actorId: string; readonly error: unknown };

/** Receives inspection events; exceptions it throws are swallowed and counted. */
export type InspectionObserver = (event: InspectionEvent) => void;

/** Options of {@link ActorSystem}. */
export interface ActorSystemOptions {
  readonly clock?: Clock;
  readonly ids?: IdSource;
}

/**
 * The registry and inspection point of one runtime. Callers hold ids or refs, never the
 * actor objects behind them.
 *
 * Inspection is free while nobody observes: XState's own inspection (and a step
 * lifecycle's observer) is attached to live actors only while at least one observer is
 * subscribed.
 */
export class ActorSystem {
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly #actors = new Map<string, ActorEntry>();
  readonly #observers = new Set<InspectionObserver>();
  readonly #attached = new Map<string, Subscription>();
  #observerFailures = 0;
  /** Who waits for which actor to be unregistered. */
  readonly #gone = new Map<string, (() => void)[]>();

  constructor(options: ActorSystemOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.ids = options.ids ?? defaultIdSource;
  }

  /** Number of live registered actors. */
  get size(): number {
    return this.#actors.size;
  }

  /** Exceptions thrown by inspection observers so far (they never reach the actors). */
  get observerFailures(): number {
    return this.#observerFailures;
  }

  /** Registers a started actor under its id. */
  register(entry: ActorEntry): void {
    this.#actors.set(entry.id, entry);
    if (this.#observers.size > 0) {
      this.#attach(entry);
      this.#notify({
        type: 'actor.registered',
        actorId: entry.id,
        kind: entry.kind,
        name: entry.name,
      });
    }
  }

  /** Removes an actor from the registry (it is not stopped). */
  unregister(id: string): void {
    const entry = this.#actors.get(id);
    if (!entry) return;
    this.#actors.delete(id);
    if (this.#gone.size > 0) {
      for (const resolve of this.#gone.get(id) ?? []) resolve();
      this.#gone.delete(id);
    }
    this.#attached.get(id)?.unsubscribe();
    this.#attached.delete(id);
    if (this.#observers.size > 0) {
      this.#notify({ type: 'actor.unregistered', actorId: id, kind: entry.kind, name: entry.name });
    }
  }

  /** The actor with that id, if registered. */
  get(id: string): ActorEntry | undefined {
    return this.#actors.get(id);
  }

  /** Registered actors, optionally of one kind. */
  list(kind?: ActorKind): ActorEntry[] {
    const all = [...this.#actors.values()];
    return kind ? all.filter((e) => e.kind === kind) : all;
  }

  /** Resolves once the actor `id` is unregistered (at once if it is not registered). */
  whenUnregistered(id: string): Promise<void> {
    if (!this.#actors.has(id)) return Promise.resolve();
    return new Promise((resolve) => {
      const waiting = this.#gone.get(id);
      if (waiting) waiting.push(resolve);
      else this.#gone.set(id, [resolve]);
    });
  }

  /** Reports an actor failure to the observers. */
  reportFailure(actorId: string, error: unknown): void {
    if (this.#observers.size > 0) this.#notify({ type: 'actor.failed', actorId, error });
  }

  /**
   * Subscribes to every registration, message, state change and failure of every actor of
   * this system. Returns the unsubscribe function.
   *
   * @example
   * const stop = runtime.system.inspect((e) => { if (e.type === 'actor.event') console.log(e.actorId, e.event.type); });
   */
  inspect(observer: InspectionObserver): () => void {
    const first = this.#observers.size === 0;
    this.#observers.add(observer);
    if (first) for (const entry of this.#actors.values()) this.#attach(entry);
    return () => {
      this.#observers.delete(observer);
      if (this.#observers.size === 0) {
        for (const sub of this.#attached.values()) sub.unsubscribe();
        this.#attached.clear();
      }
    };
  }

  #attach(entry: ActorEntry): void {
    if (this.#attached.has(entry.id)) return;
    const { ref } = entry;
    if (ref instanceof StepLifecycle) {
      const unobserve = ref.observe((o) => {
        if (o.type === 'message') {
          this.#notify({ type: 'actor.event', actorId: entry.id, event: o.message });
        } else {
          const { value, status } = o.snapshot;
          this.#notify({ type: 'actor.snapshot', actorId: entry.id, value, status });
        }
      });
      this.#attached.set(entry.id, { unsubscribe: unobserve });
      return;
    }
    const sub = ref.system.inspect((ev: XStateInspectionEvent) => {
      if (ev.actorRef !== ref) return;
      if (ev.type === '@xstate.event') {
        this.#notify({ type: 'actor.event', actorId: entry.id, event: ev.event });
      } else if (ev.type === '@xstate.snapshot') {
        const snap = ev.snapshot as { value?: unknown; status: string };
        this.#notify({
          type: 'actor.snapshot',
          actorId: entry.id,
          value: snap.value,
          status: snap.status,
        });
      }
    });
    this.#attached.set(entry.id, sub);
  }

  #notify(event: InspectionEvent): void {
    for (const observer of this.#observers) {
      try {
        observer(event);
      } catch {
        this.#observerFailures++;
      }
    }
  }
}
