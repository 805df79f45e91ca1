/**
 * @module The examples `axon run` knows, the tools every runtime of the CLI registers, and the
 * durable agents `axon serve` registers.
 */
import type { ToolDefinition } from '../src/tools/define-tool.js';
import type { Example, ExampleOptions } from './example.js';
import { addTool } from './tools/add.js';
import { helpDesk } from './help-desk/index.js';
import { tripPlanner } from './trip-planner/index.js';

export type { Example, ExampleOptions } from './example.js';
export { EXAMPLE_DURABLE_AGENTS, followUp, notebook } from './durable-agents/index.js';

/** Example builders by name. */
export const EXAMPLES: Readonly<Record<string, (options?: ExampleOptions) => Example>> = {
  'trip-planner': tripPlanner,
  'help-desk': helpDesk,
};

/** Tools registered with the examples (API.md's embedded defaults). */
export const EXAMPLE_TOOLS: readonly ToolDefinition[] = [addTool];
