/**
 * @module The SQLite store's rows (schema 5): how runs and steps become rows and back, and
 * how a step's events become the chunks of its log (the other tables' rows are in
 * `sqlite-record-rows.ts`).
 *
 * A run's row and a step's row keep as columns what the store looks rows up by (its rowid,
 * ids, the run's flow and status, the step's run and client token); the rest of the record is
 * one JSON array, its fields in a fixed order ({@link RUN_LAYOUT}, {@link STEP_LAYOUT}): first
 * those fixed at creation, then those an update may change. Why not a column each:
 * better-sqlite3 binds every parameter through V8 (about 0.1 µs each), and a two-step run
 * bound 70 of them; now it binds 14. A field added later goes at the end of its array, and
 * the migration that adds it fills it in older rows.
 *
 * Provenance is stored as what differs from {@link emptyProvenance} (`{}` for a step that made
 * no engine call) and read back whole.
 *
 * A step's log is stored in chunks: the events a transaction appends to one step are one
 * row, `(step_ref, last_seq, first_seq, events)`, `events` a JSON array of the events without
 * their `step_id` and `seq` (the chunk gives them). See `docs/concepts.md`, "The store".
 */
import {
  copyStartedOptions,
  emptyProvenance,
  type Provenance,
  type StepEvent,
} from '../../streams/events.js';
import type { PlacementDecision, RunRecord, StepRecord, WireBudgets } from '../records.js';

/** A run's row: the columns the store queries, and the rest of the run as a JSON array. */
export interface RunRow {
  run_id: string;
  flow_id: string | null;
  status: string;
  /** Its usage (schema 10): columns, so that a step's end adds to them without a read. */
  tokens_in: number;
  tokens_out: number;
  cost_usd: number;
  wall_ms: number;
  /** JSON array of the run's fields, in {@link RUN_LAYOUT}'s order. */
  record: string;
}

/**
 * A step's row as the store reads it (joined with its run's id: the row itself refers to its
 * run by the run's rowid), and the rest of the step as a JSON array.
 */
export interface StepRow {
  step_id: string;
  run_id: string;
  client_token: string | null;
  /** JSON array of the step's fields, in {@link STEP_LAYOUT}'s order. */
  record: string;
}

/**
 * One chunk of a step's log: the events `first_seq` … `last_seq` (its first chunk is in the
 * step's own row: schema 10).
 */
export interface ChunkRow {
  first_seq: number;
  /** JSON array of the events, each without `step_id` and `seq`. */
  events: string;
}

/** The columns of a run's row, in the order its insert binds them. */
const RUN_COLUMNS = [
  'run_ref',
  'run_id',
  'flow_id',
  'status',
  'user_id',
  'entry',
  'tokens_in',
  'tokens_out',
  'cost_usd',
  'wall_ms',
  'record',
] as const;
/** A run's usage columns, in {@link RUN_COLUMNS}' order. */
const USAGE_COLUMNS = ['tokens_in', 'tokens_out', 'cost_usd', 'wall_ms'] as const;
/**
 * The columns of a step's row, in the order its insert binds them: `log` and `log_last` are
 * its log's first chunk (the events of the transaction that inserts it), or null and 0.
 */
export const STEP_COLUMNS = [
  'step_ref',
  'step_id',
  'run_ref',
  'client_token',
  'record',
  'log',
  'log_last',
] as const;
/** The columns of a chunk of a step's log, in the order its insert binds them. */
export const CHUNK_COLUMNS = ['step_ref', 'last_seq', 'first_seq', 'events'] as const;

/**
 * How a table's rows are laid out: its columns, and the fields of its `record` array — first
 * those fixed at creation, then those an update may change. Never reorder a record's fields:
 * a field added later goes at the end.
 */
export interface RowLayout {
  readonly table: 'runs' | 'steps';
  /** The column a row is found by. */
  readonly id: 'run_id' | 'step_id';
  /** The insert's columns, in the order it binds them; `record` last. */
  readonly columns: readonly string[];
  /** Columns an update may set (a run's status). */
  readonly patchableColumns: readonly string[];
  /** The fields of `record`, in order. */
  readonly fields: readonly string[];
  /** How many of {@link fields} are fixed at creation; an update may set those after. */
  readonly fixed: number;
}

