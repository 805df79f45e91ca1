/** @module Function tools declared with zod, and their JSON Schema menu entry (NERVE-4011). */
import { z } from 'zod';
import type { ExecContext } from '../context/exec-context.js';

/** A JSON Schema document (draft 2020-12). */
export type JsonSchema = Record<string, unknown>;

/** The handler of a function tool: gets arguments already validated against `input`. */
export type ToolHandler<TArgs, TOutput> = (
  args: TArgs,
  ctx: ExecContext,
) => Promise<TOutput> | TOutput;

/** What {@link defineTool} takes. */
export interface ToolSpec<TSchema extends z.ZodType, TOutput> {
  /** Unique tool name, as models and menus see it. */
  readonly name: string;
  readonly description: string;
  /** The arguments' schema; arguments are validated with it before every call. */
  readonly input: TSchema;
  readonly handler: ToolHandler<z.output<TSchema>, TOutput>;
  /** Roles the caller's context must all have (the tool's own permission layer). */
  readonly requiredRoles?: readonly string[];
  /** Per-call timeout; default 30 000 ms. */
  readonly timeoutMs?: number;
}

/** A declared tool, ready to register with a runtime. */
export interface ToolDefinition<TArgs = unknown, TOutput = unknown> {
  readonly kind: 'tool';
  readonly name: string;
  readonly description: string;
  readonly input: z.ZodType<TArgs>;
  /** JSON Schema draft 2020-12 of the arguments, generated from `input`. */
  readonly parameters: JsonSchema;
  /** Runs the tool on validated arguments. (A method, so any tool fits `ToolDefinition`.) */
  handler(args: TArgs, ctx: ExecContext): Promise<TOutput> | TOutput;
  readonly requiredRoles: readonly string[];
  readonly timeoutMs: number;
}

/** The default per-call tool timeout (Nerva's MCP default). */
export const DEFAULT_TOOL_TIMEOUT_MS = 30_000;

const NAME = /^[A-Za-z0-9_.:-]{1,128}$/;

/**
 * Declares a function tool. Arguments are validated against `input` before each call;
 * a violation is `SCHEMA_VIOLATION` and the handler never runs.
 *
 * @example
 * const add = defineTool({
 *   name: 'add',
 *   description: 'Adds two numbers',
 *   input: z.object({ a: z.number(), b: z.number() }).strict(),
 *   handler: ({ a, b }) => ({ sum: a + b }),
 * });
 */
export function defineTool<TSchema extends z.ZodType, TOutput>(
  spec: ToolSpec<TSchema, TOutput>,
): ToolDefinition<z.output<TSchema>, TOutput> {
  if (typeof spec.name !== 'string' || !NAME.test(spec.name)) {
    throw new TypeError(
      `defineTool: name must match ${NAME.source}, got ${JSON.stringify(spec.name)}`,
    );
  }
  if (typeof spec.description !== 'string')
    throw new TypeError(`defineTool(${spec.name}): description must be a string`);
  if (!(spec.input instanceof z.ZodType))
    throw new TypeError(`defineTool(${spec.name}): input must be a zod schema`);
  if (typeof spec.handler !== 'function')
    throw new TypeError(`defineTool(${spec.name}): handler must be a function`);
  const timeoutMs = spec.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
  if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new RangeError(
      `defineTool(${spec.name}): timeoutMs must be a positive number, got ${timeoutMs}`,
    );
  }
  return {
    kind: 'tool',
    name: spec.name,
    description: spec.description,
    input: spec.input as z.ZodType<z.output<TSchema>>,
    parameters: z.toJSONSchema(spec.input, { target: 'draft-2020-12', io: 'input' }),
    handler: spec.handler,
    requiredRoles: [...(spec.requiredRoles ?? [])],
    timeoutMs,
  };
}
