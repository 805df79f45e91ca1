/**
 * @module A policy's configuration: its keys (those of Nerva's YAML policy, REFERENCE.md),
 * as one zod schema, and the YAML loader that refuses a bad file naming the line and key.
 */
import { readFileSync } from 'node:fs';
import { isMap, isScalar, LineCounter, parseDocument, type Node } from 'yaml';
import { z } from 'zod';
import { InvalidParamsError } from '../errors/invalid-params-error.js';

const names = z.array(z.string().min(1));

/** Limits per agent per window, and what to do past them. */
const agentBudgetSchema = z
  .object({
    tokens_per_hour: z.number().int().positive().optional(),
    cost_per_day: z.number().positive().optional(),
    /**
     * `block`: the call fails `BUDGET_EXCEEDED`; `pause`: the agent takes no more calls
     * until the window frees (`POLICY_DENIED`); `warn`: it goes on, logged; `degrade`: it
     * goes on with at most `degrade_max_tokens` tokens.
     */
    on_exceed: z.enum(['block', 'pause', 'warn', 'degrade']).default('block'),
    degrade_max_tokens: z.number().int().positive().default(64),
  })
  .strict();

/** A policy's configuration: the object a config file's `policy:` section holds. */
export const policyConfigSchema = z
  .object({
    rate_limits: z
      .object({
        per_user: z
          .object({
            requests_per_minute: z.number().int().positive(),
            /** `reject`: 429 `RATE_LIMITED`; `queue`: wait for room; `warn`: go on, logged. */
            on_exceed: z.enum(['reject', 'queue', 'warn']).default('reject'),
          })
          .strict()
          .optional(),
      })
      .strict()
      .optional(),
    budgets: z
      .object({
        /** By agent name; `default` for agents not named. */
        per_agent: z.record(z.string(), agentBudgetSchema).optional(),
      })
      .strict()
      .optional(),
    approvals: z
      .object({
        /** Agents whose invocation needs approval, with who may approve. */
        agents: z.record(z.string(), names.min(1)).optional(),
        /** Tools whose calls need approval, with who may approve. */
        tools: z.record(z.string(), names.min(1)).optional(),
      })
      .strict()
      .optional(),
    /** Execution limits; a section given without a key gets Nerva's default for it. */
    execution: z
      .object({
        max_depth: z.number().int().positive().default(10),
        max_tool_calls_per_invocation: z.number().int().positive().default(50),
        timeout_seconds: z.number().positive().default(30),
      })
      .strict()
      .optional(),
    tools: z
      .object({ allow: names.nullable().optional(), deny: names.optional() })
      .strict()
      .optional(),
  })
  .strict();

/** See {@link policyConfigSchema}. */
export type PolicyConfig = z.output<typeof policyConfigSchema>;
/** What a caller may write (defaults filled in by parsing). */
export type PolicyConfigInput = z.input<typeof policyConfigSchema>;

/** A policy configuration that cannot be used: where and why. Code `INVALID_PARAMS`. */
export class PolicyConfigError extends InvalidParamsError {
  constructor(
    message: string,
    readonly problems: readonly {
      readonly line: number | null;
      readonly key: string;
      readonly message: string;
    }[],
  ) {
    super(message, { details: { problems } });
  }
}

/** Checks a configuration object (a config file's `policy:` section, already parsed). */
export function parsePolicyConfig(config: unknown): PolicyConfig {
  const parsed = policyConfigSchema.safeParse(config ?? {});
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.flatMap((issue) => describe(issue, null));
  throw new PolicyConfigError(summary(problems), problems);
}

/**
 * Reads a YAML policy: `text`, or the file at `{ file }`. Bad YAML, an unknown key or a value
 * of the wrong kind is refused with {@link PolicyConfigError} naming the line and the key.
 *
 * @example
 * const config = loadPolicyYaml(`
 * rate_limits:
 *   per_user: { requests_per_minute: 60, on_exceed: reject }
 * execution: { max_depth: 4 }
 * `);
 */
export function loadPolicyYaml(source: string | { readonly file: string }): PolicyConfig {
  const text = typeof source === 'string' ? source : readFileSync(source.file, 'utf8');
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  if (doc.errors.length > 0) {
    const problems = doc.errors.map((e) => ({
      line: lines.linePos(e.pos[0]).line,
      key: '',
      message: e.message,
    }));
    throw new PolicyConfigError(summary(problems), problems);
  }
  const parsed = policyConfigSchema.safeParse(doc.toJS() ?? {});
  if (parsed.success) return parsed.data;
  const lineOf = (path: readonly PropertyKey[], key?: string): number | null => {
    let node = doc.getIn(path.map(String), true) as Node | undefined;
    if (key !== undefined && isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && p.key.value === key);
      node = (pair?.key as Node | undefined) ?? node;
    }
    const offset = node?.range?.[0];
    return offset === undefined ? null : lines.linePos(offset).line;
  };
  const problems = parsed.error.issues.flatMap((issue) => describe(issue, lineOf));
  throw new PolicyConfigError(summary(problems), problems);
}

type LineOf = ((path: readonly PropertyKey[], key?: string) => number | null) | null;

function describe(
  issue: z.core.$ZodIssue,
  lineOf: LineOf,
): { line: number | null; key: string; message: string }[] {
  const path = issue.path;
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => ({
      line: lineOf?.(path, key) ?? null,
      key: [...path, key].join('.'),
      message: `unknown key "${key}"`,
    }));
  }
  return [{ line: lineOf?.(path) ?? null, key: path.join('.'), message: issue.message }];
}

function summary(
  problems: readonly { line: number | null; key: string; message: string }[],
): string {
  const parts = problems.map(
    (p) => `${p.line === null ? '' : `line ${p.line}: `}${p.key ? `${p.key}: ` : ''}${p.message}`,
  );
  return `policy configuration refused: ${parts.join('; ')}`;
}
