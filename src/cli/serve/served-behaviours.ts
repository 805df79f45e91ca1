/**
 * @module What `axon.yaml` adds to the agents and tools `axon serve` (and `axon worker`)
 * run: container placement's options (`container:`, snake_case keys of `ContainerOptions`)
 * and agents and tools that run in containers (`agents:` and `tools:`, each naming a
 * JavaScript module — relative to the file — and its export). A YAML file cannot hold a
 * handler, so container placement is the one placement declared here.
 *
 * @example
 * container: { image: localhost/axon-node:latest, memory_mb: 256, warm: 1 }
 * agents:
 *   - { name: summarize, placement: container, module: ./agents.mjs, export: summarize }
 * tools:
 *   - name: wordcount
 *     description: Counts the words of a text
 *     placement: container
 *     module: ./tools.mjs
 *     export: wordcount
 *     parameters: { type: object, properties: { text: { type: string } }, required: [text] }
 */
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { defineAgent } from '../../actors/define-agent.js';
import type { AgentDefinition } from '../../actors/agent-runtime.js';
import {
  CONTAINER_ENGINES,
  resolveContainerOptions,
  type ContainerOptions,
} from '../../placement/container/container-options.js';
import { defineJsonSchemaTool, type ToolDefinition } from '../../tools/define-tool.js';

const whole = z.number().int().min(0);

/** `container:` in `axon.yaml`. */
export const containerConfigSchema = z.strictObject({
  engine: z.enum(CONTAINER_ENGINES).optional(),
  runtime: z.string().min(1).optional(),
  image: z.string().min(1).optional(),
  memory_mb: whole.optional(),
  cpus: z.number().positive().optional(),
  pids: whole.optional(),
  tmpfs_mb: whole.optional(),
  nofile: whole.optional(),
  user: z.string().min(1).optional(),
  network: z.string().min(1).optional(),
  warm: whole.optional(),
  reuse: z.boolean().optional(),
  max_containers: whole.optional(),
  max_queue: whole.optional(),
  idle_timeout_ms: whole.optional(),
});

const behaviour = {
  name: z.string().min(1),
  description: z.string().optional(),
  placement: z.literal('container', {
    error:
      'must be "container": a YAML file cannot hold a handler (declare other placements in code)',
  }),
  module: z.string().min(1),
  export: z.string().min(1),
  timeout_ms: z.number().int().positive().optional(),
};

/** An entry of `agents:`. */
export const agentConfigSchema = z.strictObject(behaviour);

/** An entry of `tools:`. */
export const toolConfigSchema = z.strictObject({
  ...behaviour,
  description: z.string(),
  /** The arguments' JSON Schema (draft 2020-12), checked on the host before every call. */
  parameters: z.record(z.string(), z.unknown()),
  required_roles: z.array(z.string().min(1)).optional(),
});

/** `container:` as `createRuntime`'s `container` option. */
export function containerOptionsOf(c: z.output<typeof containerConfigSchema>): ContainerOptions {
  const names: Record<string, keyof ContainerOptions> = {
    memory_mb: 'memoryMb',
    tmpfs_mb: 'tmpfsMb',
    max_containers: 'maxContainers',
    max_queue: 'maxQueue',
    idle_timeout_ms: 'idleTimeoutMs',
  };
  return Object.fromEntries(Object.entries(c).map(([key, value]) => [names[key] ?? key, value]));
}

/** `module` (relative to the file) as a file URL. */
const moduleOf = (fromFile: (path: string) => string, path: string): string =>
  pathToFileURL(fromFile(path)).href;

/** The agents of `agents:`. Throws the declaration's `TypeError`, naming the agent. */
export function containerAgentsOf(
  agents: readonly z.output<typeof agentConfigSchema>[],
  fromFile: (path: string) => string,
): AgentDefinition[] {
  return agents.map((a) =>
    defineAgent({
      name: a.name,
      placement: 'container',
      module: moduleOf(fromFile, a.module),
      export: a.export,
      ...(a.description === undefined ? {} : { description: a.description }),
      ...(a.timeout_ms === undefined ? {} : { timeoutMs: a.timeout_ms }),
    }),
  );
}

/** The tools of `tools:`. Throws the declaration's `TypeError` or `SchemaViolationError`. */
export function containerToolsOf(
  tools: readonly z.output<typeof toolConfigSchema>[],
  fromFile: (path: string) => string,
): ToolDefinition[] {
  return tools.map((t) =>
    defineJsonSchemaTool({
      name: t.name,
      description: t.description,
      parameters: t.parameters,
      placement: 'container',
      module: moduleOf(fromFile, t.module),
      export: t.export,
      ...(t.timeout_ms === undefined ? {} : { timeoutMs: t.timeout_ms }),
      ...(t.required_roles === undefined ? {} : { requiredRoles: t.required_roles }),
    }),
  );
}

/** What {@link containedOf} reads of the file. */
interface ContainedKeys {
  readonly container?: z.output<typeof containerConfigSchema> | undefined;
  readonly agents?: readonly z.output<typeof agentConfigSchema>[] | undefined;
  readonly tools?: readonly z.output<typeof toolConfigSchema>[] | undefined;
}

/**
 * `container:`, `agents:` and `tools:`, checked: each problem goes to `report` with its key
 * (`named`: the message does not name the key itself), and what has one is left out.
 */
export function containedOf(
  file: ContainedKeys,
  fromFile: (path: string) => string,
  report: (key: string, message: string, named: boolean) => void,
): {
  readonly container: ContainerOptions | null;
  readonly agents: readonly AgentDefinition[];
  readonly tools: readonly ToolDefinition[];
} {
  let container: ContainerOptions | null = null;
  if (file.container !== undefined) {
    try {
      container = containerOptionsOf(file.container);
      resolveContainerOptions(container);
    } catch (err) {
      if (!(err instanceof RangeError)) throw err;
      report('container', err.message, false);
    }
  }
  const declared = <T>(key: string, make: () => T[]): T[] => {
    try {
      return make();
    } catch (err) {
      report(key, (err as Error).message, true);
      return [];
    }
  };
  return {
    container,
    agents: declared('agents', () => containerAgentsOf(file.agents ?? [], fromFile)),
    tools: declared('tools', () => containerToolsOf(file.tools ?? [], fromFile)),
  };
}
