/**
 * @module The records of the store as API.md's bodies show them: Flow, Run, Step, Fact,
 * Checkpoint — their fields in API.md's names, and what the store keeps for itself (a run's
 * trace id and entry, a step's actor path) left out. A few fields API.md does not list are
 * kept where a client can use them (`ended_at`, `replay_of`, `cancel_on_disconnect`, a step's
 * `placement_decision` and `parent_step_id`), documented in docs/http-api.md.
 */
import { z } from 'zod';
import type {
  CheckpointRecord,
  FactRecord,
  FlowRecord,
  RunRecord,
  StepRecord,
} from '../store/records.js';

/** A Flow. */
export function flowView(f: FlowRecord): Record<string, unknown> {
  return {
    flow_id: f.flow_id,
    hash: f.hash,
    name: f.name,
    ast: f.ast,
    tools: f.tools,
    config: f.config,
    labels: f.labels,
    created_at: f.created_at,
  };
}

/** A Run. */
export function runView(r: RunRecord): Record<string, unknown> {
  return {
    run_id: r.run_id,
    flow_id: r.flow_id,
    mode: r.mode,
    seed: r.seed,
    budgets: r.budgets,
    policy: r.policy,
    pool_policy: r.pool_policy,
    fs_policy: r.fs_policy,
    status: r.status,
    budget_usage: r.budget_usage,
    provenance: r.provenance,
    created_at: r.created_at,
    ended_at: r.ended_at,
    replay_of: r.replay_of,
    cancel_on_disconnect: r.cancel_on_disconnect,
    entry: r.entry,
  };
}

/** A Step. */
export function stepView(s: StepRecord): Record<string, unknown> {
  return {
    step_id: s.step_id,
    run_id: s.run_id,
    type: s.type,
    client_token: s.client_token,
    input: s.input,
    placement: s.placement,
    status: s.status,
    budget_usage: s.budget_usage,
    provenance: s.provenance,
    output: s.output,
    error: s.error,
    created_at: s.created_at,
    ended_at: s.ended_at,
    parent_step_id: s.parent_step_id,
    placement_decision: s.placement_decision,
    name: s.name,
    actor_path: s.actor_path,
    started_at: s.started_at,
    first_token_at: s.first_token_at ?? null,
  };
}

/** A Fact. */
export function factView(f: FactRecord): Record<string, unknown> {
  return {
    fact_id: f.fact_id,
    run_id: f.run_id,
    type: f.type,
    schema_uri: f.schema_uri,
    data: f.data,
    emitted_by_step: f.emitted_by_step,
    ts: f.ts,
  };
}

/** A Checkpoint. */
export function checkpointView(c: CheckpointRecord): Record<string, unknown> {
  return {
    checkpoint_id: c.checkpoint_id,
    run_id: c.run_id,
    step_id: c.step_id,
    label: c.label,
    ts: c.ts,
  };
}

const json = z.unknown();
const usage = z.object({
  tokens_in: z.number(),
  tokens_out: z.number(),
  cost_usd: z.number(),
  wall_ms: z.number(),
});

