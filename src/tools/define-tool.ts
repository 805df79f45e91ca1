/**
 * @module Function tools, declared with zod or with a JSON Schema, and their menu entry
 * (NERVE-4011). Either way arguments are validated before the handler runs.
 */
import { z } from 'zod';
import type { ExecContext } from '../context/exec-context.js';
import { SchemaViolationError } from '../errors/schema-violation-error.js';
import { checkJsonSchema, compileJsonSchema, type JsonSchema } from './json-schema.js';
import { zodIssues } from './zod-issues.js';
import { containerModulePath } from './container-module.js';

export type { JsonSchema } from './json-schema.js';

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
  /** JSON Schema draft 2020-12 of the arguments (generated from zod, or as given). */
  readonly parameters: JsonSchema;
  /**
   * The arguments, checked: returns them parsed, or throws `SchemaViolationError` listing
   * the path of every problem. Called before every call; the handler never sees bad ones.
   */
  validate(args: unknown): TArgs;
  /** Runs the tool on validated arguments. (A method, so any tool fits `ToolDefinition`.) */
  handler(args: TArgs, ctx: ExecContext): Promise<TOutput> | TOutput;
  readonly requiredRoles: readonly string[];
  readonly timeoutMs: number;
  /**
   * Container placement: the handler is the export `export` of the JavaScript module at
   * `module` (an absolute path on the host), run in a container of the runtime's pool; the
   * definition's own `handler` only says so.
   */
  readonly container?: { readonly module: string; readonly export: string };
}

/** What {@link defineTool} takes for a tool that runs in a container. */
export interface ContainerToolSpec<TSchema extends z.ZodType> {
  readonly name: string;
  readonly description: string;
  readonly input: TSchema;
  readonly placement: 'container';
  /**
   * A file URL (`import.meta.url`) or an absolute path of a `.js` / `.mjs` / `.cjs` file, whose
   * export `export` is the tool's handler `(args, ctx) => output` or a tool definition.
   */
  readonly module: string;
  readonly export: string;
  readonly requiredRoles?: readonly string[];
  readonly timeoutMs?: number;
}

/** The default per-call tool timeout (Nerva's MCP default). */
export const DEFAULT_TOOL_TIMEOUT_MS = 30_000;

const NAME = /^[A-Za-z0-9_.:-]{1,128}$/;

/** Checks what every tool declaration shares; returns the timeout. */
function checkCommon(
  fn: string,
  spec: { name: unknown; description: unknown; handler: unknown; timeoutMs?: number | undefined },
): number {
  if (typeof spec.name !== 'string' || !NAME.test(spec.name)) {
    throw new TypeError(`${fn}: name must match ${NAME.source}, got ${JSON.stringify(spec.name)}`);
  }
  if (typeof spec.description !== 'string')
    throw new TypeError(`${fn}(${spec.name}): description must be a string`);
  if (typeof spec.handler !== 'function')
    throw new TypeError(`${fn}(${spec.name}): handler must be a function`);
  const timeoutMs = spec.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
  if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new RangeError(
      `${fn}(${spec.name}): timeoutMs must be a positive number, got ${timeoutMs}`,
    );
  }
  return timeoutMs;
}

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
  spec: ToolSpec<TSchema, TOutput> | ContainerToolSpec<TSchema>,
): ToolDefinition<z.output<TSchema>, TOutput> {
  if (!(spec.input instanceof z.ZodType))
    throw new TypeError(`defineTool(${JSON.stringify(spec.name)}): input must be a zod schema`);
  const container =
    'placement' in spec || 'module' in spec ? containerOf('defineTool', spec) : null;
  const handler = container
    ? containedHandler(spec.name)
    : (spec as ToolSpec<TSchema, TOutput>).handler;
  const timeoutMs = checkCommon('defineTool', { ...spec, handler });
  const input = spec.input as z.ZodType<z.output<TSchema>>;
  return {
    kind: 'tool',
    name: spec.name,
    description: spec.description,
    parameters: z.toJSONSchema(spec.input, { target: 'draft-2020-12', io: 'input' }),
    validate(args: unknown) {
      const parsed = input.safeParse(args);
      if (!parsed.success)
        throw new SchemaViolationError(`tool ${spec.name}`, zodIssues(parsed.error));
      return parsed.data;
    },
    handler,
    requiredRoles: [...(spec.requiredRoles ?? [])],
    timeoutMs,
    ...(container ? { container } : {}),
  };
}

