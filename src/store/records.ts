/** @module The stored shapes of runs and steps (API.md field names, snake_case). */
import type { ErrorPayload } from '../errors/to-error-payload.js';
import type { BudgetUsage, Provenance } from '../streams/events.js';

/** Run modes (NERVE-4002). */
export type RunMode = 'record' | 'replay' | 'strict_replay';
/**
 * Run statuses of API.md, and `waiting`: a step of the run waits for an approval (issue 6;
 * API.md lists no such status — see docs/policy.md). A waiting run takes steps as a running
 * one does.
 */
/** Every run status, in lifecycle order. */
export const RUN_STATUSES = [
  'running',
  'waiting',
  'cancelling',
  'cancelled',
  'completed',
  'failed',
] as const;
/** A run's status: one of {@link RUN_STATUSES}. */
export type RunStatus = (typeof RUN_STATUSES)[number];
/** Step statuses of API.md, and `waiting`: suspended until an approval is decided. */
export type StepStatus = 'queued' | 'running' | 'waiting' | 'succeeded' | 'failed' | 'cancelled';
/** The statuses a step's record ends with: it changes no more. */
export const STEP_ENDED: ReadonlySet<string> = new Set(['succeeded', 'failed', 'cancelled']);
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
  /**
   * The run's own policy (API.md: `tools`, `max_depth`, `steps_per_minute`); it narrows
   * the server's policy, never widens it. `{}` for none.
   */
  readonly policy: Readonly<Record<string, unknown>>;
  /** Where its steps may run (API.md's `pool_policy`); `{}` for the default, `auto`. */
  readonly pool_policy: Readonly<Record<string, unknown>>;
  /** The FS broker's roots, allow-list and quota for its `fs_op` steps, or `null`. */
  readonly fs_policy: Readonly<Record<string, unknown>> | null;
  /** The recorded run a `replay` or `strict_replay` run replays; `null` in `record` mode. */
  readonly replay_of: string | null;
  /** Whether the last stream of a live step closing cancels it (API.md). */
  readonly cancel_on_disconnect: boolean;
}

/** A run's settings when it has none of its own: no policy of its own, `auto` placement. */
export const NO_RUN_SETTINGS: Pick<
  RunRecord,
  'policy' | 'pool_policy' | 'fs_policy' | 'replay_of' | 'cancel_on_disconnect'
> = Object.freeze({
  policy: Object.freeze({}),
  pool_policy: Object.freeze({}),
  fs_policy: null,
  replay_of: null,
  cancel_on_disconnect: false,
});

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
  /**
   * The step's own budgets, as it was submitted with them (API.md); `{}` for none. Stored
   * so that the step, run again after a restart or an approval, has them again (POLICY-3000).
   */
  readonly budgets: WireBudgets;
  /**
   * Where the step was placed and why (PLACE-5001): the pool, its replica, the run's
   * `pool_policy` kind and the reason; `null` for a step stored before steps kept it.
   */
  readonly placement_decision: PlacementDecision | null;
  /**
   * When the step logged its first `token` (its time to first token is this less
   * `started_at`), written with its end; `null` until then, and for a step that streamed
   * none (a step stored before steps kept it reads `null` too).
   */
  readonly first_token_at: string | null;
}

/** A step's placement decision (see `placement/pool-choice.ts`). */
export interface PlacementDecision {
  readonly pool_id: string;
  readonly replica_id: string | null;
  /** The kind of the run's `pool_policy.placement`. */
  readonly policy: 'auto' | 'pin' | 'affinity';
  /** Why this pool, for a person reading the step. */
  readonly reason: string;
}

/** Fields of a run that change after creation. */
export type RunPatch = Partial<
  Pick<RunRecord, 'status' | 'budget_usage' | 'provenance' | 'ended_at'>
>;
/** Fields of a step that change after creation. */
export type StepPatch = Partial<
  Pick<
    StepRecord,
    | 'status'
    | 'budget_usage'
    | 'provenance'
    | 'output'
    | 'error'
    | 'started_at'
    | 'ended_at'
    | 'first_token_at'
  >
>;

/** The sum of two usages. */
export function addUsage(a: BudgetUsage, b: BudgetUsage): BudgetUsage {
  return {
    tokens_in: a.tokens_in + b.tokens_in,
    tokens_out: a.tokens_out + b.tokens_out,
    cost_usd: a.cost_usd + b.cost_usd,
    wall_ms: a.wall_ms + b.wall_ms,
  };
}

/** A budget usage of zero. */
export function zeroUsage(): BudgetUsage {
  return { tokens_in: 0, tokens_out: 0, cost_usd: 0, wall_ms: 0 };
}

/** A tool of a flow document: its name and JSON Schema 2020-12 parameters. */
export interface FlowTool {
  readonly name: string;
  readonly description?: string;
  readonly parameters: Readonly<Record<string, unknown>>;
}

