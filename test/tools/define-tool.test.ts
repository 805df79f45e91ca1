import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { DEFAULT_TOOL_TIMEOUT_MS, defineTool } from '../../src/tools/define-tool.js';

const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

const noop = (): null => null;

describe('defineTool parameters (JSON Schema draft 2020-12)', () => {
  it('declares the 2020-12 dialect and describes each argument', () => {
    const tool = defineTool({
      name: 'search_flights',
      description: 'Finds flights',
      input: z.object({ from: z.string(), to: z.string(), seats: z.number().int() }).strict(),
      handler: noop,
    });

    expect(tool.parameters).toEqual({
      $schema: DRAFT_2020_12,
      type: 'object',
      properties: {
        from: { type: 'string' },
        to: { type: 'string' },
        seats: {
          type: 'integer',
          minimum: Number.MIN_SAFE_INTEGER,
          maximum: Number.MAX_SAFE_INTEGER,
        },
      },
      required: ['from', 'to', 'seats'],
      additionalProperties: false,
    });
  });

  it('marks only arguments the caller must send as required', () => {
    const tool = defineTool({
      name: 'book',
      description: 'Books a room',
      input: z
        .object({
          hotel: z.string(),
          note: z.string().optional(),
          nights: z.number().default(1),
        })
        .strict(),
      handler: noop,
    });

    expect(tool.parameters['$schema']).toBe(DRAFT_2020_12);
    expect(tool.parameters['required']).toEqual(['hotel']);
    expect(tool.parameters['additionalProperties']).toBe(false);
  });

  it('forbids additional properties in nested strict objects too', () => {
    const tool = defineTool({
      name: 'nested',
      description: 'Nested arguments',
      input: z.object({ where: z.object({ city: z.string() }).strict() }).strict(),
      handler: noop,
    });

    expect(tool.parameters['properties']).toEqual({
      where: {
        type: 'object',
        properties: { city: { type: 'string' } },
        required: ['city'],
        additionalProperties: false,
      },
    });
  });

  it('keeps the name, description, roles and default timeout', () => {
    const roles = ['admin'];
    const tool = defineTool({
      name: 'ops.restart:v1',
      description: 'Restarts',
      input: z.object({}).strict(),
      handler: noop,
      requiredRoles: roles,
    });
    roles.push('intruder');

    expect(tool.kind).toBe('tool');
    expect(tool.name).toBe('ops.restart:v1');
    expect(tool.description).toBe('Restarts');
    expect(tool.requiredRoles).toEqual(['admin']);
    expect(tool.timeoutMs).toBe(DEFAULT_TOOL_TIMEOUT_MS);
    expect(DEFAULT_TOOL_TIMEOUT_MS).toBe(30_000);
  });
});

describe('defineTool option checks', () => {
  const input = z.object({ a: z.number() }).strict();

  it.each([
    ['an empty name', ''],
    ['a name with a space', 'two words'],
    ['a name with a slash', 'a/b'],
    ['a name of 129 characters', 'x'.repeat(129)],
  ])('refuses %s with a TypeError naming `name`', (_label, name) => {
    const call = (): unknown => defineTool({ name, description: 'd', input, handler: noop });

    expect(call).toThrow(TypeError);
    expect(call).toThrow(/name must match/);
  });

  it('accepts a name of exactly 128 characters', () => {
    const name = 'x'.repeat(128);
    expect(defineTool({ name, description: 'd', input, handler: noop }).name).toBe(name);
  });

  it('refuses a name that is not a string', () => {
    const name = 42 as unknown as string;
    const call = (): unknown => defineTool({ name, description: 'd', input, handler: noop });

    expect(call).toThrow(TypeError);
    expect(call).toThrow(/name must match/);
  });

  it('refuses an input that is not a zod schema with a TypeError naming `input`', () => {
    const jsonSchema = { type: 'object', properties: {} } as unknown as z.ZodType;
    const call = (): unknown =>
      defineTool({ name: 'bad_input', description: 'd', input: jsonSchema, handler: noop });

    expect(call).toThrow(TypeError);
    expect(call).toThrow(/input must be a zod schema/);
  });

  it('refuses a handler that is not a function with a TypeError naming `handler`', () => {
    const handler = 'run' as unknown as () => null;
    const call = (): unknown =>
      defineTool({ name: 'bad_handler', description: 'd', input, handler });

    expect(call).toThrow(TypeError);
    expect(call).toThrow(/handler must be a function/);
  });

  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY])(
    'refuses timeoutMs %s with a RangeError naming `timeoutMs`',
    (timeoutMs) => {
      const call = (): unknown =>
        defineTool({ name: 'bad_timeout', description: 'd', input, handler: noop, timeoutMs });

      expect(call).toThrow(RangeError);
      expect(call).toThrow(/timeoutMs/);
    },
  );

  it('keeps a valid timeoutMs', () => {
    expect(
      defineTool({ name: 't', description: 'd', input, handler: noop, timeoutMs: 250 }).timeoutMs,
    ).toBe(250);
  });
});
