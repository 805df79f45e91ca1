/**
 * @module The registry's contract (Nerva's, REFERENCE.md): what the front door knows of the
 * agents, tools, senses and plugins it can reach — their descriptions for the router,
 * whether they are enabled, their health (fed by the circuit breakers) and their call
 * statistics. Every registry runs `test/orchestrator/registry.conformance.ts`.
 */
import type { JsonSchema } from '../tools/json-schema.js';

/** What an entry is. */
export type EntryKind = 'agent' | 'tool' | 'sense' | 'plugin';

/** The kinds, in the order `resolve` looks through them. */
export const ENTRY_KINDS: readonly EntryKind[] = ['agent', 'tool', 'sense', 'plugin'];

/** How an entry is doing: `unavailable` entries are not discovered (an open breaker). */
export type EntryHealth = 'healthy' | 'degraded' | 'unavailable';

/** Calls of an entry, as the front door saw them. */
export interface EntryStats {
  readonly calls: number;
  readonly successes: number;
  readonly failures: number;
  /** ISO time of the last call, or `null`. */
  readonly lastInvokedAt: string | null;
  /** Exponential moving average of call durations (α {@link STATS_EMA_ALPHA}); 0 before any. */
  readonly avgDurationMs: number;
}

/** The weight of the newest duration in {@link EntryStats.avgDurationMs} (Nerva's 0.2). */
export const STATS_EMA_ALPHA = 0.2;

/** One registered entry. Names are unique per kind. */
export interface RegistryEntry {
  readonly name: string;
  readonly kind: EntryKind;
  readonly description: string;
  /** Its input's JSON Schema, or `null`. */
  readonly schema: JsonSchema | null;
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly enabled: boolean;
  readonly health: EntryHealth;
  readonly stats: EntryStats;
  /** ISO times. */
  readonly registeredAt: string;
  readonly updatedAt: string;
}

/** What `register` takes: name, kind and description, the rest defaulted. */
export interface NewEntry {
  readonly name: string;
  readonly kind: EntryKind;
  readonly description: string;
  readonly schema?: JsonSchema | null;
  readonly metadata?: Readonly<Record<string, unknown>>;
  /** Default `true`. */
  readonly enabled?: boolean;
  /** Default `healthy`. */
  readonly health?: EntryHealth;
}

/** What `update` may change. */
export interface EntryPatch {
  readonly description?: string;
  readonly schema?: JsonSchema | null;
  readonly metadata?: Readonly<Record<string, unknown>>;
  readonly enabled?: boolean;
  readonly health?: EntryHealth;
}

/** One call of an entry, for its statistics. */
export interface EntryCall {
  readonly ok: boolean;
  readonly durationMs: number;
  /** ISO time the call began. */
  readonly at: string;
}

/** Where entries live. Every method is async; unknown names reject with `NotFoundError`. */
export interface Registry {
  /** Adds an entry; a taken `(kind, name)` is refused with `ConflictError`. */
  register(entry: NewEntry): Promise<RegistryEntry>;
  /** Adds the entry unless its `(kind, name)` is taken; resolves the stored one either way. */
  ensure(entry: NewEntry): Promise<RegistryEntry>;
  /** Enabled entries that are not `unavailable`, of `kind` when given, by kind then name. */
  discover(kind?: EntryKind): Promise<RegistryEntry[]>;
  /** Every entry, disabled and unavailable ones too, by kind then name. */
  list(): Promise<RegistryEntry[]>;
  /** The entry named `name` (of `kind`, else the first of {@link ENTRY_KINDS} that has it), or `null`. */
  resolve(name: string, kind?: EntryKind): Promise<RegistryEntry | null>;
  /** Applies `patch`; resolves the entry as it now is. */
  update(name: string, kind: EntryKind, patch: EntryPatch): Promise<RegistryEntry>;
  /** Counts a call in the entry's statistics; resolves the entry as it now is. */
  recordCall(name: string, kind: EntryKind, call: EntryCall): Promise<RegistryEntry>;
  /** Releases what it holds (a database handle). */
  close(): Promise<void>;
}

/** `stats` after `call` (the one rule every registry applies). */
export function countCall(stats: EntryStats, call: EntryCall): EntryStats {
  return {
    calls: stats.calls + 1,
    successes: stats.successes + (call.ok ? 1 : 0),
    failures: stats.failures + (call.ok ? 0 : 1),
    lastInvokedAt: call.at,
    avgDurationMs:
      stats.calls === 0
        ? call.durationMs
        : STATS_EMA_ALPHA * call.durationMs + (1 - STATS_EMA_ALPHA) * stats.avgDurationMs,
  };
}

/** Statistics of an entry never called. */
export const NO_CALLS: EntryStats = Object.freeze({
  calls: 0,
  successes: 0,
  failures: 0,
  lastInvokedAt: null,
  avgDurationMs: 0,
});