const RUN_FIELDS = [
  'mode',
  'seed',
  'budgets',
  'entry',
  'trace_id',
  'user_id',
  'created_at',
  'policy',
  'pool_policy',
  'fs_policy',
  'replay_of',
  'cancel_on_disconnect',
  // Kept in its place, as null, since schema 10: the usage is columns.
  'budget_usage',
  'provenance',
  'ended_at',
] as const satisfies readonly (keyof RunRecord)[];

const STEP_FIELDS = [
  'type',
  'name',
  'parent_step_id',
  'actor_path',
  'input',
  'placement',
  'created_at',
  'budgets',
  'status',
  'budget_usage',
  'provenance',
  'output',
  'error',
  'started_at',
  'ended_at',
  // Added by migration 6; set at creation, never patched.
  'placement_decision',
  // Set with the step's end; a row written before has none (`json_set` appends it).
  'first_token_at',
] as const satisfies readonly (keyof StepRecord)[];

/** A run's row; `RunPatch`'s fields but the status (a column) are its changing ones. */
export const RUN_LAYOUT: RowLayout = {
  table: 'runs',
  id: 'run_id',
  columns: RUN_COLUMNS,
  patchableColumns: ['status', ...USAGE_COLUMNS],
  fields: RUN_FIELDS,
  fixed: RUN_FIELDS.indexOf('budget_usage'),
};

/** A step's row; `StepPatch`'s fields are its changing ones. */
export const STEP_LAYOUT: RowLayout = {
  table: 'steps',
  id: 'step_id',
  columns: STEP_COLUMNS,
  patchableColumns: [],
  fields: STEP_FIELDS,
  fixed: STEP_FIELDS.indexOf('status'),
};

/** What a patch sets: columns by name, changing fields by their index among the changing. */
export interface SplitPatch {
  readonly columns: readonly (readonly [name: string, value: unknown])[];
  readonly fields: readonly (readonly [index: number, name: string, value: unknown])[];
}

/**
 * The defined entries of `patch` as `layout` stores them. A key that is neither a patchable
 * column nor a changing field is a `TypeError`, before anything is set.
 */
export function splitPatch(layout: RowLayout, patch: object): SplitPatch {
  const columns: (readonly [string, unknown])[] = [];
  const fields: (readonly [number, string, unknown])[] = [];
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    if (key === 'budget_usage' && layout.table === 'runs') {
      // A run's usage is its columns.
      const usage = value as RunRecord['budget_usage'];
      for (const name of USAGE_COLUMNS) columns.push([name, usage[name]]);
      continue;
    }
    if (layout.patchableColumns.includes(key)) {
      columns.push([key, value]);
      continue;
    }
    const at = layout.fields.indexOf(key);
    if (at < layout.fixed) throw new TypeError(`no field ${key} of ${layout.table} to patch`);
    fields.push([at - layout.fixed, key, value]);
  }
  return { columns, fields };
}

const EMPTY_PROVENANCE: Readonly<Record<string, unknown>> = Object.freeze(emptyProvenance());
const NO_FIELDS: Readonly<Record<string, never>> = Object.freeze({});

/** A provenance as stored: the fields that differ from the empty provenance (often none). */
export function storedProvenance(p: Provenance): Readonly<Record<string, unknown>> {
  let out: Record<string, unknown> | null = null;
  for (const key of Object.keys(p)) {
    const value = (p as Record<string, unknown>)[key];
    if (value !== EMPTY_PROVENANCE[key]) (out ??= {})[key] = value;
  }
  return out ?? NO_FIELDS;
}

/** A stored provenance made whole again (`null` stays `null`). */
export function provenanceFrom(stored: unknown): Provenance | null {
  if (stored === null || stored === undefined) return null;
  return { ...EMPTY_PROVENANCE, ...stored } as Provenance;
}

/** JSON text of a value (`undefined` as null). */
export function json(value: unknown): string {
  return JSON.stringify(value ?? null);
}

export function parse(text: string | null): unknown {
  return text === null ? null : JSON.parse(text);
}

