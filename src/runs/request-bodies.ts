/** @module What the request bodies of the runtime's run operations share: budgets, and parsing. */
import { z } from 'zod';
import { SchemaViolationError } from '../errors/schema-violation-error.js';
import { zodIssues } from '../tools/zod-issues.js';

/** Run and step budgets on the wire (API.md, POLICY-3000). */
export const wireBudgetsSchema = z
  .object({
    max_tokens_in: z.number().int().nonnegative().optional(),
    max_tokens_out: z.number().int().nonnegative().optional(),
    max_wall_ms: z.number().int().positive().optional(),
    max_cost_usd: z.number().nonnegative().optional(),
  })
  .strict();

/**
 * A placement on the wire (API.md): `"auto"`, `{ "pin": "<pool_id>" }` or
 * `{ "affinity": { "tags": [...] } }` — a run's `pool_policy.placement`, and a step's own.
 */
export const wirePlacementSchema = z.union([
  z.literal('auto'),
  z.object({ pin: z.string().min(1).max(64) }).strict(),
  z
    .object({
      affinity: z.object({ tags: z.array(z.string().min(1).max(256)).max(64) }).strict(),
    })
    .strict(),
]);

/** `body` parsed with `schema`, or `SchemaViolationError` naming `subject` and each path. */
export function parseBody<T>(schema: z.ZodType<T>, subject: string, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new SchemaViolationError(subject, zodIssues(parsed.error));
  return parsed.data;
}