/** Where a container tool's handler is: its `placement`, `module` and `export`, checked. */
function containerOf(
  fn: string,
  spec: {
    readonly name: string;
    readonly placement?: unknown;
    readonly module?: unknown;
    readonly export?: unknown;
  },
): { readonly module: string; readonly export: string } {
  const where = `${fn}(${spec.name})`;
  if (spec.placement !== 'container') {
    throw new TypeError(
      `${where}: placement must be "container" (or absent, with a handler), got ${JSON.stringify(spec.placement)}`,
    );
  }
  const module = containerModulePath(where, spec.module);
  if (typeof spec.export !== 'string' || spec.export.length === 0) {
    throw new TypeError(`${where}: a container tool needs "export" (a non-empty string)`);
  }
  return { module, export: spec.export };
}

/** The `handler` of a container tool's definition: it says where the tool runs. */
function containedHandler(name: string): () => never {
  return () => {
    throw new TypeError(
      `tool ${name} runs in a container: call it through a runtime (runtime.callTool), not directly`,
    );
  };
}

/** What {@link defineJsonSchemaTool} takes. */
export interface JsonSchemaToolSpec<TArgs, TOutput> {
  readonly name: string;
  readonly description: string;
  /** The arguments' JSON Schema (draft 2020-12); arguments are validated with ajv. */
  readonly parameters: JsonSchema;
  readonly handler: ToolHandler<TArgs, TOutput>;
  readonly requiredRoles?: readonly string[];
  readonly timeoutMs?: number;
}

/** What {@link defineJsonSchemaTool} takes for a tool that runs in a container. */
export type JsonSchemaContainerToolSpec = Omit<JsonSchemaToolSpec<unknown, unknown>, 'handler'> &
  Pick<ContainerToolSpec<z.ZodType>, 'placement' | 'module' | 'export'>;

/**
 * Declares a function tool known only by a JSON Schema (one from a flow document or
 * another system). The schema must be valid draft 2020-12 (`SchemaViolationError`
 * otherwise); arguments are validated with ajv's 2020-12 build before each call.
 *
 * @example
 * const add = defineJsonSchemaTool<{ a: number; b: number }, { sum: number }>({
 *   name: 'add',
 *   description: 'Adds two numbers',
 *   parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'], additionalProperties: false },
 *   handler: ({ a, b }) => ({ sum: a + b }),
 * });
 */
export function defineJsonSchemaTool<TArgs = Record<string, unknown>, TOutput = unknown>(
  spec: JsonSchemaToolSpec<TArgs, TOutput> | JsonSchemaContainerToolSpec,
): ToolDefinition<TArgs, TOutput> {
  const container =
    'placement' in spec || 'module' in spec ? containerOf('defineJsonSchemaTool', spec) : null;
  const handler = container
    ? containedHandler(spec.name)
    : (spec as JsonSchemaToolSpec<TArgs, TOutput>).handler;
  const timeoutMs = checkCommon('defineJsonSchemaTool', { ...spec, handler });
  if (typeof spec.parameters !== 'object' || Array.isArray(spec.parameters)) {
    throw new TypeError(
      `defineJsonSchemaTool(${spec.name}): parameters must be a JSON Schema object`,
    );
  }
  const validate = compileJsonSchema<TArgs>(`tool ${spec.name}`, spec.parameters);
  return {
    kind: 'tool',
    name: spec.name,
    description: spec.description,
    parameters: spec.parameters,
    validate: (args: unknown) => checkJsonSchema<TArgs>(`tool ${spec.name}`, validate, args),
    handler,
    requiredRoles: [...(spec.requiredRoles ?? [])],
    timeoutMs,
    ...(container ? { container } : {}),
  };
}
