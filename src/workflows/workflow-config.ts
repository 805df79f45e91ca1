/**
 * @module Workflows declared in `axon.yaml` (its `workflows:` key): roles over an engine, an
 * agent or a command-line program, and a declarative moderator — the roles in turn, ending
 * when a role's answer contains a text (or at `max_rounds`). A moderator in YAML is a pure
 * function of the thread as one in code must be.
 *
 * ```yaml
 * workflows:
 *   review:
 *     description: a coder and a reviewer
 *     max_rounds: 6
 *     concurrency: { max: 2, overflow: queue, max_queue: 10 }
 *     roles:
 *       coder: { engine: scripted, prompt: "You write code." }
 *       reviewer: { engine: scripted, prompt: "Review it. Say APPROVED when it is good." }
 *       linter: { command: node, args: [lint.mjs], prompt: "Lint the last code block." }
 *       # queued on the fleet's pool `gpu` (axon serve --redis; replicas: axon worker --pool gpu)
 *       # judge: { engine: vllm, prompt: "Judge it.", placement: { pool: gpu } }
 *     moderator:
 *       order: [coder, linter, reviewer]
 *       end_when: { role: reviewer, contains: APPROVED }
 * ```
 */
import { z } from 'zod';
import { createCliAdapter } from '../adapters/cli-adapter.js';
import { textRole } from '../adapters/create-role.js';
import { zodIssues } from '../tools/zod-issues.js';
import {
  defineWorkflow,
  END,
  type ThreadSoFar,
  type WorkflowDefinition,
  type WorkflowRoleSpec,
} from './workflow-definition.js';

const name = z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/, 'lower case letters, digits, - and _');

/**
 * Where a configured role's turns run: `inline` (default) or `{ pool: <id> }`. `worker` needs
 * a workflow in code: a worker thread imports the workflow by its module and export.
 */
const placement = z.union(
  [z.literal('inline'), z.strictObject({ pool: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/) })],
  {
    error:
      'placement is "inline" or { pool: <pool id> } ("worker" needs a workflow declared in code, with module and export)',
  },
);

const engineRole = z.strictObject({
  placement: placement.optional(),
  engine: z.string().min(1),
  model: z.string().min(1).optional(),
  prompt: z.string(),
  max_tokens: z.number().int().min(1).optional(),
});
const agentRole = z.strictObject({ placement: placement.optional(), agent: z.string().min(1) });
const commandRole = z.strictObject({
  placement: placement.optional(),
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  prompt: z.string().default(''),
  input: z.enum(['stdin', 'arg']).default('stdin'),
  timeout_ms: z.number().int().min(1).optional(),
  cwd: z.string().min(1).optional(),
});

/** One workflow under `workflows:`. */
export const workflowConfigSchema = z.strictObject({
  description: z.string().default(''),
  max_rounds: z.number().int().min(1).optional(),
  resume: z.boolean().optional(),
  concurrency: z
    .strictObject({
      max: z.number().int().min(1).optional(),
      overflow: z.enum(['drop', 'queue']).optional(),
      max_queue: z.number().int().min(0).optional(),
    })
    .optional(),
  // The placement first, so that a bad one is named as such, not as a role matching no kind.
  roles: z.record(
    name,
    z
      .looseObject({ placement: placement.optional() })
      .pipe(z.union([engineRole, agentRole, commandRole])),
  ),
  moderator: z.strictObject({
    order: z.array(name).min(1),
    end_when: z.strictObject({ role: name, contains: z.string().min(1) }).optional(),
  }),
});

/** The `workflows:` key of `axon.yaml`: workflow name → declaration. */
export const workflowsConfigSchema = z.record(name, workflowConfigSchema);
export type WorkflowsConfig = z.input<typeof workflowsConfigSchema>;

/** A declaration that cannot be run: where and why. */
export class WorkflowConfigError extends Error {
  readonly issues: readonly { readonly path: string; readonly message: string }[];

