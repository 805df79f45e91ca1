/** @module The plain, validated form of an ExecContext that crosses threads and hosts. */
import { z } from 'zod';
import { parseTraceparent } from './traceparent.js';

const nullableCount = z.number().nonnegative().nullable();

/** Zod schema of {@link WireContext}; unknown fields are refused. */
export const wireContextSchema = z.strictObject({
  v: z.literal(1),
  name: z.string().min(1),
  request_id: z.string().min(1),
  trace_id: z
    .string()
    .regex(/^(?!0{32})[0-9a-f]{32}$/, 'a 32-digit lowercase hex trace id, not all zero'),
  traceparent: z
    .string()
    .refine((s) => parseTraceparent(s) !== null, 'a W3C traceparent')
    .nullable(),
  user_id: z.string().nullable(),
  session_id: z.string().nullable(),
  run_id: z.string().nullable(),
  step_id: z.string().nullable(),
  permissions: z.strictObject({
    roles: z.array(z.string()),
    allowed_tools: z.array(z.string()).nullable(),
    allowed_agents: z.array(z.string()).nullable(),
  }),
  memory_scope: z.enum(['user', 'session', 'agent', 'global']),
  budget_remaining: z.strictObject({
    tokens_in: nullableCount,
    tokens_out: nullableCount,
    cost_usd: nullableCount,
  }),
  deadline: z.number().nonnegative().nullable(),
  depth: z.number().int().nonnegative(),
  path: z.array(z.string()),
  metadata: z.record(z.string(), z.json()),
});

/** A context as plain JSON: ids, W3C traceparent, permissions, scope, budget left, deadline. */
export type WireContext = z.infer<typeof wireContextSchema>;
