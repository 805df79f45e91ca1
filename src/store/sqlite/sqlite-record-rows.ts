/**
 * @module The SQLite store's rows of its other tables — flows, facts, checkpoints and call
 * recordings — one column a field, JSON text where a field is structured (`sqlite-rows.ts`
 * has the runs', steps' and logs' rows).
 */
import type { CallRecording, FlowRecord } from '../records.js';
import { parse } from './sqlite-rows.js';

/** A row of the `flows` table. */
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

/** A row of the `facts` table. */
export interface FactRow {
  fact_id: string;
  run_id: string;
  type: string;
  schema_uri: string | null;
  data: string | null;
  emitted_by_step: string | null;
  ts: number;
}

/** A row of the `checkpoints` table. */
export interface CheckpointRow {
  checkpoint_id: string;
  run_id: string;
  step_id: string | null;
  label: string | null;
  snapshots: string;
  log_offsets: string;
  ts: number;
}

/** A flow from its row. */
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

/** A row of the `recordings` table (a run's recorded engine and tool calls). */
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

/** A recorded call from its row. */
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