/** The response bodies, for the OpenAPI document. */
export const RESPONSE_SCHEMAS = {
  Flow: z.object({
    flow_id: z.string(),
    hash: z.string(),
    name: z.string(),
    ast: json,
    tools: z.array(z.record(z.string(), json)),
    config: z.record(z.string(), json),
    labels: z.record(z.string(), z.string()),
    created_at: z.string(),
  }),
  FlowCreated: z.object({
    flow_id: z.string(),
    hash: z.string(),
    /** The stored flow's name: on a 200, the name it was first posted with. */
    name: z.string(),
    /** On a 200 only, when the name posted is not the stored flow's: the name posted. */
    posted_name: z.string().optional(),
  }),
  Run: z.object({
    run_id: z.string(),
    flow_id: z.string().nullable(),
    mode: z.enum(['record', 'replay', 'strict_replay']),
    seed: z.number().nullable(),
    budgets: z.record(z.string(), z.number()),
    policy: z.record(z.string(), json),
    pool_policy: z.record(z.string(), json),
    fs_policy: z.record(z.string(), json).nullable(),
    status: z.enum(['running', 'waiting', 'cancelling', 'cancelled', 'completed', 'failed']),
    budget_usage: usage,
    provenance: z.record(z.string(), json).nullable(),
    created_at: z.string(),
    ended_at: z.string().nullable(),
    replay_of: z.string().nullable(),
    cancel_on_disconnect: z.boolean(),
    entry: z.string(),
  }),
  StepCreated: z.object({ step_id: z.string(), status: z.string() }),
  Step: z.object({
    step_id: z.string(),
    run_id: z.string(),
    type: z.string(),
    client_token: z.string().nullable(),
    input: json,
    placement: z.string(),
    status: z.enum(['queued', 'running', 'waiting', 'succeeded', 'failed', 'cancelled']),
    budget_usage: usage,
    provenance: z.record(z.string(), json).nullable(),
    output: json,
    error: z.object({ code: z.string(), message: z.string(), retriable: z.boolean() }).nullable(),
    created_at: z.string(),
    ended_at: z.string().nullable(),
    parent_step_id: z.string().nullable(),
    placement_decision: z.record(z.string(), json).nullable(),
    name: z.string(),
    actor_path: z.array(z.string()),
    started_at: z.string().nullable(),
    first_token_at: z.string().nullable(),
  }),
  Fact: z.object({
    fact_id: z.string(),
    run_id: z.string(),
    type: z.string(),
    schema_uri: z.string().nullable(),
    data: json,
    emitted_by_step: z.string().nullable(),
    ts: z.number(),
  }),
  Checkpoint: z.object({
    checkpoint_id: z.string(),
    run_id: z.string(),
    step_id: z.string().nullable(),
    label: z.string().nullable(),
    ts: z.number(),
  }),
  Cancelling: z.object({ status: z.literal('cancelling') }),
  Pool: z.object({
    pool_id: z.string(),
    tags: z.array(z.string()),
    capabilities: z.record(z.string(), json),
    engines: z.array(z.string()),
    replicas: z.array(
      z.object({
        replica_id: z.string(),
        health: z.enum(['healthy', 'degraded', 'unavailable']),
        load: z.record(z.string(), z.number()),
      }),
    ),
  }),
  Error: z.object({
    error: z.object({
      code: z.string(),
      message: z.string(),
      details: z.record(z.string(), json),
    }),
    correlation_id: z.string(),
  }),
} as const;

const turn = z.object({
  n: z.number(),
  role: z.string(),
  step_id: z.string(),
  status: z.string(),
  raw: z.string().nullable(),
  output: json,
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  started_at: z.string().nullable(),
  ended_at: z.string().nullable(),
  tokens_in: z.number(),
  tokens_out: z.number(),
  cost_usd: z.number(),
});

/** The bodies of the workflow and thread routes (`thread-routes.ts`), for the OpenAPI document. */
export const THREAD_SCHEMAS = {
  Workflow: z.object({
    name: z.string(),
    description: z.string(),
    roles: z.array(z.object({ name: z.string(), kind: z.string(), placement: z.string() })),
    max_rounds: z.number(),
    concurrency: z.object({
      max: z.number(),
      overflow: z.enum(['drop', 'queue']),
      max_queue: z.number(),
    }),
    resume: z.boolean(),
    running: z.number(),
    queued: z.number(),
  }),
  Thread: z.object({
    thread_id: z.string(),
    workflow: z.string(),
    status: z.enum(['queued', 'started', 'completed', 'failed', 'crashed', 'killed']),
    end_reason: z.string().nullable(),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
    input: z.string(),
    mode: z.enum(['record', 'replay', 'strict_replay']),
    replay_of: z.string().nullable(),
    rounds: z.number(),
    turns: z.array(turn),
    tokens_in: z.number(),
    tokens_out: z.number(),
    cost_usd: z.number(),
    created_at: z.string(),
    started_at: z.string().nullable(),
    ended_at: z.string().nullable(),
  }),
};
