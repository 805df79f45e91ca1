/** @module A message to a durable agent, checked before it is accepted (issue 46). */
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { SchemaViolationError } from '../errors/schema-violation-error.js';
import type { DurableAgentDefinition } from '../actors/durable-agent.js';
import { zodIssues } from '../tools/zod-issues.js';

/**
 * `message` checked against `def`'s input schema (`SchemaViolationError`), as plain JSON data
 * (`InvalidParamsError` for what JSON cannot hold): what the store keeps and the handler gets.
 */
export function checkedMessage(def: DurableAgentDefinition, message: unknown): unknown {
  let value = message;
  if (def.input) {
    const parsed = def.input.safeParse(message);
    if (!parsed.success) {
      throw new SchemaViolationError(`a message to ${def.name}`, zodIssues(parsed.error));
    }
    value = parsed.data;
  }
  try {
    return JSON.parse(JSON.stringify(value ?? null)) as unknown;
  } catch (err) {
    throw new InvalidParamsError(`a message to ${def.name} must be JSON data`, {
      param: 'message',
      cause: err,
    });
  }
}
