/**
 * @module What an MCP client sees of a runtime (docs/mcp.md): its agents, its function tools
 * and its durable agents as MCP tools, each with the JSON Schema of its arguments, and what
 * each tool name stands for. An agent is `agent_<name>` taking `{ message, args? }`; a
 * function tool keeps its name and its own schema; a durable agent is `actor_<name>` taking
 * `{ key, message }`, its `input` schema nested as `message`. Workflows' role agents are not
 * shown (as the front door's registry leaves them out): a thread drives them.
 */
import { z } from 'zod';
import { ACTOR_KEY } from '../../durable/actor-address.js';
import type { Logger } from '../../observability/logger.js';
import type { Runtime } from '../../runtime/runtime.js';
import { compileJsonSchema, type JsonSchema } from '../../tools/json-schema.js';
import { isTurnAgent } from '../../workflows/turn-agent.js';
import type { ValidateFunction } from 'ajv/dist/2020.js';

/** The prefix of an agent's tool name. */
export const AGENT_TOOL_PREFIX = 'agent_';
/** The prefix of a durable agent's tool name. */
export const ACTOR_TOOL_PREFIX = 'actor_';

/** What an MCP tool stands for. */
export type McpTarget =
  | { readonly kind: 'agent'; readonly name: string }
  | { readonly kind: 'tool'; readonly name: string; readonly validate: ValidateFunction }
  | { readonly kind: 'actor'; readonly name: string };

/** An MCP tool as `tools/list` answers it, with what it stands for. */
export interface McpTool {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly inputSchema: JsonSchema & { readonly type: 'object' };
  readonly target: McpTarget;
}

/** The arguments of an agent's tool: API.md's `agent` step input, less the agent. */
export const agentArgumentsSchema = z.strictObject({
  message: z.string(),
  args: z.record(z.string(), z.unknown()).optional(),
});

const AGENT_INPUT: JsonSchema & { readonly type: 'object' } = {
  type: 'object',
  properties: {
    message: { type: 'string', description: "The agent's message" },
    args: {
      type: 'object',
      description: 'Structured arguments the agent reads beside its message',
    },
  },
  required: ['message'],
  additionalProperties: false,
};

/**
 * `name` as an MCP tool name: every character outside `A-Z a-z 0-9 _ -` becomes `_` (an
 * axon name may hold `.` and `:`, which MCP hosts and model APIs refuse in tool names).
 */
export function mcpName(prefix: string, name: string): string {
  return `${prefix}${name.replace(/[^A-Za-z0-9_-]/g, '_')}`;
}

/** The JSON Schema of a durable agent's tool: its key, and its `input` as `message`. */
function actorInput(input: z.ZodType | null): JsonSchema & { readonly type: 'object' } {
  let message: JsonSchema = { description: "The actor's message (any JSON value)" };
  if (input !== null) {
    const { $schema: _dialect, ...schema } = z.toJSONSchema(input, {
      io: 'input',
      unrepresentable: 'any',
    }) as JsonSchema;
    message = { ...schema, description: "The actor's message, as the agent's input schema has it" };
  }
  return {
    type: 'object',
    properties: {
      key: {
        type: 'string',
        pattern: ACTOR_KEY.source,
        description:
          'Which actor: the same key is the same actor, with its state, across calls and restarts',
      },
      message,
    },
    required: ['key', 'message'],
    additionalProperties: false,
  };
}

/** A function tool's parameters as an MCP `inputSchema` (whose root must say `object`). */
function toolInput(parameters: JsonSchema): JsonSchema & { readonly type: 'object' } {
  const { $schema: _dialect, ...schema } = parameters;
  return { ...schema, type: 'object' };
}

/**
 * The MCP tools of a runtime, read again whenever its registry changes
 * (`runtime.catalogVersion`). The function tools listed are those a step's context may call:
 * those without required roles (a submitted step's context has none).
 */
export class McpCatalog {
  readonly #runtime: Runtime;
  readonly #logger: Logger;
  #version = -1;
  #tools: readonly McpTool[] = [];
  #byName = new Map<string, McpTool>();

  constructor(runtime: Runtime, logger: Logger) {
    this.#runtime = runtime;
    this.#logger = logger;
  }

  /** Every MCP tool, function tools first, then agents, then durable agents. */
  list(): readonly McpTool[] {
    this.#refresh();
    return this.#tools;
  }

  /** The tool named `name`, or `undefined`. */
  find(name: string): McpTool | undefined {
    this.#refresh();
    return this.#byName.get(name);
  }

  #refresh(): void {
    const runtime = this.#runtime;
    // Registering an agent (durable ones too) or a function tool moves the version.
    if (runtime.catalogVersion === this.#version) return;
    this.#version = runtime.catalogVersion;
    const durable = runtime.durable.list();
    const durableNames = new Set(durable.map((d) => d.name));
    const made: McpTool[] = [];
    for (const tool of runtime.discoverTools(runtime.createContext())) {
      made.push({
        name: mcpName('', tool.name),
        title: tool.name,
        description: tool.description,
        inputSchema: toolInput(tool.parameters),
        target: {
          kind: 'tool',
          name: tool.name,
          validate: compileJsonSchema(`tool ${tool.name}`, tool.parameters),
        },
      });
    }
    for (const agent of runtime.listAgents()) {
      if (durableNames.has(agent.name) || isTurnAgent(agent.name)) continue;
      made.push({
        name: mcpName(AGENT_TOOL_PREFIX, agent.name),
        title: `agent ${agent.name}`,
        description: `${agent.description} (axon agent "${agent.name}": each call is a step of the session's run)`,
        inputSchema: AGENT_INPUT,
        target: { kind: 'agent', name: agent.name },
      });
    }
    for (const def of durable) {
      made.push({
        name: mcpName(ACTOR_TOOL_PREFIX, def.name),
        title: `durable agent ${def.name}`,
        description: `${def.description} (axon durable agent "${def.name}": one actor per key, keeping its state between messages)`,
        inputSchema: actorInput(def.input),
        target: { kind: 'actor', name: def.name },
      });
    }
    const byName = new Map<string, McpTool>();
    for (const tool of made) {
      const taken = byName.get(tool.name);
      if (taken) {
        // Two axon names that read the same once made MCP names: the first keeps it.
        this.#logger.warn(
          { mcp_tool: tool.name, shown: taken.title, hidden: tool.title },
          'two axon names make the same MCP tool name: the second is not listed',
        );
        continue;
      }
      byName.set(tool.name, tool);
    }
    this.#byName = byName;
    this.#tools = [...byName.values()];
  }
}
