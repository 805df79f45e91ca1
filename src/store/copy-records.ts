/**
 * @module Copies of records and events by their known shapes. A store that keeps objects
 * (the memory store) copies what it is given and what it returns; copying field by field
 * builds compact objects of one shape and is several times faster than a generic deep copy,
 * which is kept for the fields whose shape the caller decides (inputs, outputs, payloads).
 *
 * Copies made to be kept ({@link KEPT}) share one frozen object for the empty budgets, the
 * provenance of a step that used nothing and the zero usage, which most agent and tool
 * steps carry: a store that
 * keeps thousands of runs keeps far fewer objects, and the garbage collector has less to
 * move. Copies handed out ({@link FRESH}) are always new, mutable objects.
 */
import type { ErrorPayload } from '../errors/to-error-payload.js';
import {
  copyStartedOptions,
  emptyProvenance,
  type Mutable,
  type BudgetUsage,
  type Provenance,
  type StepEvent,
} from '../streams/events.js';
import { deepCopy } from './deep-copy.js';
import type { RunPatch, RunRecord, StepPatch, StepRecord, WireBudgets } from './records.js';

function copyUsage(u: BudgetUsage): BudgetUsage {
  return {
    tokens_in: u.tokens_in,
    tokens_out: u.tokens_out,
    cost_usd: u.cost_usd,
    wall_ms: u.wall_ms,
  };
}

function copyProvenance(p: Provenance): Provenance {
  return {
    seed: p.seed,
    prompt_hash: p.prompt_hash,
    params_hash: p.params_hash,
    engine: p.engine,
    model_hash: p.model_hash,
    pool_id: p.pool_id,
    replica_id: p.replica_id,
    tokens_in: p.tokens_in,
    tokens_out: p.tokens_out,
    cost_usd: p.cost_usd,
    decode_time_ms: p.decode_time_ms,
    price_table: p.price_table,
  };
}

const ZERO_USAGE: BudgetUsage = Object.freeze({
  tokens_in: 0,
  tokens_out: 0,
  cost_usd: 0,
  wall_ms: 0,
});

const EMPTY_PROVENANCE: Provenance = Object.freeze(emptyProvenance());

function keepUsage(u: BudgetUsage): BudgetUsage {
  return u.tokens_in === 0 && u.tokens_out === 0 && u.cost_usd === 0 && u.wall_ms === 0
    ? ZERO_USAGE
    : copyUsage(u);
}

/** The last provenance of a step that used nothing, kept frozen to be shared. */
let placedOnly: Provenance = EMPTY_PROVENANCE;

/**
 * A provenance kept: shared with the previous one when both are of a step that used nothing
 * and made no engine call (what most agent and tool steps report: their run's seed, their
 * pool and replica), a copy otherwise.
 */
function keepProvenance(p: Provenance): Provenance {
  if (
    p.prompt_hash !== null ||
    p.params_hash !== null ||
    p.engine !== null ||
    p.model_hash !== null ||
    p.tokens_in !== 0 ||
    p.tokens_out !== 0 ||
    p.cost_usd !== 0 ||
    p.decode_time_ms !== null ||
    p.price_table !== null
  ) {
    return copyProvenance(p);
  }
  if (
    p.seed !== placedOnly.seed ||
    p.pool_id !== placedOnly.pool_id ||
    p.replica_id !== placedOnly.replica_id
  ) {
    placedOnly = Object.freeze(copyProvenance(p));
  }
  return placedOnly;
}

const EMPTY: Readonly<Record<string, never>> = Object.freeze({});

/** A plain object kept: a copy, or the one shared frozen empty object when it is empty. */
function keepObject<T extends object>(o: T): T {
  for (const _ in o) return deepCopy(o);
  return EMPTY as T;
}

/**
 * How the nested budgets, usage, provenance and settings (a run's policies) of a record or
 * event are copied.
 */
export interface NestedCopy {
  readonly budgets: (b: WireBudgets) => WireBudgets;
  readonly usage: (u: BudgetUsage) => BudgetUsage;
  readonly provenance: (p: Provenance) => Provenance;
  readonly settings: <T extends object>(o: T) => T;
}

/** For copies handed out: every object new. */
export const FRESH: NestedCopy = {
  budgets: deepCopy,
  usage: copyUsage,
  provenance: copyProvenance,
  settings: deepCopy,
};

/** For copies kept by a store: the empty values shared, frozen. */
export const KEPT: NestedCopy = {
  budgets: keepObject,
  usage: keepUsage,
  provenance: keepProvenance,
  settings: keepObject,
};

function provenanceOrNull(nested: NestedCopy, p: Provenance | null): Provenance | null {
  return p === null ? null : nested.provenance(p);
}

function copyError(e: ErrorPayload | null): ErrorPayload | null {
  return e === null ? null : deepCopy(e);
}

