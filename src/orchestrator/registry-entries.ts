/**
 * @module What every registry does the same way with entries: checking what it is
 * given (a `TypeError` naming the field), building a new entry with its defaults, applying a
 * patch, ordering entries, copying them out, and the errors of a taken or unknown entry.
 */
import { isoTime, type Clock } from '../context/clock.js';
import { ConflictError } from '../errors/conflict-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import { deepCopy } from '../store/deep-copy.js';
import {
  ENTRY_KINDS,
  NO_CALLS,
  type EntryCall,
  type EntryHealth,
  type EntryKind,
  type EntryPatch,
  type NewEntry,
  type RegistryEntry,
} from './registry.js';

/** The healths an entry may have. */
const ENTRY_HEALTHS: readonly EntryHealth[] = ['healthy', 'degraded', 'unavailable'];

/** `value` as a short quoted text for an error message. */
function shown(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || value == null)
    return String(value);
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}

function isPlainRecord(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** True when `value` is one of {@link ENTRY_KINDS}. */
export function isEntryKind(value: unknown): value is EntryKind {
  return ENTRY_KINDS.includes(value as EntryKind);
}

/**
 * Throws a `TypeError` unless `kind` is one of {@link ENTRY_KINDS}.
 * `where` names the caller in the message (`Registry.discover`).
 */
export function checkEntryKind(where: string, kind: unknown): asserts kind is EntryKind {
  if (!isEntryKind(kind)) {
    throw new TypeError(
      `${where}: kind must be one of ${ENTRY_KINDS.join(', ')}, got ${shown(kind)}`,
    );
  }
}

/** Throws a `TypeError` naming the field unless `patch`'s fields that are set are valid. */
export function checkEntryPatch(where: string, patch: EntryPatch): void {
  if (!isPlainRecord(patch))
    throw new TypeError(`${where}: patch must be an object, got ${shown(patch)}`);
  if (patch.description !== undefined && typeof patch.description !== 'string') {
    throw new TypeError(`${where}: description must be a string, got ${shown(patch.description)}`);
  }
  if (patch.schema !== undefined && patch.schema !== null && !isPlainRecord(patch.schema)) {
    throw new TypeError(
      `${where}: schema must be a JSON Schema object or null, got ${shown(patch.schema)}`,
    );
  }
  if (patch.metadata !== undefined && !isPlainRecord(patch.metadata)) {
    throw new TypeError(`${where}: metadata must be an object, got ${shown(patch.metadata)}`);
  }
  if (patch.enabled !== undefined && typeof patch.enabled !== 'boolean') {
    throw new TypeError(`${where}: enabled must be a boolean, got ${shown(patch.enabled)}`);
  }
  if (patch.health !== undefined && !ENTRY_HEALTHS.includes(patch.health)) {
    throw new TypeError(
      `${where}: health must be one of ${ENTRY_HEALTHS.join(', ')}, got ${shown(patch.health)}`,
    );
  }
}

/**
 * Throws a `TypeError` naming the field unless `entry` is a valid {@link NewEntry}: a
 * non-empty string `name`, a `kind` of {@link ENTRY_KINDS}, a string `description`, and
 * valid optional fields.
 *
 * @example
 * checkNewEntry('Registry.register', { name: '', kind: 'agent', description: '' });
 * // TypeError: Registry.register: name must be a non-empty string, got ""
 */
export function checkNewEntry(where: string, entry: NewEntry): void {
  if (!isPlainRecord(entry))
    throw new TypeError(`${where}: entry must be an object, got ${shown(entry)}`);
  if (typeof entry.name !== 'string' || entry.name === '') {
    throw new TypeError(`${where}: name must be a non-empty string, got ${shown(entry.name)}`);
  }
  checkEntryKind(where, entry.kind);
  if (typeof entry.description !== 'string') {
    throw new TypeError(`${where}: description must be a string, got ${shown(entry.description)}`);
  }
  checkEntryPatch(where, entry);
}

/** Throws a `TypeError` (or a `RangeError` for a bad duration) unless `call` is valid. */
export function checkEntryCall(where: string, call: EntryCall): void {
  if (!isPlainRecord(call))
    throw new TypeError(`${where}: call must be an object, got ${shown(call)}`);
  if (typeof call.ok !== 'boolean') {
    throw new TypeError(`${where}: call.ok must be a boolean, got ${shown(call.ok)}`);
  }
  if (
    typeof call.durationMs !== 'number' ||
    !(Number.isFinite(call.durationMs) && call.durationMs >= 0)
  ) {
    throw new RangeError(
      `${where}: call.durationMs must be a finite number >= 0, got ${shown(call.durationMs)}`,
    );
  }
  if (typeof call.at !== 'string') {
    throw new TypeError(`${where}: call.at must be an ISO time string, got ${shown(call.at)}`);
  }
}

/** The clock's time as an ISO string, the form of `registeredAt` and `updatedAt`. */
export function nowIso(clock: Clock): string {
  return isoTime(clock.now());
}

/**
 * A new entry from what `register` took, its optional fields defaulted (`schema` `null`,
 * `metadata` `{}`, enabled, healthy, never called), registered and updated at `now`.
 * Schema and metadata are copied: changing the caller's objects later changes nothing stored.
 */
export function newRegistryEntry(entry: NewEntry, now: string): RegistryEntry {
  return {
    name: entry.name,
    kind: entry.kind,
    description: entry.description,
    schema: entry.schema == null ? null : deepCopy(entry.schema),
    metadata: entry.metadata === undefined ? {} : deepCopy(entry.metadata),
    enabled: entry.enabled ?? true,
    health: entry.health ?? 'healthy',
    stats: { ...NO_CALLS },
    registeredAt: now,
    updatedAt: now,
  };
}

/** `entry` with the fields `patch` sets (an `undefined` one is not set), updated at `now`. */
export function patchEntry(entry: RegistryEntry, patch: EntryPatch, now: string): RegistryEntry {
  return {
    ...entry,
    description: patch.description ?? entry.description,
    schema: patch.schema === undefined ? entry.schema : deepCopy(patch.schema),
    metadata: patch.metadata === undefined ? entry.metadata : deepCopy(patch.metadata),
    enabled: patch.enabled ?? entry.enabled,
    health: patch.health ?? entry.health,
    updatedAt: now,
  };
}

/**
 * The order of `list` and `discover`: by kind, in {@link ENTRY_KINDS} order, then by name
 * (UTF-16 code units, as `<` compares strings: the same in every registry and locale).
 */
export function compareEntries(a: RegistryEntry, b: RegistryEntry): number {
  const byKind = ENTRY_KINDS.indexOf(a.kind) - ENTRY_KINDS.indexOf(b.kind);
  if (byKind !== 0) return byKind;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/** A deep copy of `entry`: what a registry hands out, so callers cannot change what it stores. */
export function copyEntry(entry: RegistryEntry): RegistryEntry {
  return deepCopy(entry);
}

/** Whether `discover` shows `entry`: enabled and not `unavailable`. */
export function isDiscoverable(entry: RegistryEntry): boolean {
  return entry.enabled && entry.health !== 'unavailable';
}

/** The `ConflictError` of a `register` whose `(kind, name)` is taken. */
export function entryTaken(entry: NewEntry): ConflictError {
  return new ConflictError(`registry ${entry.kind} "${entry.name}" is already registered`, {
    details: { kind: entry.kind, name: entry.name },
  });
}

/** The `NotFoundError` of an unknown `(kind, name)`; `details.entryKind` says which kind. */
export function entryNotFound(name: string, kind: EntryKind): NotFoundError {
  return new NotFoundError('registry entry', name, { details: { entryKind: kind } });
}
