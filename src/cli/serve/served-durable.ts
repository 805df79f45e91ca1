/**
 * @module `axon.yaml`'s `durable_agents:` (issue 46): the operator's durable agents, each the
 * export of a JavaScript module (relative to the file) holding a definition made with
 * `defineAgent({ durable })`. `axon serve` and `axon worker` load and register them at start:
 * they run in the server's process (a durable agent runs inline), so they are the operator's
 * own code, named in the operator's file — never a caller's.
 *
 * @example
 * durable_agents:
 *   - { module: ./agents.mjs, export: supportAgent }
 */
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import type { DurableAgentDefinition } from '../../actors/durable-agent.js';
import { ServeConfigError, type ServeConfigProblem } from './config-problems.js';

/** An entry of `durable_agents:`. */
export const durableAgentConfigSchema = z.strictObject({
  module: z.string().min(1),
  export: z.string().min(1),
});

/** An entry, its module's path made absolute, with where the file has it. */
export interface DurableAgentConfig {
  readonly module: string;
  readonly export: string;
  /** The entry's line in the file, for its problems. */
  readonly line: number | null;
  /** The file, as problems name it. */
  readonly source: string;
}

/**
 * Loads the durable agents `entries` name. Rejects with `ServeConfigError` naming each
 * entry's line: a module that cannot be loaded, an export it does not have, an export that
 * is not a durable agent's definition, two of one name.
 */
export async function loadDurableAgents(
  entries: readonly DurableAgentConfig[],
): Promise<DurableAgentDefinition[]> {
  const out: DurableAgentDefinition[] = [];
  const problems: ServeConfigProblem[] = [];
  for (const entry of entries) {
    const problem = (message: string): void => {
      problems.push({ source: entry.source, line: entry.line, key: 'durable_agents', message });
    };
    let module: Record<string, unknown>;
    try {
      module = (await import(pathToFileURL(entry.module).href)) as Record<string, unknown>;
    } catch (err) {
      problem(`cannot load ${entry.module}: ${err instanceof Error ? err.message : String(err)}`);
      continue;
    }
    const def = module[entry.export] as Partial<DurableAgentDefinition> | undefined;
    if (def?.kind !== 'durable_agent') {
      problem(
        `${entry.module} has no durable agent "${entry.export}" (an export made with defineAgent({ durable }))`,
      );
      continue;
    }
    if (out.some((d) => d.name === def.name)) {
      problem(`two durable agents are named "${String(def.name)}"`);
      continue;
    }
    out.push(def as DurableAgentDefinition);
  }
  if (problems.length > 0) throw new ServeConfigError(problems);
  return out;
}
