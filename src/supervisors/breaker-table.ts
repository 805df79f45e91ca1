/**
 * @module The circuit breakers of a runtime: one per agent, tool and engine, made on first
 * use.
 */
import type { Clock } from '../context/clock.js';
import { CircuitBreaker, type BreakerOptions, type BreakerState } from './circuit-breaker.js';

/** What a breaker guards. */
export type BreakerKind = 'agent' | 'tool' | 'engine';

/** A runtime's breakers by kind and name; `options: false` turns them all off. */
export class BreakerTable {
  readonly #clock: Clock;
  readonly #options: BreakerOptions | false;
  readonly #byKind: Readonly<Record<BreakerKind, Map<string, CircuitBreaker>>> = {
    agent: new Map(),
    tool: new Map(),
    engine: new Map(),
  };

  #stopped = false;

  constructor(clock: Clock, options: BreakerOptions | false) {
    this.#clock = clock;
    this.#options = options;
  }

  /**
   * The breaker of `kind` `name` (target `kind:name`); `null` when breakers are off, or once
   * the table has stopped (a step outliving its runtime's close makes no breaker nobody
   * would stop).
   */
  get(kind: BreakerKind, name: string): CircuitBreaker | null {
    if (this.#options === false || this.#stopped) return null;
    const breakers = this.#byKind[kind];
    let breaker = breakers.get(name);
    if (!breaker) {
      breaker = new CircuitBreaker(`${kind}:${name}`, this.#clock, this.#options);
      breakers.set(name, breaker);
    }
    return breaker;
  }

  /** Every breaker made so far, by target (`kind:name`), with its state. */
  states(): { readonly target: string; readonly state: BreakerState }[] {
    const out: { target: string; state: BreakerState }[] = [];
    for (const [kind, breakers] of Object.entries(this.#byKind)) {
      for (const [name, breaker] of breakers)
        out.push({ target: `${kind}:${name}`, state: breaker.state });
    }
    return out;
  }

  /** Stops every breaker's timer; no breaker is made after. */
  stop(): void {
    this.#stopped = true;
    for (const breakers of Object.values(this.#byKind)) {
      for (const breaker of breakers.values()) breaker.stop();
    }
  }
}
