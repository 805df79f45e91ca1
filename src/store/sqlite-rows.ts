/**
 * @module The SQLite store's rows: their shapes, and how records become rows and back
 * (JSON columns as text).
 */
import type { CallRecording, FlowRecord, RunRecord, StepRecord } from './records.js';

export interface RunRow {
  run_id: string;
  flow_id: string | null;
  mode: string;
  seed: number | null;
  budgets: string;
  status: string;
  budget_usage: string;
  provenance: string | null;
  entry: string;
  trace_id: string;
  user_id: string | null;
  created_at: string;
  ended_at: string | null;
  policy: string;
  pool_policy: string;
  fs_policy: string | null;
  replay_of: string | null;
  cancel_on_disconnect: number;
}

export interface StepRow {
  step_id: string;
  run_id: string;
  type: string;
  name: string;
  parent_step_id: string | null;
  actor_path: string;
  client_token: string | null;
  input: string | null;
  placement: string;
  status: string;
  budget_usage: string;
  provenance: string | null;
  output: string | null;
  error: string | null;
  created_at: string;
  started_at: string | null;
  ended_at: string | null;
}

export interface FlowRow {
  flow_id: string;
  hash: string;
  name: string;
  ast: string | null;
  tools: string;
  config: string;
  labels: string;
  created_at: string;
}

export interface FactRow {
  fact_id: string;
  run_id: string;
  type: string;
  schema_uri: string | null;
  data: string | null;
  emitted_by_step: string | null;
  ts: number;
}

export interface CheckpointRow {
  checkpoint_id: string;
  run_id: string;
  step_id: string | null;
  label: string | null;
  snapshots: string;
  log_offsets: string;
  ts: number;
}

export function flowFromRow(r: FlowRow): FlowRecord {
  return {
    flow_id: r.flow_id,
    hash: r.hash,
    name: r.name,
    ast: parse(r.ast),
    tools: parse(r.tools) as FlowRecord['tools'],
    config: parse(r.config) as FlowRecord['config'],
    labels: parse(r.labels) as FlowRecord['labels'],
    created_at: r.created_at,
  };
}

/** JSON text of a value (`undefined` as null). */
export function json(value: unknown): string {
  return JSON.stringify(value ?? null);
}

export function parse(text: string | null): unknown {
  return text === null ? null : JSON.parse(text);
}

/** Columns that hold JSON. */
export const JSON_COLUMNS: ReadonlySet<string> = new Set([
  'budgets',
  'budget_usage',
  'provenance',
  'actor_path',
  'input',
  'output',
  'error',
]);

export function runFromRow(r: RunRow): RunRecord {
  return {
    run_id: r.run_id,
    flow_id: r.flow_id,
    mode: r.mode as RunRecord['mode'],
    seed: r.seed,
    budgets: parse(r.budgets) as RunRecord['budgets'],
    status: r.status as RunRecord['status'],
    budget_usage: parse(r.budget_usage) as RunRecord['budget_usage'],
    provenance: parse(r.provenance) as RunRecord['provenance'],
    entry: r.entry,
    trace_id: r.trace_id,
    user_id: r.user_id,
    created_at: r.created_at,
    ended_at: r.ended_at,
    policy: parse(r.policy) as RunRecord['policy'],
    pool_policy: parse(r.pool_policy) as RunRecord['pool_policy'],
    fs_policy: parse(r.fs_policy) as RunRecord['fs_policy'],
    replay_of: r.replay_of,
    cancel_on_disconnect: r.cancel_on_disconnect === 1,
  };
}

/** The columns of a run's row, in the order of {@link runValues}. */
export const RUN_COLUMNS: readonly string[] = [
  'run_id',
  'flow_id',
  'mode',
  'seed',
  'budgets',
  'status',
  'budget_usage',
  'provenance',
  'entry',
  'trace_id',
  'user_id',
  'created_at',
  'ended_at',
  'policy',
  'pool_policy',
  'fs_policy',
  'replay_of',
  'cancel_on_disconnect',
];

/** The columns of a step's row, in the order of {@link stepValues}. */
export const STEP_COLUMNS: readonly string[] = [
  'step_id',
  'run_id',
  'type',
  'name',
  'parent_step_id',
  'actor_path',
  'client_token',
  'input',
  'placement',
  'status',
  'budget_usage',
  'provenance',
  'output',
  'error',
  'created_at',
  'started_at',
  'ended_at',
];

/** The columns of an event's row. */
export const EVENT_COLUMNS: readonly string[] = ['step_id', 'seq', 'body'];

/** A patched column's value as its UPDATE binds it (JSON columns as text, null as NULL). */
export function patchValue(column: string, value: unknown): string | number | null {
  return JSON_COLUMNS.has(column) && value !== null
    ? JSON.stringify(value)
    : (value as string | number | null);
}

/** A step as the parameters of its insert, in {@link STEP_COLUMNS} order. */
export function stepValues(step: StepRecord): (string | number | null)[] {
  return [
    step.step_id,
    step.run_id,
    step.type,
    step.name,
    step.parent_step_id,
    json(step.actor_path),
    step.client_token,
    json(step.input),
    step.placement,
    step.status,
    json(step.budget_usage),
    step.provenance === null ? null : json(step.provenance),
    json(step.output),
    step.error === null ? null : json(step.error),
    step.created_at,
    step.started_at,
    step.ended_at,
  ];
}

/** A run as the parameters of its insert, in {@link RUN_COLUMNS} order. */
export function runValues(run: RunRecord): (string | number | null)[] {
  return [
    run.run_id,
    run.flow_id,
    run.mode,
    run.seed,
    json(run.budgets),
    run.status,
    json(run.budget_usage),
    run.provenance === null ? null : json(run.provenance),
    run.entry,
    run.trace_id,
    run.user_id,
    run.created_at,
    run.ended_at,
    json(run.policy),
    json(run.pool_policy),
    run.fs_policy === null ? null : json(run.fs_policy),
    run.replay_of,
    run.cancel_on_disconnect ? 1 : 0,
  ];
}

export interface RecordingRow {
  run_id: string;
  call_key: string;
  client_token: string;
  actor_path: string;
  seq: number;
  kind: string;
  name: string;
  inputs: string;
  output: string | null;
  ts: number;
}

export function recordingFromRow(r: RecordingRow): CallRecording {
  return {
    run_id: r.run_id,
    client_token: r.client_token,
    actor_path: parse(r.actor_path) as CallRecording['actor_path'],
    seq: r.seq,
    kind: r.kind as CallRecording['kind'],
    name: r.name,
    inputs: parse(r.inputs) as CallRecording['inputs'],
    output: parse(r.output),
    ts: r.ts,
  };
}

export function stepFromRow(r: StepRow): StepRecord {
  return {
    step_id: r.step_id,
    run_id: r.run_id,
    type: r.type as StepRecord['type'],
    name: r.name,
    parent_step_id: r.parent_step_id,
    actor_path: parse(r.actor_path) as StepRecord['actor_path'],
    client_token: r.client_token,
    input: parse(r.input),
    placement: r.placement,
    status: r.status as StepRecord['status'],
    budget_usage: parse(r.budget_usage) as StepRecord['budget_usage'],
    provenance: parse(r.provenance) as StepRecord['provenance'],
    output: parse(r.output),
    error: parse(r.error) as StepRecord['error'],
    created_at: r.created_at,
    started_at: r.started_at,
    ended_at: r.ended_at,
  };
}
