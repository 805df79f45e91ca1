/**
 * @module The body of a step submission (API.md's `POST /v1/runs/{run_id}/steps`): its
 * schema, the inputs of the kinds whose input the runtime reads itself, what it is for (the
 * route checkpoint's target) and the name its step's record gets.
 */
import { z } from 'zod';
import { DEFAULT_ENGINE } from '../engines/engine-registry.js';
import { wireBudgetsSchema, wirePlacementSchema } from '../runs/request-bodies.js';

/** The body of a step submission (API.md). */
export const stepSubmissionSchema = z
  .object({
    type: z.enum([
      'agent',
      'tool_call',
      'llm_call',
      'llm_plan',
      'checkpoint',
      'fs_op',
      'gate_eval',
    ]),
    client_token: z.string().min(1).max(256).optional(),
    input: z.record(z.string(), z.unknown()),
    /** Over the run's `pool_policy` for this step when not `"auto"` (API.md, seed 003 §6). */
    placement: wirePlacementSchema.optional(),
    budgets: wireBudgetsSchema.optional(),
  })
  .strict();

export const agentInputSchema = z
  .object({
    agent: z.string().min(1),
    message: z.string(),
    args: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
export const toolInputSchema = z
  .object({ tool: z.string().min(1), args: z.record(z.string(), z.unknown()) })
  .strict();

export const checkpointInputSchema = z.object({ label: z.string().max(256).optional() }).strict();

/** What a step submission is for: its agent, tool, or its type. */
export function stepTarget(request: { type: string; input: Record<string, unknown> }): string {
  const named = request.input['agent'] ?? request.input['tool'];
  return typeof named === 'string' ? named : request.type;
}

/** A step submission's body, checked. */
export type StepSubmissionBody = z.infer<typeof stepSubmissionSchema>;

/** The name a step of `request` has in its record (as the step's own code names it). */
export function recordName(request: StepSubmissionBody): string {
  const input = request.input;
  const named = (key: string, fallback: string): string =>
    typeof input[key] === 'string' ? input[key] : fallback;
  switch (request.type) {
    case 'agent':
      return named('agent', 'agent');
    case 'tool_call':
      return named('tool', 'tool');
    case 'checkpoint':
      return 'checkpoint';
    case 'gate_eval':
      return named('fact_type', 'gate_eval');
    case 'fs_op':
      return `fs ${named('op', 'op')}`;
    default:
      return `${request.type} ${named('engine', DEFAULT_ENGINE)}`;
  }
}
