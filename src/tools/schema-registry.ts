/**
 * @module JSON Schemas by URI: what a fact's `schema_uri` names (NERVE-4004). Each schema is
 * checked and compiled when registered, so a bad one is refused then, not at first use.
 */
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { canonicalJson } from '../context/canonical-json.js';
import { ConflictError } from '../errors/conflict-error.js';
import { compileJsonSchema, type JsonSchema } from './json-schema.js';

/** A registered schema: its document and its validator. */
interface Registered {
  readonly canonical: string;
  readonly validate: ValidateFunction;
}

/**
 * The schemas a runtime knows by URI.
 *
 * @example
 * runtime.registerSchema('https://acme.example/schemas/booking-v1', {
 *   type: 'object', properties: { city: { type: 'string' } }, required: ['city'],
 * });
 * await runtime.appendFact(runId, { type: 'booking', schema_uri: 'https://acme.example/schemas/booking-v1', data: { city: 'Rome' } });
 */
export class SchemaRegistry {
  readonly #schemas = new Map<string, Registered>();

  /**
   * Registers `schema` (JSON Schema 2020-12) under `uri`. Registering the same schema again
   * changes nothing; another schema under a taken URI is refused with `ConflictError` (a URI
   * names one schema for good). Throws `SchemaViolationError` when `schema` is not valid
   * JSON Schema, `TypeError` for an empty URI.
   */
  register(uri: string, schema: JsonSchema): void {
    if (typeof uri !== 'string' || uri.length === 0) {
      throw new TypeError('registerSchema: uri must be a non-empty string');
    }
    const canonical = canonicalJson(schema);
    const known = this.#schemas.get(uri);
    if (known) {
      if (known.canonical === canonical) return;
      throw new ConflictError(`another schema is registered at "${uri}"`, {
        details: { schema_uri: uri },
      });
    }
    const validate = compileJsonSchema(`schema ${uri}`, schema);
    this.#schemas.set(uri, { canonical, validate });
  }

  /** The validator of the schema at `uri`, or `undefined`. */
  validator(uri: string): ValidateFunction | undefined {
    return this.#schemas.get(uri)?.validate;
  }

  /** The registered URIs, in registration order. */
  uris(): string[] {
    return [...this.#schemas.keys()];
  }
}
