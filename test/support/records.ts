/** @module Test helpers: valid run, step and event records with unique ids. */
import { randomUUID } from 'node:crypto';
import {
  zeroUsage,
  type CheckpointRecord,
  type FactRecord,
  type FlowRecord,
  type RunRecord,
  type StepRecord,
} from '../../src/store/records.js';
import type { StepEvent } from '../../src/streams/events.js';

/** A unique id with a readable prefix. */
export const uid = (prefix: string): string => `${prefix}_${randomUUID()}`;

/** A valid run record; `overrides` replace any field. */
export function makeRun(overrides: Partial<RunRecord> = {}): RunRecord {
  return {
    run_id: uid('run'),
    flow_id: null,
    mode: 'record',
    seed: null,
    budgets: { max_tokens_out: 1_000 },
    status: 'running',
    budget_usage: zeroUsage(),
    provenance: null,
    entry: 'planner',
    trace_id: randomUUID().replaceAll('-', ''),
    user_id: 'user-1',
    created_at: '2025-01-01T00:00:00.000Z',
    ended_at: null,
    policy: {},
    pool_policy: {},
    fs_policy: null,
    replay_of: null,
    cancel_on_disconnect: false,
    ...overrides,
  };
}

/** A valid step record of `runId`; `overrides` replace any field. */
export function makeStep(runId: string, overrides: Partial<StepRecord> = {}): StepRecord {
  return {
    step_id: uid('step'),
    run_id: runId,
    type: 'agent',
    name: 'planner',
    parent_step_id: null,
    actor_path: ['planner'],
    client_token: null,
    input: { message: 'plan a trip', args: { city: 'Berlin' } },
    placement: 'inline',
    status: 'running',
    budget_usage: zeroUsage(),
    provenance: null,
    output: null,
    error: null,
    created_at: '2025-01-01T00:00:00.000Z',
    started_at: '2025-01-01T00:00:00.000Z',
    ended_at: null,
    budgets: {},
    placement_decision: {
      pool_id: 'local',
      replica_id: null,
      policy: 'auto',
      reason: 'auto; the only feasible pool',
    },
    first_token_at: null,
    ...overrides,
  };
}

/** A narration event of a step. */
export function narration(stepId: string, seq: number, text = `event ${seq}`): StepEvent {
  return { type: 'narration', step_id: stepId, seq, ts: 1_700_000_000_000 + seq, text };
}

/** A valid flow record with content `ast` (its hash is the caller's to compute or fake). */
export function makeFlow(overrides: Partial<FlowRecord> = {}): FlowRecord {
  return {
    flow_id: uid('flow'),
    hash: randomUUID().replaceAll('-', '').repeat(2),
    name: 'trip-planner',
    ast: { steps: ['plan', 'book'] },
    tools: [{ name: 'search_flights', parameters: { type: 'object' } }],
    config: { fact_schemas: { booking: { type: 'object' } } },
    labels: { team: 'travel' },
    created_at: '2025-01-01T00:00:00.000Z',
    ...overrides,
  };
}

/** A valid fact of `runId`. */
export function makeFact(runId: string, overrides: Partial<FactRecord> = {}): FactRecord {
  return {
    fact_id: uid('fact'),
    run_id: runId,
    type: 'booking',
    schema_uri: null,
    data: { city: 'Berlin', seats: 2 },
    emitted_by_step: null,
    ts: 1_700_000_000_000,
    ...overrides,
  };
}

/** A valid checkpoint of `runId`. */
export function makeCheckpoint(
  runId: string,
  overrides: Partial<CheckpointRecord> = {},
): CheckpointRecord {
  return {
    checkpoint_id: uid('checkpoint'),
    run_id: runId,
    step_id: null,
    label: null,
    snapshots: { 'agent:planner': { status: 'active', value: 'idle', context: { n: 1 } } },
    log_offsets: { step_a: 3 },
    ts: 1_700_000_000_000,
    ...overrides,
  };
}
