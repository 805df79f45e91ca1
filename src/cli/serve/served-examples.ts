/**
 * @module The names of what `axon serve` registers by default — the examples' agents, tools
 * and durable agents — with the example each comes from: a project's own (`code:`, `axon
 * generate`) may not take one. The examples are imported when asked for, not with this file.
 */

/** Names taken by the examples, by kind, each with where it comes from (`examples/trip-planner`). */
export interface ExampleNames {
  /** Agents and durable agents: one namespace on a runtime. */
  readonly agents: ReadonlyMap<string, string>;
  readonly tools: ReadonlyMap<string, string>;
}

/** The names the examples register on every `axon serve` (and `axon worker`). */
export async function exampleNames(): Promise<ExampleNames> {
  const { EXAMPLE_DURABLE_AGENTS, EXAMPLE_TOOLS, EXAMPLES } =
    await import('../../../examples/index.js');
  const agents = new Map<string, string>();
  const tools = new Map<string, string>();
  for (const [name, build] of Object.entries(EXAMPLES)) {
    const example = build();
    for (const a of example.agents) agents.set(a.name, `examples/${name}`);
    for (const t of example.tools) tools.set(t.name, `examples/${name}`);
  }
  for (const a of EXAMPLE_DURABLE_AGENTS) agents.set(a.name, 'examples');
  for (const t of EXAMPLE_TOOLS) tools.set(t.name, 'examples');
  return { agents, tools };
}