/** The JSON text a record field is stored as: provenance compacted, the rest as it is. */
export function fieldJson(field: string, value: unknown): string {
  return field === 'provenance' && value !== null && value !== undefined
    ? JSON.stringify(storedProvenance(value as Provenance))
    : json(value);
}

/**
 * A run's or step's row as the store holds it until it is written: its id, its column
 * values (in the order of {@link RUN_COLUMNS} or {@link STEP_COLUMNS}, less the record), the
 * JSON text of its fixed fields (one `JSON.stringify`, without the brackets), and the JSON
 * text of each field that may change.
 */
export interface RowParts {
  readonly id: string;
  /** A step's: its run's id (its row refers to the run by rowid). */
  readonly runId?: string;
  readonly columns: (string | number | null)[];
  readonly fixed: string;
  readonly changing: string[];
}

/** The JSON texts of `record`'s changing fields. */
function changingTexts(record: object, layout: RowLayout): string[] {
  const out: string[] = [];
  for (let i = layout.fixed; i < layout.fields.length; i++) {
    const f = layout.fields[i] as string;
    // A run's usage is kept in its columns; its field stays, null.
    if (f === 'budget_usage' && layout.table === 'runs') out.push('null');
    else out.push(fieldJson(f, (record as Record<string, unknown>)[f]));
  }
  return out;
}

/** The record text of a row's parts. */
export function recordText(row: RowParts): string {
  return `[${row.fixed},${row.changing.join(',')}]`;
}

/** A run as its row's parts (see {@link RUN_LAYOUT}), with its rowid. */
export function runRow(r: RunRecord, ref: number): RowParts {
  // The fixed fields, in RUN_LAYOUT's order: one stringify, no loop over names.
  const fixed = JSON.stringify([
    r.mode,
    r.seed,
    r.budgets,
    r.entry,
    r.trace_id,
    r.user_id,
    r.created_at,
    r.policy,
    r.pool_policy,
    r.fs_policy,
    r.replay_of,
    r.cancel_on_disconnect,
  ]);
  return {
    id: r.run_id,
    // The user and entry are columns too (as well as in the record): listings' indexes.
    columns: [
      ref,
      r.run_id,
      r.flow_id,
      r.status,
      r.user_id,
      r.entry,
      r.budget_usage.tokens_in,
      r.budget_usage.tokens_out,
      r.budget_usage.cost_usd,
      r.budget_usage.wall_ms,
    ],
    fixed: fixed.slice(1, -1),
    changing: changingTexts(r, RUN_LAYOUT),
  };
}

/** A step as its row's parts (see {@link STEP_LAYOUT}), with its rowid and its run's. */
export function stepRow(s: StepRecord, ref: number, runRef: number): RowParts {
  // The fixed fields, in STEP_LAYOUT's order: one stringify, no loop over names.
  const fixed = JSON.stringify([
    s.type,
    s.name,
    s.parent_step_id,
    s.actor_path,
    s.input ?? null,
    s.placement,
    s.created_at,
    s.budgets,
  ]);
  return {
    id: s.step_id,
    runId: s.run_id,
    columns: [ref, s.step_id, runRef, s.client_token],
    fixed: fixed.slice(1, -1),
    changing: changingTexts(s, STEP_LAYOUT),
  };
}

/** A held run's row as a read of the table would give it. */
export function heldRunRow(row: RowParts): RunRow {
  // RUN_COLUMNS: run_ref, run_id, flow_id, status, user_id, entry, the usage's four.
  return {
    run_id: row.columns[1] as string,
    flow_id: row.columns[2] as string | null,
    status: row.columns[3] as string,
    tokens_in: row.columns[6] as number,
    tokens_out: row.columns[7] as number,
    cost_usd: row.columns[8] as number,
    wall_ms: row.columns[9] as number,
    record: recordText(row),
  };
}

/** A held step's row as a read of the table would give it. */
export function heldStepRow(row: RowParts): StepRow {
  // STEP_COLUMNS: step_ref, step_id, run_ref, client_token.
  return {
    step_id: row.id,
    run_id: row.runId ?? '',
    client_token: row.columns[3] as string | null,
    record: recordText(row),
  };
}

