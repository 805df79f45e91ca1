/**
 * @module The table of awake actors (issue 46): the activations in memory, least recently used
 * first, woken from the store on demand (one activation per actor in a process, however many
 * messages come at once), and passivated — taken out of memory — once idle for their agent's
 * `idleMs`, or when more than `maxAwake` are awake. An asleep actor holds nothing here.
 */
import type { DurableAgentDefinition } from '../actors/durable-agent.js';
import type { ActorRecord } from '../store/actor-records.js';
import type { Activation } from './activation.js';

/** Options of {@link AwakeActors}. */
export interface AwakeOptions {
  /** Actors awake at most; past it the least recently used idle ones sleep. Default 100 000. */
  readonly maxAwake?: number;
}

/** Default of {@link AwakeOptions.maxAwake}. */
export const DEFAULT_MAX_AWAKE = 100_000;

/** See the module. */
export class AwakeActors {
  readonly maxAwake: number;
  /** Activations by actor id; iteration order is least recently used first. */
  readonly #awake = new Map<string, Activation>();
  /** Wake-ups in flight, so that concurrent messages to one asleep actor wake it once. */
  readonly #waking = new Map<string, Promise<Activation | null>>();
  readonly #make: (def: DurableAgentDefinition, record: ActorRecord) => Activation;

  constructor(
    make: (def: DurableAgentDefinition, record: ActorRecord) => Activation,
    options: AwakeOptions = {},
  ) {
    const maxAwake = options.maxAwake ?? DEFAULT_MAX_AWAKE;
    if (!Number.isInteger(maxAwake) || maxAwake < 1) {
      throw new RangeError(
        `createRuntime: durable.maxAwake must be an integer >= 1, got ${maxAwake}`,
      );
    }
    this.maxAwake = maxAwake;
    this.#make = make;
  }

  get size(): number {
    return this.#awake.size;
  }

  /** The activation of an awake actor (marked used), or `undefined`. */
  get(actorId: string): Activation | undefined {
    const found = this.#awake.get(actorId);
    if (found) {
      // Most recently used goes last.
      this.#awake.delete(actorId);
      this.#awake.set(actorId, found);
    }
    return found;
  }

  /** The activation without marking it used. */
  peek(actorId: string): Activation | undefined {
    return this.#awake.get(actorId);
  }

  /**
   * The actor's activation, woken with the record `read` gives when it is asleep (`null`
   * when there is no such actor). Concurrent calls for one actor share one wake-up.
   */
  async wake(
    actorId: string,
    def: DurableAgentDefinition,
    read: () => Promise<ActorRecord | null>,
  ): Promise<Activation | null> {
    const awake = this.get(actorId);
    if (awake) return awake;
    let waking = this.#waking.get(actorId);
    if (!waking) {
      waking = read()
        .then((record) => {
          if (!record) return null;
          const again = this.#awake.get(actorId);
          if (again) return again;
          const activation = this.#make(def, record);
          this.#awake.set(actorId, activation);
          this.#trim();
          return activation;
        })
        .finally(() => this.#waking.delete(actorId));
      this.#waking.set(actorId, waking);
    }
    return waking;
  }

  /** Takes `activation` out of memory (if it is the actor's current one). */
  remove(activation: Pick<Activation, 'actor' | 'gone'>): void {
    activation.gone = true;
    if (this.#awake.get(activation.actor.actor_id) === activation) {
      this.#awake.delete(activation.actor.actor_id);
    }
  }

  /** Puts to sleep the activations idle for their agent's `idleMs` at `now`; how many slept. */
  sweep(now: number): number {
    let slept = 0;
    for (const activation of [...this.#awake.values()]) {
      if (!activation.busy && now - activation.lastUsed >= activation.def.durable.idleMs) {
        this.remove(activation);
        slept++;
      }
    }
    return slept;
  }

  /** Puts every idle activation to sleep now; how many slept. */
  sleepIdle(): number {
    let slept = 0;
    for (const activation of [...this.#awake.values()]) {
      if (activation.busy) continue;
      this.remove(activation);
      slept++;
    }
    return slept;
  }

  /** Past `maxAwake`, the least recently used idle activations sleep. */
  #trim(): void {
    if (this.#awake.size <= this.maxAwake) return;
    for (const activation of this.#awake.values()) {
      if (this.#awake.size <= this.maxAwake) return;
      if (!activation.busy) this.remove(activation);
    }
  }

  /** Every activation, least recently used first. */
  all(): Activation[] {
    return [...this.#awake.values()];
  }

  /** Resolves once the busy activations have drained, or after `ms`, whichever is first. */
  async drainBusy(ms: number): Promise<void> {
    const busy = this.all().filter((a) => a.busy);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(busy.map((a) => a.drain())),
      new Promise((resolve) => {
        timer = setTimeout(resolve, ms);
      }),
    ]);
    clearTimeout(timer);
  }

  clear(): void {
    for (const activation of this.all()) this.remove(activation);
  }
}