  constructor(issues: readonly { readonly path: string; readonly message: string }[]) {
    super(
      `workflows: ${issues.map((i) => `${i.path ? `${i.path}: ` : ''}${i.message}`).join('; ')}`,
    );
    this.name = 'WorkflowConfigError';
    this.issues = issues;
  }
}

/**
 * The moderator of `order` and `end_when`: the roles of `order` in turn, from the first;
 * `END` right after a turn of `end_when.role` whose answer contains `end_when.contains`.
 */
export function orderModerator(
  order: readonly string[],
  endWhen?: { readonly role: string; readonly contains: string },
): (thread: ThreadSoFar) => string {
  return (thread) => {
    const last = thread.turns.at(-1);
    if (last && endWhen && last.role === endWhen.role && last.raw.includes(endWhen.contains)) {
      return END;
    }
    return order[thread.turns.length % order.length] as string;
  };
}

function roleOf(spec: z.infer<typeof workflowConfigSchema>['roles'][string]): WorkflowRoleSpec {
  const placed = spec.placement === undefined ? {} : { placement: spec.placement };
  if ('engine' in spec) {
    return {
      ...placed,
      kind: 'engine',
      engine: spec.engine,
      prompt: spec.prompt,
      ...(spec.model === undefined ? {} : { model: spec.model }),
      ...(spec.max_tokens === undefined ? {} : { maxTokens: spec.max_tokens }),
    };
  }
  if ('agent' in spec) return { ...placed, kind: 'agent', agent: spec.agent };
  const adapter = createCliAdapter({
    command: spec.command,
    args: spec.args,
    input: spec.input,
    ...(spec.timeout_ms === undefined ? {} : { timeoutMs: spec.timeout_ms }),
    ...(spec.cwd === undefined ? {} : { cwd: spec.cwd }),
  });
  return { ...placed, role: textRole(adapter, spec.prompt) };
}

/**
 * The workflows of an `axon.yaml`'s `workflows:` value, checked. Throws a
 * {@link WorkflowConfigError} listing every problem with its path (`review.moderator.order.1`).
 */
export function workflowsFromConfig(value: unknown): WorkflowDefinition[] {
  const parsed = workflowsConfigSchema.safeParse(value);
  if (!parsed.success) {
    throw new WorkflowConfigError(
      zodIssues(parsed.error).map((i) => ({ path: i.path.join('.'), message: i.message })),
    );
  }
  const out: WorkflowDefinition[] = [];
  const problems: { path: string; message: string }[] = [];
  for (const [wname, w] of Object.entries(parsed.data)) {
    const roles = Object.keys(w.roles);
    w.moderator.order.forEach((r, i) => {
      if (!roles.includes(r)) {
        problems.push({ path: `${wname}.moderator.order.${i}`, message: `no role "${r}"` });
      }
    });
    if (w.moderator.end_when && !roles.includes(w.moderator.end_when.role)) {
      problems.push({
        path: `${wname}.moderator.end_when.role`,
        message: `no role "${w.moderator.end_when.role}"`,
      });
    }
    if (problems.length > 0) continue;
    try {
      out.push(
        defineWorkflow({
          name: wname,
          description: w.description,
          roles: Object.fromEntries(Object.entries(w.roles).map(([r, s]) => [r, roleOf(s)])),
          moderator: orderModerator(w.moderator.order, w.moderator.end_when),
          ...(w.max_rounds === undefined ? {} : { maxRounds: w.max_rounds }),
          ...(w.resume === undefined ? {} : { resume: w.resume }),
          ...(w.concurrency === undefined
            ? {}
            : {
                concurrency: {
                  ...(w.concurrency.max === undefined ? {} : { max: w.concurrency.max }),
                  ...(w.concurrency.overflow === undefined
                    ? {}
                    : { overflow: w.concurrency.overflow }),
                  ...(w.concurrency.max_queue === undefined
                    ? {}
                    : { maxQueue: w.concurrency.max_queue }),
                },
              }),
        }),
      );
    } catch (err) {
      problems.push({ path: wname, message: err instanceof Error ? err.message : String(err) });
    }
  }
  if (problems.length > 0) throw new WorkflowConfigError(problems);
  return out;
}
