/** @module Seed 001's `AgentFn` protocol: single-shot, a thread in and a string out. */

/** One step of a thread so far. */
export interface ThreadStep {
  /** The role that produced it (`coder`, `reviewer`, …). */
  readonly role: string;
  readonly content: string;
}

/** A thread: its id, what started it, and its steps so far (seed 001). */
export interface ThreadContext {
  readonly threadId: string;
  readonly start: string;
  readonly steps: readonly ThreadStep[];
}

/** Options of one `AgentFn` call beyond the seed's (which has none). */
export interface AgentFnOptions {
  readonly signal?: AbortSignal;
}

/**
 * Seed 001's adapter protocol: a thread and a system prompt in, the whole answer out (no
 * streaming). axon's adapters stream; this is their single-shot form.
 */
export type AgentFn = (
  ctx: ThreadContext,
  systemPrompt: string,
  options?: AgentFnOptions,
) => Promise<string>;

/** The prompt an `AgentFn` sends: the system prompt, the start, then each step by role. */
export function threadPrompt(ctx: ThreadContext, systemPrompt: string): string {
  const steps = ctx.steps.map((s) => `## ${s.role}\n${s.content}`);
  return [systemPrompt, `## start\n${ctx.start}`, ...steps].join('\n\n');
}
