/**
 * @module The `ToolManager` interface (Nerva's): tools listed with their JSON Schemas for a
 * context, and called by name with statuses instead of exceptions. Function tools, MCP
 * servers and composites of them all implement it, and all pass one conformance suite.
 */
import type { Clock } from '../context/clock.js';
import type { ExecContext } from '../context/exec-context.js';
import type { AxonError } from '../errors/axon-error.js';
import type { JsonSchema } from './json-schema.js';
import type { ToolStatus } from './tool-result.js';

/** A tool as a menu shows it. */
export interface ToolInfo {
  readonly name: string;
  readonly description: string;
  /** The arguments' JSON Schema (draft 2020-12). */
  readonly parameters: JsonSchema;
  /** Roles a caller's context must all have (the tool's own permission layer). */
  readonly requiredPermissions: readonly string[];
}

/** How a call through a manager ended. */
export interface ToolCallResult<TOutput = unknown> {
  readonly status: ToolStatus;
  /** The tool's output on success, else `null`. */
  readonly output: TOutput | null;
  /** The typed error when the status is not `success`. */
  readonly error: AxonError | null;
  readonly durationMs: number;
}

/** A source of tools. */
export interface ToolManager {
  /** For reports (a duplicate tool names the managers involved). */
  readonly name: string;
  /**
   * The tools `ctx` may call: those its `allowedTools` admit and whose required
   * permissions its roles cover.
   */
  discover(ctx: ExecContext): Promise<ToolInfo[]>;
  /** The tool named `name` whoever asks, or `null` when this manager has none. */
  describe(name: string): Promise<ToolInfo | null>;
  /**
   * Calls a tool. Never rejects: an unknown tool is `not_found`, a refused permission
   * `permission_denied`, arguments that break the schema `error` with
   * `SchemaViolationError` (the tool is not called), a call past its time `timeout`.
   */
  call(name: string, args: unknown, ctx: ExecContext): Promise<ToolCallResult>;
  /** Releases what it holds (processes, connections). */
  close(): Promise<void>;
}

/**
 * A function that ends a call started now on `clock`: the result with its duration. Every
 * manager builds its results with it.
 */
export function callTimer<TOutput = unknown>(
  clock: Clock,
): (
  status: ToolStatus,
  output: TOutput | null,
  error: AxonError | null,
) => ToolCallResult<TOutput> {
  const startedAt = clock.now();
  return (status, output, error) => ({
    status,
    output,
    error,
    durationMs: clock.now() - startedAt,
  });
}

/** Which permission layer refuses `ctx` the tool, or `null` if neither does. */
export function toolRefusal(
  info: Pick<ToolInfo, 'name' | 'requiredPermissions'>,
  ctx: ExecContext,
): 'context' | 'required_roles' | null {
  if (!ctx.canUseTool(info.name)) return 'context';
  if (!info.requiredPermissions.every((r) => ctx.hasRole(r))) return 'required_roles';
  return null;
}
