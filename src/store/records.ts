/** @module The stored shapes of runs and steps (API.md field names, snake_case). */
import type { ErrorPayload } from '../errors/to-error-payload.js';
import type { BudgetUsage, Provenance } from '../streams/events.js';

/** Run modes (NERVE-4002). */
export type RunMode = 'record' | 'replay' | 'strict_replay';
/** Run statuses of API.md. */
export type RunStatus = 'running' | 'cancelling' | 'cancelled' | 'completed' | 'failed';
/** Step statuses of API.md. */
export type StepStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';
/** Step types: API.md's, plus `agent` (a registered agent invoked by name). */
export type StepType =
  'llm_plan' | 'llm_call' | 'tool_call' | 'fs_op' | 'gate_eval' | 'checkpoint' | 'agent';

/** Run and step budgets on the wire. */
export interface WireBudgets {
  readonly max_tokens_in?: number;
  readonly max_tokens_out?: number;
  readonly max_wall_ms?: number;
  readonly max_cost_usd?: number;
}

/** A run: one execution of a flow (or of an ad-hoc agent invocation). */
export interface RunRecord {
  readonly run_id: string;
  readonly flow_id: string | null;
  readonly mode: RunMode;
  readonly seed: number | null;
  readonly budgets: WireBudgets;
  readonly status: RunStatus;
  readonly budget_usage: BudgetUsage;
  readonly provenance: Provenance | null;
  /** The agent or flow entry point, for people reading a run list. */
  readonly entry: string;
  readonly trace_id: string;
  readonly user_id: string | null;
  readonly created_at: string;
  readonly ended_at: string | null;
}

/** A step: the unit of work (NERVE-4003), with its place in the actor tree. */
export interface StepRecord {
  readonly step_id: string;
  readonly run_id: string;
  readonly type: StepType;
  /** The agent, tool or engine the step runs. */
  readonly name: string;
  readonly parent_step_id: string | null;
  /** Actor names from the run's root step down to this one. */
  readonly actor_path: readonly string[];
  readonly client_token: string | null;
  readonly input: unknown;
  readonly placement: string;
  readonly status: StepStatus;
  readonly budget_usage: BudgetUsage;
  readonly provenance: Provenance | null;
  readonly output: unknown;
  readonly error: ErrorPayload | null;
  readonly created_at: string;
  readonly started_at: string | null;
  readonly ended_at: string | null;
}

/** Fields of a run that change after creation. */
export type RunPatch = Partial<
  Pick<RunRecord, 'status' | 'budget_usage' | 'provenance' | 'ended_at'>
>;
/** Fields of a step that change after creation. */
export type StepPatch = Partial<
  Pick<
    StepRecord,
    'status' | 'budget_usage' | 'provenance' | 'output' | 'error' | 'started_at' | 'ended_at'
  >
>;

/** A budget usage of zero. */
export function zeroUsage(): BudgetUsage {
  return { tokens_in: 0, tokens_out: 0, cost_usd: 0, wall_ms: 0 };
}
