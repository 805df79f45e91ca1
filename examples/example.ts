/** @module The shape of a runnable example. */
import type { AgentDefinition } from '../src/actors/agent-runtime.js';
import type { ToolDefinition } from '../src/tools/define-tool.js';

/** Options every example accepts. */
export interface ExampleOptions {
  /** Delay per scripted token; default `AXON_SCRIPTED_TOKEN_MS` or 5 ms. */
  readonly tokenDelayMs?: number;
  /** Seed for the scripted engine; default 42. */
  readonly seed?: number;
}

/** A runnable example: its agents and tools, and what to invoke. */
export interface Example {
  readonly name: string;
  readonly description: string;
  /** The agent `axon run` invokes. */
  readonly entry: string;
  /** The default message. */
  readonly input: string;
  readonly agents: readonly AgentDefinition[];
  readonly tools: readonly ToolDefinition[];
}
