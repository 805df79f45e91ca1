/**
 * @module How the Redis store keeps a record: a hash of its fields, each value as JSON (a
 * step's hash holds its log too: see `redis-step-scripts.ts`); which ids may be part of a
 * key; and what the script's refusal of an append means.
 */
import { ConflictError } from '../../errors/conflict-error.js';
import { NotFoundError } from '../../errors/not-found-error.js';
import type { RunRecord, StepRecord } from '../records.js';

/** Each field of a step's record, once: the compiler says which is missing or unknown. */
const STEP_FIELD_SET: Record<keyof StepRecord, true> = {
  step_id: true,
  run_id: true,
  type: true,
  name: true,
  parent_step_id: true,
  actor_path: true,
  client_token: true,
  input: true,
  placement: true,
  status: true,
  budget_usage: true,
  provenance: true,
  output: true,
  error: true,
  created_at: true,
  started_at: true,
  ended_at: true,
  budgets: true,
  placement_decision: true,
  first_token_at: true,
};

/**
 * The fields of a step's record, in the order its hash is read (`HMGET`): the hash holds
 * its log and its watchers besides them.
 */
export const STEP_FIELDS = Object.keys(STEP_FIELD_SET) as readonly (keyof StepRecord)[];

/** A record as hash fields: each value as JSON. */
export function toFields(record: object): string[] {
  const out: string[] = [];
  for (const [key, value] of Object.entries(record)) {
    if (value !== undefined) out.push(key, JSON.stringify(value));
  }
  return out;
}

/**
 * Whether `id` can be one part of a key: no `:` (which would reach another record's key —
 * `run:<id>:steps` read as a run), no `{`/`}` (a cluster hash tag), at most 256 characters.
 * The getters answer `null` for any other, as for an id that does not exist.
 */
export function keyPart(id: string): boolean {
  return id.length > 0 && id.length <= 256 && !/[:{}]/.test(id);
}

/** A record from its hash fields; `null` for an empty hash (no such key). */
export function fromFields(hash: Record<string, string>): Record<string, unknown> | null {
  const keys = Object.keys(hash);
  if (keys.length === 0) return null;
  const out: Record<string, unknown> = {};
  for (const key of keys) out[key] = JSON.parse(hash[key] ?? 'null');
  return out;
}

/** A record from a hash read flat (`[field, value, …]`), or `null` for an empty one. */
export function fromFlat(flat: unknown): Record<string, unknown> | null {
  const pairs = Array.isArray(flat) ? (flat as string[]) : [];
  const hash: Record<string, string> = {};
  for (let i = 0; i + 1 < pairs.length; i += 2) hash[pairs[i] as string] = pairs[i + 1] as string;
  return fromFields(hash);
}

/** A stored run as its record (the hash holds exactly the record's fields). */
export function asRun(fields: Record<string, unknown> | null): RunRecord | null {
  return fields as RunRecord | null;
}

/**
 * A stored step as its record (a step stored before steps kept their budgets, or their
 * placement decision, has none).
 */
export function asStep(fields: Record<string, unknown> | null): StepRecord | null {
  if (fields && fields['budgets'] === undefined) fields['budgets'] = {};
  if (fields && fields['placement_decision'] === undefined) fields['placement_decision'] = null;
  if (fields && fields['first_token_at'] === undefined) fields['first_token_at'] = null;
  return fields as StepRecord | null;
}

/**
 * What an append's reply means (see `Op.append`): nothing when it was made; else
 * `NotFoundError` for a missing step, `ConflictError` for a seq that does not continue its
 * log. `stepIds` are the steps of the append, in the order of its keys.
 */
export function throwIfRefused(r: readonly (string | number)[], stepIds: readonly string[]): void {
  if (r[0] === 'ok') return;
  const stepId = stepIds[Number(r[1]) - 1] ?? '?';
  if (r[0] === 'missing') throw new NotFoundError('step', stepId);
  const expected = Number(r[2]);
  const got = Number(r[3]);
  throw new ConflictError(`step ${stepId}: expected seq ${expected}, got ${got}`, {
    details: { step_id: stepId, expected, got },
  });
}
