import { describe, expect, it } from 'vitest';
import { schemaContradictions } from '../../src/tools/schema-contradictions.js';

const add = {
  type: 'object',
  properties: { a: { type: 'number' }, b: { type: 'number' } },
  required: ['a', 'b'],
  additionalProperties: false,
};

describe('schemaContradictions: a flow declaration against the registered tool', () => {
  it('accepts a declaration that says less, or more, without contradicting', () => {
    expect(schemaContradictions({ type: 'object' }, add)).toEqual([]);
    expect(schemaContradictions({}, add)).toEqual([]);
    const stricter = {
      type: 'object',
      properties: { a: { type: 'integer', maximum: 10 }, b: { type: 'number' } },
      required: ['a', 'b'],
    };
    expect(schemaContradictions(stricter, add)).toEqual([]);
  });

  it('names another type, at any depth, by its path in the declaration', () => {
    expect(
      schemaContradictions({ type: 'object', properties: { a: { type: 'string' } } }, add),
    ).toEqual([
      {
        path: ['properties', 'a', 'type'],
        message: 'the flow declares "string", the registered tool "number"',
      },
    ]);
    expect(schemaContradictions({ type: 'array' }, add)[0]?.path).toEqual(['type']);
    const nested = (t: string) => ({
      type: 'object',
      properties: {
        legs: { type: 'array', items: { type: 'object', properties: { to: { type: t } } } },
      },
    });
    expect(schemaContradictions(nested('number'), nested('string'))[0]?.path).toEqual([
      'properties',
      'legs',
      'items',
      'properties',
      'to',
      'type',
    ]);
  });

  it('names a required property the other side forbids, and enums with nothing in common', () => {
    const requiresC = { type: 'object', properties: { c: { type: 'number' } }, required: ['c'] };
    expect(schemaContradictions(requiresC, add)).toEqual([
      {
        path: ['required'],
        message: 'the flow requires "c", which the registered tool does not accept',
      },
    ]);
    const closed = { type: 'object', properties: { a: {} }, additionalProperties: false };
    expect(schemaContradictions(closed, add)).toEqual([
      {
        path: ['properties'],
        message: 'the registered tool requires "b", which the flow does not allow',
      },
    ]);
    expect(schemaContradictions({ enum: ['x', 'y'] }, { enum: ['z'] })[0]?.path).toEqual(['enum']);
    expect(schemaContradictions({ enum: ['x', 'y'] }, { enum: ['y'] })).toEqual([]);
  });
});
