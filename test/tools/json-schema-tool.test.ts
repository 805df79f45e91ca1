import { describe, expect, it } from 'vitest';
import { SchemaViolationError } from '../../src/errors/schema-violation-error.js';
import { defineJsonSchemaTool } from '../../src/tools/define-tool.js';
import { compileJsonSchema, checkJsonSchema } from '../../src/tools/json-schema.js';

const addSchema = {
  type: 'object',
  properties: { a: { type: 'number' }, b: { type: 'number' } },
  required: ['a', 'b'],
  additionalProperties: false,
};

describe('tools known only by a JSON Schema (ajv, draft 2020-12)', () => {
  const add = defineJsonSchemaTool<{ a: number; b: number }, { sum: number }>({
    name: 'add',
    description: 'Adds two numbers',
    parameters: addSchema,
    handler: ({ a, b }) => ({ sum: a + b }),
  });

  it('passes valid arguments through and lists its schema as given', () => {
    expect(add.validate({ a: 1, b: 2 })).toEqual({ a: 1, b: 2 });
    expect(add.parameters).toBe(addSchema);
  });

  it('lists the path of every problem: wrong types, missing and extra properties', () => {
    let caught: unknown;
    try {
      add.validate({ a: 'one', c: 3 });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(SchemaViolationError);
    const paths = (caught as SchemaViolationError).issues.map((i) => i.path);
    expect(paths).toEqual(expect.arrayContaining([['a'], ['b'], ['c']]));
    expect((caught as SchemaViolationError).code).toBe('SCHEMA_VIOLATION');
  });

  it('refuses a schema that is not valid draft 2020-12, naming the tool', () => {
    expect(() =>
      defineJsonSchemaTool({
        name: 'broken',
        description: '',
        parameters: { type: 'object', properties: { a: { type: 'numbr' } } },
        handler: () => null,
      }),
    ).toThrow(/the JSON Schema of tool broken/);
  });

  it('uses 2020-12 semantics (prefixItems) and reads another declared dialect only when asked', () => {
    const tuple = compileJsonSchema('tuple', {
      type: 'array',
      prefixItems: [{ type: 'string' }, { type: 'number' }],
      items: false,
    });
    expect(checkJsonSchema('tuple', tuple, ['a', 1])).toEqual(['a', 1]);
    expect(() => checkJsonSchema('tuple', tuple, ['a', 1, 2])).toThrow(SchemaViolationError);

    const draft7 = { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' };
    expect(() => compileJsonSchema('d7', draft7)).toThrow(SchemaViolationError);
    expect(() => compileJsonSchema('d7', draft7, { anyDialect: true })).not.toThrow();
  });
});

describe('schemas with an $id (regression: the second compile failed as a SCHEMA_VIOLATION)', () => {
  it('compiles the same $id schema twice (two managers, or a manager and the runtime)', () => {
    const schema = {
      $id: 'https://example.test/tools/lookup.json',
      type: 'object',
      properties: { q: { type: 'string' } },
      required: ['q'],
    };
    const first = compileJsonSchema('tool lookup', schema);
    const second = compileJsonSchema('tool lookup', { ...schema });
    expect(first({ q: 'x' })).toBe(true);
    expect(second({ q: 'x' })).toBe(true);
    expect(second({})).toBe(false);
  });

  it('keeps two different schemas under one $id apart', () => {
    const id = 'https://example.test/tools/same-id.json';
    const numbers = compileJsonSchema('tool a', {
      $id: id,
      type: 'object',
      properties: { n: { type: 'number' } },
      required: ['n'],
    });
    const strings = compileJsonSchema('tool b', {
      $id: id,
      type: 'object',
      properties: { s: { type: 'string' } },
      required: ['s'],
    });
    expect(numbers({ n: 1 })).toBe(true);
    expect(strings({ s: 'x' })).toBe(true);
    expect(strings({ n: 1 })).toBe(false);
  });
});
