/**
 * @module JSON Schema draft 2020-12 with ajv: compiling a tool's schema (refusing one that is
 * not valid 2020-12) and turning ajv's errors into {@link SchemaIssue}s with paths.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { SchemaViolationError, type SchemaIssue } from '../errors/schema-violation-error.js';

/** A JSON Schema document (draft 2020-12). */
export type JsonSchema = Record<string, unknown>;

// `strict: false` because schemas come from other systems (MCP servers, flows) that use
// keywords ajv's strict mode rejects (`title` in odd places, unknown formats).
const newAjv = (): Ajv2020 =>
  new Ajv2020({ allErrors: true, strict: false, validateFormats: false });
// One instance for schemas without an `$id`: ajv caches compiled schemas by identity, and
// compiling is the costly part.
const ajv = newAjv();
/**
 * Validators by the schema's JSON text, so the same schema compiled twice (an MCP tool's,
 * by its manager and by the runtime) is compiled once. A schema with an `$id` gets an ajv
 * of its own: one ajv refuses a second schema under an `$id` it has seen.
 */
const compiled = new Map<string, ValidateFunction>();

/** A JSON Pointer (`/a/0/b`) as a path (`['a', 0, 'b']`). */
function pointerPath(pointer: string): (string | number)[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
}

/** ajv's errors as issues, each with the path of the value it concerns. */
export function ajvIssues(errors: readonly ErrorObject[] | null | undefined): SchemaIssue[] {
  return (errors ?? []).map((e) => {
    const path = pointerPath(e.instancePath);
    // A missing or extra property is about the property, not the object holding it.
    const params = e.params as { missingProperty?: string; additionalProperty?: string };
    const child = params.missingProperty ?? params.additionalProperty;
    return { path: child === undefined ? path : [...path, child], message: e.message ?? e.keyword };
  });
}

/**
 * Compiles `schema` (draft 2020-12). Throws {@link SchemaViolationError} naming `subject`
 * when the schema itself is not valid JSON Schema 2020-12.
 *
 * With `anyDialect`, a schema that declares another dialect in `$schema` (MCP servers
 * commonly send draft-07) is read as 2020-12: the keywords tool schemas use (`type`,
 * `properties`, `required`, `enum`, `items` as one schema, `$ref` into `definitions`)
 * mean the same in both.
 */
export function compileJsonSchema<T = unknown>(
  subject: string,
  input: JsonSchema,
  options: { readonly anyDialect?: boolean } = {},
): ValidateFunction<T> {
  let schema = input;
  if (options.anyDialect === true && typeof schema['$schema'] === 'string') {
    const { $schema: _dialect, ...rest } = schema;
    schema = rest;
  }
  const key = JSON.stringify(schema);
  const known = compiled.get(key);
  if (known) return known as ValidateFunction<T>;
  const own = typeof schema['$id'] === 'string' ? newAjv() : ajv;
  let valid: boolean;
  try {
    valid = own.validateSchema(schema) as boolean;
  } catch (err) {
    // A `$schema` naming a dialect this build does not know (draft-07, say).
    throw new SchemaViolationError(
      `the JSON Schema of ${subject}`,
      [{ path: ['$schema'], message: err instanceof Error ? err.message : String(err) }],
      { cause: err },
    );
  }
  if (!valid) {
    throw new SchemaViolationError(`the JSON Schema of ${subject}`, ajvIssues(own.errors));
  }
  try {
    const validate = own.compile<T>(schema);
    compiled.set(key, validate as ValidateFunction);
    return validate;
  } catch (err) {
    throw new SchemaViolationError(
      `the JSON Schema of ${subject}`,
      [{ path: [], message: err instanceof Error ? err.message : String(err) }],
      { cause: err },
    );
  }
}

/**
 * `value`, typed as what `validate` checks, if it matches; else throws
 * {@link SchemaViolationError} listing each problem.
 */
export function checkJsonSchema<T>(
  subject: string,
  validate: ValidateFunction<T>,
  value: unknown,
): T {
  if (validate(value)) return value;
  throw new SchemaViolationError(subject, ajvIssues(validate.errors));
}