/** A run from its row; `f[i]` is field `i` of {@link RUN_LAYOUT}. */
export function runFromRow(r: RunRow): RunRecord {
  const f = JSON.parse(r.record) as unknown[];
  return {
    run_id: r.run_id,
    flow_id: r.flow_id,
    mode: f[0] as RunRecord['mode'],
    seed: f[1] as RunRecord['seed'],
    budgets: f[2] as RunRecord['budgets'],
    status: r.status as RunRecord['status'],
    budget_usage: {
      tokens_in: r.tokens_in,
      tokens_out: r.tokens_out,
      cost_usd: r.cost_usd,
      wall_ms: r.wall_ms,
    },
    provenance: provenanceFrom(f[13]),
    entry: f[3] as string,
    trace_id: f[4] as string,
    user_id: f[5] as string | null,
    created_at: f[6] as string,
    ended_at: f[14] as string | null,
    policy: f[7] as RunRecord['policy'],
    pool_policy: f[8] as RunRecord['pool_policy'],
    fs_policy: f[9] as RunRecord['fs_policy'],
    replay_of: f[10] as string | null,
    cancel_on_disconnect: f[11] === true,
  };
}

/** A step from its row; `f[i]` is field `i` of {@link STEP_LAYOUT}. */
export function stepFromRow(r: StepRow): StepRecord {
  const f = JSON.parse(r.record) as unknown[];
  return {
    step_id: r.step_id,
    run_id: r.run_id,
    type: f[0] as StepRecord['type'],
    name: f[1] as string,
    parent_step_id: f[2] as string | null,
    actor_path: f[3] as StepRecord['actor_path'],
    client_token: r.client_token,
    input: f[4],
    placement: f[5] as string,
    status: f[8] as StepRecord['status'],
    budget_usage: f[9] as StepRecord['budget_usage'],
    provenance: provenanceFrom(f[10]),
    output: f[11],
    error: f[12] as StepRecord['error'],
    created_at: f[6] as string,
    started_at: f[13] as string | null,
    ended_at: f[14] as string | null,
    budgets: f[7] as WireBudgets,
    placement_decision: (f[15] ?? null) as PlacementDecision | null,
    first_token_at: (f[16] ?? null) as string | null,
  };
}

/**
 * An event as a log chunk keeps it, as JSON: without `step_id` and `seq`, provenance
 * compacted. The frequent types field by field (no loops over keys on the hot path).
 */
export function storedEventJson(e: StepEvent): string {
  switch (e.type) {
    case 'token':
      return JSON.stringify({ type: 'token', ts: e.ts, t: e.t, i: e.i });
    case 'started': {
      const started: {
        type: 'started';
        ts: number;
        provenance: Readonly<Record<string, unknown>>;
        pool_id?: string;
        replica_id?: string;
        queue_position?: number;
      } = { type: 'started', ts: e.ts, provenance: storedProvenance(e.provenance) };
      copyStartedOptions(started, e);
      return JSON.stringify(started);
    }
    case 'end':
      return JSON.stringify({
        type: 'end',
        ts: e.ts,
        output: e.output,
        budget_usage: e.budget_usage,
        provenance: storedProvenance(e.provenance),
      });
    default: {
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(e)) {
        if (key !== 'step_id' && key !== 'seq') out[key] = (e as Record<string, unknown>)[key];
      }
      return JSON.stringify(out);
    }
  }
}

/**
 * The events of a chunk with `seq > afterSeq`, made whole again: `type`, `step_id`, `seq`
 * first, then the stored fields in their order.
 */
export function eventsFromChunk(
  stepId: string,
  chunk: ChunkRow,
  afterSeq: number,
  into: StepEvent[],
): void {
  const stored = JSON.parse(chunk.events) as Record<string, unknown>[];
  for (let k = 0; k < stored.length; k++) {
    const seq = chunk.first_seq + k;
    if (seq <= afterSeq) continue;
    const s = stored[k] ?? {};
    const event: Record<string, unknown> = { type: s['type'], step_id: stepId, seq };
    for (const key of Object.keys(s)) {
      if (key === 'type') continue;
      event[key] =
        key === 'provenance' && (s['type'] === 'started' || s['type'] === 'end')
          ? provenanceFrom(s[key])
          : s[key];
    }
    into.push(event as StepEvent);
  }
}
