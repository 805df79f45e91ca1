/**
 * @module Workflows (seed 001's Nerve, on axon's runs): roles taking turns in a thread that a
 * moderator steers. `defineWorkflow` checks a declaration once; `WorkflowEngine` runs it.
 */
import { z } from 'zod';
import type { Role } from '../adapters/create-role.js';
import { extract, type ExtractConfig } from '../adapters/extract.js';

/** What the moderator answers to end the thread. */
export const END = 'END';

/** One finished turn of a thread: which role, its raw answer and the data extracted from it. */
export interface ThreadTurn<T = unknown> {
  /** From 1, in order. */
  readonly n: number;
  readonly role: string;
  readonly raw: string;
  readonly output: T;
  /** The turn's step in the thread's run. */
  readonly stepId: string;
}

/** The thread as the moderator sees it: its input and its finished turns, in order. */
export interface ThreadSoFar {
  readonly threadId: string;
  readonly workflow: string;
  readonly input: string;
  readonly turns: readonly ThreadTurn[];
}

/**
 * Names the next role, or {@link END}. A pure function of the thread so far: a thread
 * resumed after a crash, or replayed, asks it again and must get the same answer.
 */
export type Moderator = (thread: ThreadSoFar) => string;

/** Where a role's turns run: `inline` (default), a worker thread, or a fleet pool. */
export type RolePlacement = 'inline' | 'worker' | { readonly pool: string };

/**
 * A role over a model: the engine (default `scripted`) gets `prompt` as the system message
 * and the thread so far as the user's; its answer streams into the turn and is read with
 * `schema` (default: the text itself).
 */
export interface EngineRoleSpec<T = unknown> {
  readonly engine?: string;
  readonly model?: string;
  readonly prompt: string;
  readonly schema?: z.ZodType<T>;
  readonly extract?: ExtractConfig;
  readonly maxTokens?: number;
}

/**
 * A role over an agent registered on the runtime: it gets the thread so far as its message
 * (and `args.thread`); its output is the turn's (its text read with `schema`, if given).
 */
export interface AgentRoleSpec<T = unknown> {
  readonly agent: string;
  readonly schema?: z.ZodType<T>;
  readonly extract?: ExtractConfig;
}

/** A role of a workflow: a `createRole` role, or one over an engine or an agent. */
export type WorkflowRoleSpec =
  | { readonly role: Role<unknown>; readonly placement?: RolePlacement }
  | ({ readonly kind: 'engine'; readonly placement?: RolePlacement } & EngineRoleSpec)
  | ({ readonly kind: 'agent'; readonly placement?: RolePlacement } & AgentRoleSpec);

/** What happens to a thread triggered while `max` threads run. */
export type Overflow = 'drop' | 'queue';

/** How many threads of a workflow run at once, and what happens to more. */
export interface WorkflowConcurrency {
  /** Threads running at once; default 4. */
  readonly max?: number;
  /** `queue` (default): wait in order; `drop`: refused with `QueueFullError`. */
  readonly overflow?: Overflow;
  /** Threads waiting at most, with `queue`; default 100. Past it, refused. */
  readonly maxQueue?: number;
}

/** A workflow's declaration (see {@link defineWorkflow}). */
export interface WorkflowSpec {
  readonly name: string;
  readonly description?: string;
  readonly roles: Readonly<Record<string, WorkflowRoleSpec>>;
  readonly moderator: Moderator;
  /** Turns a thread takes at most; past it the thread ends `completed`, reason `max_rounds`. */
  readonly maxRounds?: number;
  readonly concurrency?: WorkflowConcurrency;
  /**
   * Whether a thread left running by a process that died is resumed from its last finished
   * turn when the engine starts again (default true); else it ends `crashed`.
   */
  readonly resume?: boolean;
}

/** A checked workflow. */
export interface WorkflowDefinition {
  readonly kind: 'workflow';
  readonly name: string;
  readonly description: string;
  readonly roles: Readonly<Record<string, WorkflowRoleSpec>>;
  readonly roleNames: readonly string[];
  readonly moderator: Moderator;
  readonly maxRounds: number;
  readonly concurrency: Required<WorkflowConcurrency>;
  readonly resume: boolean;
}