/** A flow (NERVE-4001): content-addressed by the sha256 of canonical `{ ast, tools, config }`. */
export interface FlowRecord {
  readonly flow_id: string;
  /** sha256 (hex) of the canonical JSON of `{ ast, tools, config }`. */
  readonly hash: string;
  readonly name: string;
  readonly ast: unknown;
  readonly tools: readonly FlowTool[];
  /** `fact_schemas` (type → JSON Schema) and whatever else the flow configures. */
  readonly config: Readonly<Record<string, unknown>>;
  readonly labels: Readonly<Record<string, string>>;
  readonly created_at: string;
}

/** A stored fact (NERVE-4004): typed, append-only. */
export interface FactRecord {
  readonly fact_id: string;
  readonly run_id: string;
  readonly type: string;
  readonly schema_uri: string | null;
  readonly data: unknown;
  readonly emitted_by_step: string | null;
  /** Milliseconds since the epoch. */
  readonly ts: number;
}

/** Which facts to list: all of a run or of a flow's runs, optionally of one type, in append order. */
export interface FactQuery {
  readonly runId?: string;
  readonly flowId?: string;
  readonly type?: string;
  /** Only facts appended after this one (a cursor). */
  readonly after?: string;
  /** At most this many. */
  readonly limit?: number;
}

/** A checkpoint (NERVE-4005): the persisted snapshots of a run's live actors and its log offsets. */
export interface CheckpointRecord {
  readonly checkpoint_id: string;
  readonly run_id: string;
  /** The step that took it, if a step did. */
  readonly step_id: string | null;
  readonly label: string | null;
  /** XState persisted snapshots by actor id. */
  readonly snapshots: Readonly<Record<string, unknown>>;
  /** The last `seq` of each step's log when it was taken. */
  readonly log_offsets: Readonly<Record<string, number>>;
  readonly ts: number;
}

/** Which kind of call a recording holds. */
export type RecordedCallKind = 'engine' | 'tool';

/**
 * The determinism inputs of a recorded call (NERVE-4022): what `strict_replay` compares
 * before serving it. For an engine call, the hashes of its normalized prompt and parameters
 * (NERVE-4012), the seed, the engine, the model asked for and the replica; for a tool call,
 * the tool and the hash of its arguments.
 */
export interface RecordedInputs {
  readonly prompt_hash?: string;
  readonly params_hash?: string;
  readonly seed?: number | null;
  readonly engine?: string;
  readonly model?: string;
  readonly replica?: string | null;
  readonly tool?: string;
  readonly args_hash?: string;
}

/**
 * One engine or tool call of a recorded run, keyed by (run, client token of the submitted
 * step whose tree made it, actor path, call sequence) — never by prompt, so repeated
 * identical calls stay distinct. `output` is the whole answer: for an engine call the token
 * stream and what the engine reported; for a tool call its result or its error.
 */
export interface CallRecording {
  readonly run_id: string;
  /** The client token of the submitted step whose tree made the call; `''` for none. */
  readonly client_token: string;
  /** Actor names below the submitted step down to the caller (`[]`: the step itself). */
  readonly actor_path: readonly string[];
  /** The caller's calls are numbered 1, 2, 3, … in the order they were made. */
  readonly seq: number;
  readonly kind: RecordedCallKind;
  /** The engine or tool called. */
  readonly name: string;
  readonly inputs: RecordedInputs;
  readonly output: unknown;
  /** Milliseconds since the epoch. */
  readonly ts: number;
}

/** Where a recording sits in its run. */
export type RecordingKey = Pick<CallRecording, 'client_token' | 'actor_path' | 'seq'>;

/** One string for a recording's key within its run. */
export function recordingKey(key: RecordingKey): string {
  return `${key.client_token}\u0000${key.actor_path.join('\u0001')}\u0000${key.seq}`;
}

/** Where an approval stands. */
export type ApprovalStatus = 'pending' | 'approved' | 'rejected';

/**
 * A call that the policy let go on only once someone approves it (issue 6). The step that
 * made it (a step submitted to a run, with a client token) is suspended while it is
 * `pending`. Its id is derived from where the call sits — (run, client token, actor path
 * below the step, the caller's approval sequence) — so the step run again after the
 * decision finds it.
 */
export interface ApprovalRecord {
  readonly approval_id: string;
  readonly run_id: string;
  /** The submitted step that waits for the decision. */
  readonly step_id: string;
  readonly client_token: string;
  /** Actor names below the submitted step down to the caller (`[]`: the step itself). */
  readonly actor_path: readonly string[];
  /** The kind of action (`call_tool`, `invoke_agent`, …) and what it is for. */
  readonly action: string;
  readonly target: string;
  /** Who asked: the context's user, or `anonymous`. */
  readonly subject: string;
  /** The policy rule that asked for the approval. */
  readonly rule: string;
  /** Who may decide. */
  readonly approvers: readonly string[];
  readonly status: ApprovalStatus;
  /** The waiting step's lifecycle when it asked: XState's persisted snapshot of it. */
  readonly snapshot: unknown;
  readonly requested_at: string;
  readonly decided_by: string | null;
  readonly reason: string | null;
  readonly decided_at: string | null;
}

/** A decision on a pending approval. */
export type ApprovalDecision = Pick<ApprovalRecord, 'decided_by' | 'reason' | 'decided_at'> & {
  readonly status: Exclude<ApprovalStatus, 'pending'>;
};
