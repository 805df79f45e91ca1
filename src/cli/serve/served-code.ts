/**
 * @module `axon.yaml`'s `code:` (issue 48): the agents, tools and workflows a project defines
 * in code — each entry a JavaScript module (relative to the file) and the export holding what
 * `defineAgent`, `defineTool` or `defineWorkflow` returned. `axon serve`, `axon worker` and
 * `axon list` load them at start and register them beside the examples, as if given to
 * `createRuntime` (agents, tools) and to the workflow engine (workflows). A project made with
 * `axon new` names its own here (built into `dist/` by `npm start`).
 *
 * @example
 * code:
 *   agents:
 *     - { module: ./dist/agents/assistant.js, export: assistant }
 *   tools:
 *     - { module: ./dist/tools/search-notes.js, export: searchNotes }
 *   workflows:
 *     - { module: ./dist/workflows/review.js, export: review }
 */
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import type { AgentDefinition } from '../../actors/agent-runtime.js';
import type { ToolDefinition } from '../../tools/define-tool.js';
import type { WorkflowDefinition } from '../../workflows/workflow-definition.js';
import { ServeConfigError, type ServeConfigProblem } from './config-problems.js';
import { exampleNames } from './served-examples.js';

/** The kinds of `code:`, by their key, with what makes each and its definition's `kind`. */
export const CODE_KINDS = {
  agents: { kind: 'agent', noun: 'agent', maker: 'defineAgent' },
  tools: { kind: 'tool', noun: 'tool', maker: 'defineTool' },
  workflows: { kind: 'workflow', noun: 'workflow', maker: 'defineWorkflow' },
} as const;
/** `agents`, `tools` or `workflows`. */
export type CodeKind = keyof typeof CODE_KINDS;

const entrySchema = z.strictObject({
  module: z.string().min(1),
  export: z.string().regex(/^[A-Za-z_$][\w$]*$/, 'must be the name of an export'),
});

/** `code:` in `axon.yaml`. */
export const codeConfigSchema = z.strictObject({
  agents: z.array(entrySchema).optional(),
  tools: z.array(entrySchema).optional(),
  workflows: z.array(entrySchema).optional(),
});
/** `code:` as the file has it, checked. */
export type CodeConfigFile = z.output<typeof codeConfigSchema>;

/** An entry of `code:`, its module's path made absolute, with where the file has it. */
export interface CodeEntry {
  readonly kind: CodeKind;
  /** Absolute. */
  readonly module: string;
  readonly export: string;
  /** The entry's key (`code.agents.0`) and line in the file, for its problems. */
  readonly key: string;
  readonly line: number | null;
  /** The file, as problems name it. */
  readonly source: string;
}

/** The entries of `code:`, in the file's order, kind by kind. */
export function codeEntriesOf(
  code: CodeConfigFile | undefined,
  fromFile: (path: string) => string,
  fileLine: (key: string) => number | null,
  source: string,
): CodeEntry[] {
  if (code === undefined) return [];
  return (Object.keys(CODE_KINDS) as CodeKind[]).flatMap((kind) =>
    (code[kind] ?? []).map((entry, i) => ({
      kind,
      module: fromFile(entry.module),
      export: entry.export,
      key: `code.${kind}.${i}`,
      line: fileLine(`code.${kind}.${i}`),
      source,
    })),
  );
}

/** What {@link loadCode} gives: the definitions, kind by kind, in the file's order. */
export interface LoadedCode {
  readonly agents: readonly AgentDefinition[];
  readonly tools: readonly ToolDefinition[];
  readonly workflows: readonly WorkflowDefinition[];
  /** The entry each definition came from (`axon list` shows where). */
  readonly entryOf: ReadonlyMap<object, CodeEntry>;
}

/** The `kind` a definition made with `defineAgent({ durable })` has. */
const DURABLE_KIND = 'durable_agent';

/**
 * Loads the definitions `entries` name. Rejects with `ServeConfigError` naming each entry's
 * line: a module that cannot be loaded (not built yet, a syntax error, a throw at load), an
 * export it does not have, an export that is not a definition of the entry's kind (a durable
 * agent belongs under `durable_agents:`), two of one name and kind, an agent or a tool named
 * like one of the examples' (which axon serve registers too).
 */
export async function loadCode(entries: readonly CodeEntry[]): Promise<LoadedCode> {
  const found: Record<CodeKind, { readonly name: string }[]> = {
    agents: [],
    tools: [],
    workflows: [],
  };
  const entryOf = new Map<object, CodeEntry>();
  const problems: ServeConfigProblem[] = [];
  const examples = entries.length === 0 ? null : await exampleNames();
  for (const entry of entries) {
    const problem = (message: string): void => {
      problems.push({ source: entry.source, line: entry.line, key: entry.key, message });
    };
    let module: Record<string, unknown>;
    try {
      module = (await import(pathToFileURL(entry.module).href)) as Record<string, unknown>;
    } catch (err) {
      problem(`cannot load ${entry.module}: ${err instanceof Error ? err.message : String(err)}`);
      continue;
    }
    const { kind, noun, maker } = CODE_KINDS[entry.kind];
    const def = module[entry.export] as { kind?: unknown; name?: unknown } | undefined;
    if (def?.kind === DURABLE_KIND && entry.kind === 'agents') {
      problem(
        `${entry.module}'s "${entry.export}" is a durable agent: name it under durable_agents:`,
      );
      continue;
    }
    if (def?.kind !== kind || typeof def.name !== 'string') {
      problem(`${entry.module} has no ${noun} "${entry.export}" (an export made with ${maker})`);
      continue;
    }
    const list = found[entry.kind];
    if (list.some((d) => d.name === def.name)) {
      problem(`two ${noun}s are named "${def.name}"`);
      continue;
    }
    const example = entry.kind === 'workflows' ? undefined : examples?.[entry.kind].get(def.name);
    if (example !== undefined) {
      problem(
        `${example} registers ${noun === 'agent' ? 'an' : 'a'} ${noun} "${def.name}" already: rename it`,
      );
      continue;
    }
    list.push(def as { readonly name: string });
    entryOf.set(def, entry);
  }
  if (problems.length > 0) throw new ServeConfigError(problems);
  return {
    agents: found.agents as unknown as AgentDefinition[],
    tools: found.tools as unknown as ToolDefinition[],
    workflows: found.workflows as unknown as WorkflowDefinition[],
    entryOf,
  };
}

/** What {@link withCode} extends: a configuration's definitions and its `code:` entries. */
export interface WithCode {
  readonly agents: readonly AgentDefinition[];
  readonly tools: readonly ToolDefinition[];
  readonly workflows: readonly WorkflowDefinition[];
  readonly code: readonly CodeEntry[];
}

/**
 * `config` with the definitions of its `code:` loaded and added to its agents, tools and
 * workflows — what `createRuntime` and the workflow engine are then given. Rejects as
 * {@link loadCode} does.
 */
export async function withCode<T extends WithCode>(config: T): Promise<T> {
  if (config.code.length === 0) return config;
  const loaded = await loadCode(config.code);
  return {
    ...config,
    agents: [...config.agents, ...loaded.agents],
    tools: [...config.tools, ...loaded.tools],
    workflows: [...config.workflows, ...loaded.workflows],
  };
}