const NAME = /^[a-z][a-z0-9_-]{0,63}$/;
const DEFAULT_MAX_ROUNDS = 20;

function wholeAtLeast(what: string, value: unknown, min: number): number {
  if (!(typeof value === 'number' && Number.isInteger(value) && value >= min)) {
    throw new TypeError(
      `defineWorkflow: ${what} must be a whole number >= ${min}, got ${String(value)}`,
    );
  }
  return value;
}

function checkPlacement(where: string, placement: unknown): void {
  if (placement === undefined || placement === 'inline') return;
  if (
    placement === 'worker' ||
    (typeof placement === 'object' && placement !== null && 'pool' in placement)
  ) {
    // Refused, not ignored: a turn would run inline while its role asked for elsewhere.
    throw new TypeError(
      `defineWorkflow: ${where}.placement ${JSON.stringify(placement)} is not implemented yet: role turns run inline (in the engine's process); see docs/workflows.md`,
    );
  }
  throw new TypeError(
    `defineWorkflow: ${where}.placement must be "inline", got ${JSON.stringify(placement)}`,
  );
}

function checkRole(name: string, spec: unknown): void {
  const where = `role "${name}"`;
  if (!NAME.test(name)) {
    throw new TypeError(
      `defineWorkflow: ${where}: a role name is lower case letters, digits, - and _`,
    );
  }
  if (name === END) throw new TypeError(`defineWorkflow: ${where}: ${END} is the moderator's`);
  if (typeof spec !== 'object' || spec === null) {
    throw new TypeError(`defineWorkflow: ${where} must be an object`);
  }
  const s = spec as Record<string, unknown>;
  checkPlacement(where, s['placement']);
  const allowed =
    'role' in s
      ? ['role', 'placement']
      : s['kind'] === 'engine'
        ? ['kind', 'placement', 'engine', 'model', 'prompt', 'schema', 'extract', 'maxTokens']
        : s['kind'] === 'agent'
          ? ['kind', 'placement', 'agent', 'schema', 'extract']
          : null;
  const unknown = allowed === null ? [] : Object.keys(s).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) {
    throw new TypeError(`defineWorkflow: ${where}: unknown option ${unknown.join(', ')}`);
  }
  if ('role' in s) {
    const role = s['role'] as Partial<Role<unknown>> | null;
    if (typeof role?.run !== 'function') {
      throw new TypeError(`defineWorkflow: ${where}.role must be a role made by createRole`);
    }
    return;
  }
  if (s['kind'] === 'engine') {
    if (typeof s['prompt'] !== 'string') {
      throw new TypeError(`defineWorkflow: ${where}: an engine role needs a prompt (a string)`);
    }
    if (s['maxTokens'] !== undefined) wholeAtLeast(`${where}.maxTokens`, s['maxTokens'], 1);
    return;
  }
  if (s['kind'] === 'agent') {
    if (typeof s['agent'] !== 'string' || s['agent'] === '') {
      throw new TypeError(`defineWorkflow: ${where}: an agent role needs agent (a name)`);
    }
    return;
  }
  throw new TypeError(
    `defineWorkflow: ${where} must be { role } (createRole), { kind: 'engine', prompt } or { kind: 'agent', agent }`,
  );
}

/**
 * Checks a workflow's declaration and fills its defaults. Throws a `TypeError` naming what
 * is wrong.
 *
 * @example
 * const review = defineWorkflow({
 *   name: 'review',
 *   roles: { coder: { kind: 'engine', prompt: 'Write the code.' }, reviewer: { kind: 'engine', prompt: 'Review it. Answer APPROVED when done.' } },
 *   moderator: (t) => (t.turns.at(-1)?.raw.includes('APPROVED') ? END : t.turns.length % 2 === 0 ? 'coder' : 'reviewer'),
 *   maxRounds: 6,
 * });
 */
