/** @module Registered function tools: lookup, permission layers and the discovery menu. */
import type { ExecContext } from '../context/exec-context.js';
import { ConflictError } from '../errors/conflict-error.js';
import type { JsonSchema, ToolDefinition } from './define-tool.js';

/** A tool as a menu shows it (Nerva's `discover`). */
export interface ToolInfo {
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonSchema;
  readonly requiredPermissions: readonly string[];
}

/** Why a context may not call a tool, or `null` if it may. */
export type ToolRefusal = 'context' | 'required_roles' | null;

/** The function tools of a runtime, by name. */
export class ToolRegistry {
  readonly #tools = new Map<string, ToolDefinition>();

  /** Registers a tool; a second tool of the same name is refused with `ConflictError`. */
  register(tool: ToolDefinition): void {
    if (this.#tools.has(tool.name))
      throw new ConflictError(`a tool named "${tool.name}" is already registered`);
    this.#tools.set(tool.name, tool);
  }

  get(name: string): ToolDefinition | undefined {
    return this.#tools.get(name);
  }

  /**
   * Checks both permission layers: the context's own (`allowedTools`) and the tool's
   * required roles.
   */
  refusal(tool: ToolDefinition, ctx: ExecContext): ToolRefusal {
    if (!ctx.canUseTool(tool.name)) return 'context';
    if (!tool.requiredRoles.every((r) => ctx.hasRole(r))) return 'required_roles';
    return null;
  }

  /** The tools `ctx` may call, with their JSON Schemas. */
  discover(ctx: ExecContext): ToolInfo[] {
    return [...this.#tools.values()]
      .filter((t) => this.refusal(t, ctx) === null)
      .map((t) => ({
        name: t.name,
        description: t.description,
        parameters: t.parameters,
        requiredPermissions: t.requiredRoles,
      }));
  }
}
