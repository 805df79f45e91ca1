/**
 * @module Where two JSON Schemas of one tool's arguments contradict each other: a flow's
 * declaration of a tool (API.md's `tools[].parameters`) against the registered tool's. A
 * declaration may be looser or stricter than the tool (`{ "type": "object" }` says little and
 * is fine); it contradicts when no arguments could satisfy both the way each means: another
 * type for the same value, a required property the other forbids, enums with nothing in
 * common. Each contradiction is named by its path in the declaration.
 */
import type { SchemaIssue } from '../errors/schema-violation-error.js';
import type { JsonSchema } from './json-schema.js';

type Path = readonly (string | number)[];

/** A schema's `type` as a set (`integer` counts as a `number`), or `null` when it says none. */
function typesOf(schema: JsonSchema): Set<string> | null {
  const t = schema['type'];
  const list = typeof t === 'string' ? [t] : Array.isArray(t) ? t.map(String) : null;
  if (!list) return null;
  return new Set(list.flatMap((x) => (x === 'integer' ? ['integer', 'number'] : [x])));
}

function overlaps(a: Set<string>, b: Set<string>): boolean {
  for (const x of a) if (b.has(x)) return true;
  // A number schema and an integer one share the integers.
  return (a.has('integer') && b.has('number')) || (a.has('number') && b.has('integer'));
}

function asSchema(value: unknown): JsonSchema | null {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as JsonSchema) : null;
}

function names(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((x): x is string => typeof x === 'string') : [];
}

/** Whether `schema` forbids a property `name` (closed, and `name` is not one of its own). */
function forbids(schema: JsonSchema, name: string): boolean {
  const props = asSchema(schema['properties']) ?? {};
  return schema['additionalProperties'] === false && !(name in props);
}

function walk(declared: JsonSchema, registered: JsonSchema, path: Path, out: SchemaIssue[]): void {
  const a = typesOf(declared);
  const b = typesOf(registered);
  if (a && b && !overlaps(a, b)) {
    out.push({
      path: [...path, 'type'],
      message: `the flow declares ${JSON.stringify(declared['type'])}, the registered tool ${JSON.stringify(registered['type'])}`,
    });
    return;
  }
  if (Array.isArray(declared['enum']) && Array.isArray(registered['enum'])) {
    const theirs = new Set(registered['enum'].map((v) => JSON.stringify(v)));
    if (!declared['enum'].some((v) => theirs.has(JSON.stringify(v)))) {
      out.push({
        path: [...path, 'enum'],
        message: 'the flow and the registered tool allow no value in common',
      });
    }
  }
  for (const name of names(declared['required'])) {
    if (forbids(registered, name)) {
      out.push({
        path: [...path, 'required'],
        message: `the flow requires "${name}", which the registered tool does not accept`,
      });
    }
  }
  for (const name of names(registered['required'])) {
    if (forbids(declared, name)) {
      out.push({
        path: [...path, 'properties'],
        message: `the registered tool requires "${name}", which the flow does not allow`,
      });
    }
  }
  const ours = asSchema(declared['properties']) ?? {};
  const theirs = asSchema(registered['properties']) ?? {};
  for (const [name, value] of Object.entries(ours)) {
    const d = asSchema(value);
    const r = asSchema(theirs[name]);
    if (d && r) walk(d, r, [...path, 'properties', name], out);
  }
  const di = asSchema(declared['items']);
  const ri = asSchema(registered['items']);
  if (di && ri) walk(di, ri, [...path, 'items'], out);
}

/**
 * The contradictions between a flow's declared `parameters` of a tool and the registered
 * tool's schema, each with its path in the declaration; none when they can agree.
 */
export function schemaContradictions(declared: JsonSchema, registered: JsonSchema): SchemaIssue[] {
  const out: SchemaIssue[] = [];
  walk(declared, registered, [], out);
  return out;
}