export function copyRunRecord(r: RunRecord, nested: NestedCopy = FRESH): RunRecord {
  return {
    run_id: r.run_id,
    flow_id: r.flow_id,
    mode: r.mode,
    seed: r.seed,
    budgets: nested.budgets(r.budgets),
    status: r.status,
    budget_usage: nested.usage(r.budget_usage),
    provenance: provenanceOrNull(nested, r.provenance),
    entry: r.entry,
    trace_id: r.trace_id,
    user_id: r.user_id,
    created_at: r.created_at,
    ended_at: r.ended_at,
    policy: nested.settings(r.policy),
    pool_policy: nested.settings(r.pool_policy),
    fs_policy: r.fs_policy === null ? null : nested.settings(r.fs_policy),
    replay_of: r.replay_of,
    cancel_on_disconnect: r.cancel_on_disconnect,
  };
}

/** `r` with `patch` applied; the patch's fields are copied, the rest shared with `r`. */
export function patchRunRecord(
  r: RunRecord,
  patch: RunPatch,
  nested: NestedCopy = KEPT,
): RunRecord {
  return {
    run_id: r.run_id,
    flow_id: r.flow_id,
    mode: r.mode,
    seed: r.seed,
    budgets: r.budgets,
    status: patch.status ?? r.status,
    budget_usage: patch.budget_usage ? nested.usage(patch.budget_usage) : r.budget_usage,
    provenance:
      patch.provenance === undefined ? r.provenance : provenanceOrNull(nested, patch.provenance),
    entry: r.entry,
    trace_id: r.trace_id,
    user_id: r.user_id,
    created_at: r.created_at,
    ended_at: patch.ended_at === undefined ? r.ended_at : patch.ended_at,
    policy: r.policy,
    pool_policy: r.pool_policy,
    fs_policy: r.fs_policy,
    replay_of: r.replay_of,
    cancel_on_disconnect: r.cancel_on_disconnect,
  };
}

export function copyStepRecord(s: StepRecord, nested: NestedCopy = FRESH): StepRecord {
  return {
    step_id: s.step_id,
    run_id: s.run_id,
    type: s.type,
    name: s.name,
    parent_step_id: s.parent_step_id,
    actor_path: s.actor_path.slice(),
    client_token: s.client_token,
    input: deepCopy(s.input),
    placement: s.placement,
    status: s.status,
    budget_usage: nested.usage(s.budget_usage),
    provenance: provenanceOrNull(nested, s.provenance),
    output: deepCopy(s.output),
    error: copyError(s.error),
    created_at: s.created_at,
    started_at: s.started_at,
    ended_at: s.ended_at,
    budgets: nested.budgets(s.budgets),
    placement_decision: s.placement_decision && { ...s.placement_decision },
    first_token_at: s.first_token_at ?? null,
  };
}

/**
 * `s` with `patch` applied, as a new record of the same shape; the patch's fields are
 * copied, the rest shared with `s` (which the store never changes).
 */
export function patchStepRecord(
  s: StepRecord,
  patch: StepPatch,
  nested: NestedCopy = KEPT,
): StepRecord {
  return {
    step_id: s.step_id,
    run_id: s.run_id,
    type: s.type,
    name: s.name,
    parent_step_id: s.parent_step_id,
    actor_path: s.actor_path,
    client_token: s.client_token,
    input: s.input,
    placement: s.placement,
    status: patch.status ?? s.status,
    budget_usage: patch.budget_usage ? nested.usage(patch.budget_usage) : s.budget_usage,
    provenance:
      patch.provenance === undefined ? s.provenance : provenanceOrNull(nested, patch.provenance),
    output: 'output' in patch ? deepCopy(patch.output) : s.output,
    error: patch.error === undefined ? s.error : copyError(patch.error),
    created_at: s.created_at,
    started_at: patch.started_at === undefined ? s.started_at : patch.started_at,
    ended_at: patch.ended_at === undefined ? s.ended_at : patch.ended_at,
    budgets: s.budgets,
    placement_decision: s.placement_decision,
    first_token_at:
      patch.first_token_at === undefined ? (s.first_token_at ?? null) : patch.first_token_at,
  };
}

/** A copy of `e`: the frequent types (token, started, end) field by field, the rest deeply. */
export function copyStepEvent(e: StepEvent, nested: NestedCopy = FRESH): StepEvent {
  switch (e.type) {
    case 'token':
      return { type: 'token', step_id: e.step_id, seq: e.seq, ts: e.ts, t: e.t, i: e.i };
    case 'started': {
      // Field by field: no spreads on this path (they are slow).
      const started: Mutable<typeof e> = {
        type: 'started',
        step_id: e.step_id,
        seq: e.seq,
        ts: e.ts,
        provenance: nested.provenance(e.provenance),
      };
      copyStartedOptions(started, e);
      return started;
    }
    case 'end':
      return {
        type: 'end',
        step_id: e.step_id,
        seq: e.seq,
        ts: e.ts,
        output: deepCopy(e.output),
        budget_usage: nested.usage(e.budget_usage),
        provenance: nested.provenance(e.provenance),
      };
    default:
      return deepCopy(e);
  }
}
