/**
 * @module The circuit breakers of a runtime: one per agent, tool and engine, made on first
 * use.
 */
import type { Clock } from '../context/clock.js';
import { CircuitBreaker, type BreakerOptions } from './circuit-breaker.js';

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

  /** Stops every breaker's timer; no breaker is made after. */
  stop(): void {
    this.#stopped = true;
    for (const breakers of Object.values(this.#byKind)) {
      for (const breaker of breakers.values()) breaker.stop();
    }
  }
}
