/**
 * @module What `axon serve` registers on a configuration, as `axon list` prints it: the
 * agents, tools, workflows, durable agents and schedules — the file's (`code:`, `agents:`,
 * `tools:`, `workflows:`, `durable_agents:`, `schedules:`) and the examples' that serve adds
 * by default — and the examples `axon run` takes. It loads the modules the file names, as
 * serve does at start, and starts nothing.
 */
import { relative } from 'node:path';
import { EXAMPLE_DURABLE_AGENTS, EXAMPLE_TOOLS, EXAMPLES } from '../../../examples/index.js';
import { loadCode, type CodeEntry } from './served-code.js';
import { loadDurableAgents } from './served-durable.js';
import { servedWorkflows } from './served-workflows.js';
import type { ServeConfig } from './serve-config-schema.js';

/** The kinds of {@link ServedItem}, in the order `axon list` prints them. */
export const SERVED_KINDS = [
  'agent',
  'tool',
  'workflow',
  'durable agent',
  'schedule',
  'example',
] as const;
/** One of {@link SERVED_KINDS}. */
export type ServedKind = (typeof SERVED_KINDS)[number];

/** One thing a configuration registers. */
export interface ServedItem {
  readonly kind: ServedKind;
  readonly name: string;
  /** Where it is declared: `axon.yaml line 9`, `examples/trip-planner`, `examples`. */
  readonly from: string;
  readonly description: string;
}

/** The examples' folder, as {@link ServedItem.from} names it. */
const EXAMPLES_FROM = 'examples';

/**
 * What `axon serve` on `config` registers, kind by kind (the file's before the examples'),
 * then the examples `axon run` takes. Rejects with `ServeConfigError` as serve would at start:
 * a module of `code:` or `durable_agents:` that cannot be loaded or has no such definition.
 */
export async function servedItems(config: ServeConfig, cwd: string): Promise<ServedItem[]> {
  const file =
    config.configFile === null ? 'axon.yaml' : relative(cwd, config.configFile) || 'axon.yaml';
  const at = (line: number | null): string => (line === null ? file : `${file} line ${line}`);
  const ofFile = (key: string): string => at(config.lineOf(key));
  const code = await loadCode(config.code);
  const fromCode = (def: object, fallback: string): string => {
    const entry: CodeEntry | undefined = code.entryOf.get(def);
    return entry === undefined ? fallback : at(entry.line);
  };
  const durable = await loadDurableAgents(config.durableAgents);
  const examples = Object.entries(EXAMPLES).map(([name, build]) => ({ name, example: build() }));
  const items: ServedItem[] = [];
  const add = (kind: ServedKind, name: string, from: string, description: string): void => {
    items.push({ kind, name, from, description });
  };

  code.agents.forEach((a) => {
    add('agent', a.name, fromCode(a, file), a.description);
  });
  config.agents.forEach((a, i) => {
    add('agent', a.name, ofFile(`agents.${i}`), a.description);
  });
  for (const { name, example } of examples) {
    for (const a of example.agents) add('agent', a.name, `${EXAMPLES_FROM}/${name}`, a.description);
  }

  code.tools.forEach((t) => {
    add('tool', t.name, fromCode(t, file), t.description);
  });
  config.tools.forEach((t, i) => {
    add('tool', t.name, ofFile(`tools.${i}`), t.description);
  });
  for (const { name, example } of examples) {
    for (const t of example.tools) add('tool', t.name, `${EXAMPLES_FROM}/${name}`, t.description);
  }
  for (const t of EXAMPLE_TOOLS) add('tool', t.name, EXAMPLES_FROM, t.description);

  const served = servedWorkflows([...config.workflows, ...code.workflows]);
  for (const w of served.workflows) {
    const fromYaml = config.workflows.includes(w);
    const from = fromYaml
      ? ofFile(`workflows.${w.name}`)
      : fromCode(w, `${EXAMPLES_FROM}/${w.name}`);
    add('workflow', w.name, from, w.description);
  }

  config.durableAgents.forEach((entry, i) => {
    const def = durable[i];
    if (def !== undefined) add('durable agent', def.name, at(entry.line), def.description);
  });
  // As serve: not on a fleet keeping its records in PostgreSQL (serve-command.ts).
  if (!(config.redis && config.postgres)) {
    for (const d of EXAMPLE_DURABLE_AGENTS)
      add('durable agent', d.name, EXAMPLES_FROM, d.description);
  }

  config.schedules.forEach((s, i) => {
    const zone = s.timezone === undefined ? '' : ` (${s.timezone})`;
    add('schedule', s.name, ofFile(`schedules.${i}`), `${s.agent} ${s.key} at "${s.cron}"${zone}`);
  });

  for (const { name, example } of examples) {
    add('example', name, `${EXAMPLES_FROM}/${name}`, example.description);
  }
  return items;
}