export function defineWorkflow(spec: WorkflowSpec): WorkflowDefinition {
  if (typeof (spec as unknown) !== 'object' || (spec as unknown) === null) {
    throw new TypeError('defineWorkflow: expected a workflow declaration');
  }
  if (typeof spec.name !== 'string' || !NAME.test(spec.name)) {
    throw new TypeError(
      `defineWorkflow: name must be lower case letters, digits, - and _ (1 to 64, a letter first), got ${JSON.stringify(spec.name)}`,
    );
  }
  if (typeof spec.moderator !== 'function') {
    throw new TypeError('defineWorkflow: moderator must be a function of the thread so far');
  }
  const roles = spec.roles as Record<string, WorkflowRoleSpec> | null | undefined;
  if (typeof roles !== 'object' || roles === null || Object.keys(roles).length === 0) {
    throw new TypeError('defineWorkflow: roles must name at least one role');
  }
  for (const [name, role] of Object.entries(roles)) checkRole(name, role);
  const known = new Set([
    'name',
    'description',
    'roles',
    'moderator',
    'maxRounds',
    'concurrency',
    'resume',
  ]);
  const unknown = Object.keys(spec).filter((k) => !known.has(k));
  if (unknown.length > 0) {
    throw new TypeError(`defineWorkflow: unknown option ${unknown.join(', ')}`);
  }
  const c = spec.concurrency ?? {};
  const knownC = new Set(['max', 'overflow', 'maxQueue']);
  const unknownC = Object.keys(c).filter((k) => !knownC.has(k));
  if (unknownC.length > 0) {
    throw new TypeError(`defineWorkflow: unknown concurrency option ${unknownC.join(', ')}`);
  }
  const overflow = c.overflow ?? 'queue';
  if (!['drop', 'queue'].includes(overflow)) {
    throw new TypeError(
      `defineWorkflow: concurrency.overflow must be "drop" or "queue", got ${JSON.stringify(overflow)}`,
    );
  }
  if (spec.resume !== undefined && typeof spec.resume !== 'boolean') {
    throw new TypeError('defineWorkflow: resume must be a boolean');
  }
  return Object.freeze({
    kind: 'workflow',
    name: spec.name,
    description: spec.description ?? '',
    roles: Object.freeze({ ...roles }),
    roleNames: Object.freeze(Object.keys(roles)),
    moderator: spec.moderator,
    maxRounds: wholeAtLeast('maxRounds', spec.maxRounds ?? DEFAULT_MAX_ROUNDS, 1),
    concurrency: Object.freeze({
      max: wholeAtLeast('concurrency.max', c.max ?? 4, 1),
      overflow,
      maxQueue: wholeAtLeast('concurrency.maxQueue', c.maxQueue ?? 100, 0),
    }),
    resume: spec.resume ?? true,
  });
}

/** The data a role's answer gives: `schema` over its text when there is one, else the text. */
export async function roleOutput<T>(
  raw: string,
  schema: z.ZodType<T> | undefined,
  config: ExtractConfig | undefined,
  signal: AbortSignal,
): Promise<unknown> {
  if (!schema) return raw;
  return extract(raw, schema, { ...config, signal });
}

/** The workflow's description of itself, as the API and CLI list it. */
export function describeWorkflow(w: WorkflowDefinition): {
  readonly name: string;
  readonly description: string;
  readonly roles: readonly {
    readonly name: string;
    readonly kind: string;
    readonly placement: string;
  }[];
  readonly max_rounds: number;
  readonly concurrency: {
    readonly max: number;
    readonly overflow: Overflow;
    readonly max_queue: number;
  };
  readonly resume: boolean;
} {
  return {
    name: w.name,
    description: w.description,
    roles: w.roleNames.map((name) => {
      const r = w.roles[name] as WorkflowRoleSpec;
      const kind = 'role' in r ? 'role' : r.kind;
      const p = r.placement ?? 'inline';
      return { name, kind, placement: typeof p === 'string' ? p : `pool:${p.pool}` };
    }),
    max_rounds: w.maxRounds,
    concurrency: {
      max: w.concurrency.max,
      overflow: w.concurrency.overflow,
      max_queue: w.concurrency.maxQueue,
    },
    resume: w.resume,
  };
}

/** The zod schema of a thread's trigger body (`POST /v1/workflows/{name}/threads`). */
export const threadTriggerSchema = z.strictObject({
  input: z.string().max(1_000_000),
});
