/**
 * @module Where `axon runs` and `axon trace` read runs and steps from: a running server
 * (`--url`, `server-source.ts`) or the SQLite store a server wrote (`--data-dir`,
 * `data-dir-source.ts`). Both give the same records, so a command is written once; a new
 * command (`workflow`, `thread`) adds a method here and to both sources.
 */

import { RUN_STATUSES, type RunStatus } from '../../store/records.js';

/** Run statuses (API.md, and `waiting`): the store's. */
export { RUN_STATUSES };

/** One of {@link RUN_STATUSES}. */
export type RunStatusName = RunStatus;

/** Tokens, dollars and time used, as API.md's `budget_usage`. */
export interface UsageInfo {
  readonly tokens_in: number;
  readonly tokens_out: number;
  readonly cost_usd: number;
  readonly wall_ms: number;
}

/** A run, as both sources give it. */
export interface RunInfo {
  readonly run_id: string;
  /**
   * The agent or flow the run started at; `null` where the source does not say (a server
   * whose Run body has no `entry`).
   */
  readonly entry: string | null;
  readonly flow_id: string | null;
  readonly status: string;
  readonly mode: string;
  readonly created_at: string;
  readonly ended_at: string | null;
  readonly budget_usage: UsageInfo;
}

/** A step, as both sources give it. */
export interface StepInfo {
  readonly step_id: string;
  readonly run_id: string;
  readonly parent_step_id: string | null;
  /** `agent`, `tool_call`, `llm_call`, … (API.md). */
  readonly type: string;
  /** The agent, tool or engine it ran; `null` when the source does not say. */
  readonly name: string | null;
  readonly status: string;
  /** A step's usage includes its children's (their cost is charged to the parent too). */
  readonly budget_usage: UsageInfo;
  readonly created_at: string;
  readonly started_at: string | null;
  readonly ended_at: string | null;
  readonly error: { readonly code: string; readonly message: string } | null;
}

/** Which runs to list. */
export interface RunQuery {
  /** Only runs with one of these statuses; all when absent. */
  readonly status?: readonly RunStatusName[] | undefined;
  /** Only runs of this entry (the Run's `entry`), exact; all when absent. */
  readonly entry?: string | undefined;
  /** At most this many, newest first. */
  readonly limit: number;
}

/**
 * Runs and steps, read from a server or a data dir. Failures are `CliError`s: `NOT_FOUND`
 * for an unknown run, `UNREACHABLE` when the source cannot be read, `REQUEST_FAILED` when
 * a server answers with an error.
 */
export interface RunSource {
  /** Where it reads, for messages: `http://127.0.0.1:7070`, `data dir .axon`. */
  readonly description: string;
  /** Runs, newest first. */
  listRuns(query: RunQuery): Promise<RunInfo[]>;
  /** A run; `CliError` `NOT_FOUND` when there is none with this id. */
  getRun(runId: string): Promise<RunInfo>;
  /** The run's steps in creation order (the run is known to exist). */
  listSteps(runId: string): Promise<StepInfo[]>;
  /** Releases the source (closes the store); safe to call twice. */
  close(): Promise<void>;
}
