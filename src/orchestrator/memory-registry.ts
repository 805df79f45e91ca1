/**
 * @module The registry in a Map, for tests and a single process that needs nothing to
 * outlive it. Entries go when the process does; use `createSqliteRegistry` to keep them.
 */
import { systemClock, type Clock } from '../context/clock.js';
import { settle } from '../store/sqlite/sqlite-turn-commit.js';
import {
  checkEntryCall,
  checkEntryKind,
  checkEntryPatch,
  checkNewEntry,
  compareEntries,
  copyEntry,
  entryNotFound,
  entryTaken,
  isDiscoverable,
  newRegistryEntry,
  nowIso,
  patchEntry,
} from './registry-entries.js';
import {
  countCall,
  ENTRY_KINDS,
  type EntryCall,
  type EntryKind,
  type EntryPatch,
  type NewEntry,
  type Registry,
  type RegistryEntry,
} from './registry.js';

/** Options of {@link createMemoryRegistry}. */
export interface MemoryRegistryOptions {
  /** The time of `registeredAt` and `updatedAt`. Default {@link systemClock}. */
  readonly clock?: Clock;
}

/** The key of an entry in the map: kind and name cannot run into each other. */
const keyOf = (kind: EntryKind, name: string): string => `${kind}\u0000${name}`;

/**
 * A {@link Registry} held in memory. Every entry it hands out is a copy: changing one never
 * changes what it stores. Use {@link createMemoryRegistry} to make one.
 */
export class MemoryRegistry implements Registry {
  readonly #clock: Clock;
  readonly #entries = new Map<string, RegistryEntry>();

  constructor(options: MemoryRegistryOptions = {}) {
    this.#clock = options.clock ?? systemClock;
  }

  register(entry: NewEntry): Promise<RegistryEntry> {
    return settle(() => {
      checkNewEntry('Registry.register', entry);
      const key = keyOf(entry.kind, entry.name);
      if (this.#entries.has(key)) throw entryTaken(entry);
      const stored = newRegistryEntry(entry, nowIso(this.#clock));
      this.#entries.set(key, stored);
      return copyEntry(stored);
    });
  }

  ensure(entry: NewEntry): Promise<RegistryEntry> {
    return settle(() => {
      checkNewEntry('Registry.ensure', entry);
      const key = keyOf(entry.kind, entry.name);
      let stored = this.#entries.get(key);
      if (!stored) {
        stored = newRegistryEntry(entry, nowIso(this.#clock));
        this.#entries.set(key, stored);
      }
      return copyEntry(stored);
    });
  }

  discover(kind?: EntryKind): Promise<RegistryEntry[]> {
    return settle(() => {
      if (kind !== undefined) checkEntryKind('Registry.discover', kind);
      return this.#sorted((e) => (kind === undefined || e.kind === kind) && isDiscoverable(e));
    });
  }

  list(): Promise<RegistryEntry[]> {
    return settle(() => this.#sorted(() => true));
  }

  resolve(name: string, kind?: EntryKind): Promise<RegistryEntry | null> {
    return settle(() => {
      if (kind !== undefined) checkEntryKind('Registry.resolve', kind);
      for (const k of kind === undefined ? ENTRY_KINDS : [kind]) {
        const stored = this.#entries.get(keyOf(k, name));
        if (stored) return copyEntry(stored);
      }
      return null;
    });
  }

  update(name: string, kind: EntryKind, patch: EntryPatch): Promise<RegistryEntry> {
    return settle(() => {
      checkEntryKind('Registry.update', kind);
      checkEntryPatch('Registry.update', patch);
      const key = keyOf(kind, name);
      const stored = this.#entries.get(key);
      if (!stored) throw entryNotFound(name, kind);
      const updated = patchEntry(stored, patch, nowIso(this.#clock));
      this.#entries.set(key, updated);
      return copyEntry(updated);
    });
  }

  recordCall(name: string, kind: EntryKind, call: EntryCall): Promise<RegistryEntry> {
    return settle(() => {
      checkEntryKind('Registry.recordCall', kind);
      checkEntryCall('Registry.recordCall', call);
      const key = keyOf(kind, name);
      const stored = this.#entries.get(key);
      if (!stored) throw entryNotFound(name, kind);
      const updated = { ...stored, stats: countCall(stored.stats, call) };
      this.#entries.set(key, updated);
      return copyEntry(updated);
    });
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  #sorted(keep: (entry: RegistryEntry) => boolean): RegistryEntry[] {
    return [...this.#entries.values()].filter(keep).sort(compareEntries).map(copyEntry);
  }
}

/**
 * A {@link Registry} in memory.
 *
 * @example
 * const registry = createMemoryRegistry();
 * await registry.register({ name: 'billing', kind: 'agent', description: 'Invoices and refunds' });
 * await registry.discover('agent'); // [{ name: 'billing', enabled: true, health: 'healthy', ... }]
 */
export function createMemoryRegistry(options: MemoryRegistryOptions = {}): MemoryRegistry {
  return new MemoryRegistry(options);
}
