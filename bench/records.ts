/**
 * @module The records the store benches write straight to a store (no runtime): a running
 * run and a running step of it, with fresh ids.
 */
import { randomUUID } from 'node:crypto';
import {
  NO_RUN_SETTINGS,
  zeroUsage,
  type RunRecord,
  type StepRecord,
} from '../src/store/records.js';

/** A running run with no flow, budgets or settings. */
export function benchRun(): RunRecord {
  return {
    run_id: `run_${randomUUID()}`,
    flow_id: null,
    mode: 'record',
    seed: null,
    budgets: {},
    status: 'running',
    budget_usage: zeroUsage(),
    provenance: null,
    entry: 'bench',
    trace_id: 't',
    user_id: null,
    created_at: new Date().toISOString(),
    ended_at: null,
    ...NO_RUN_SETTINGS,
  };
}

/** A running inline step of `runId`, an `agent` step named `bench` unless `fields` say else. */
export function benchStep(runId: string, fields: Partial<StepRecord> = {}): StepRecord {
  return {
    step_id: `step_${randomUUID()}`,
    run_id: runId,
    type: 'agent',
    name: 'bench',
    parent_step_id: null,
    actor_path: ['bench'],
    client_token: null,
    input: null,
    placement: 'inline',
    status: 'running',
    budget_usage: zeroUsage(),
    provenance: null,
    output: null,
    error: null,
    created_at: new Date().toISOString(),
    started_at: null,
    ended_at: null,
    budgets: {},
    placement_decision: null,
    first_token_at: null,
    ...fields,
  };
}
