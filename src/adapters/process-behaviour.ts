/**
 * @module What an agent with `process` placement runs: a behaviour that starts a child
 * process for each invocation and streams its output as tokens. Adapters make these;
 * `defineAgent({ placement: 'process', behaviour })` runs them as steps.
 */
import type { ExecContext } from '../context/exec-context.js';

/** An invocation's input, as a process behaviour sees it (an agent's `AgentInput`). */
export interface ProcessInput {
  readonly message: string;
  readonly args?: Readonly<Record<string, unknown>> | undefined;
}

/** How a process invocation ended. */
export type ProcessResult =
  | { readonly status: 'success'; readonly output: unknown }
  | {
      readonly status: 'wrong_handler' | 'needs_data' | 'needs_credentials';
      readonly message: string;
      readonly data: Readonly<Record<string, unknown>> | null;
    };

/** A behaviour run in a child process per invocation. */
export interface ProcessBehaviour {
  /** The program's name in errors (`cursor-agent`, …). */
  readonly name: string;
  /**
   * Runs one invocation: yields output text as tokens while the process runs, returns its
   * result. Aborting `ctx.signal` kills the process tree; failures are `CliAgentError`s.
   */
  run(input: ProcessInput, ctx: ExecContext): AsyncGenerator<string, ProcessResult, undefined>;
}
