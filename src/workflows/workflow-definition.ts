/**
 * @module Workflows (seed 001's Nerve, on axon's runs): roles taking turns in a thread that a
 * moderator steers. `defineWorkflow` checks a declaration once; `WorkflowEngine` runs it.
 */
import { z } from 'zod';
import type { AgentHandler, AgentHandlerSource } from '../actors/agent-runtime.js';
import {
  checkRole,
  placementLabel,
  turnAgentName,
  turnHandler,
  type ThreadTurn,
  type WorkflowRoleSpec,
} from './workflow-roles.js';

export {
  END,
  type AgentRoleSpec,
  type EngineRoleSpec,
  type RolePlacement,
  type ThreadTurn,
  type WorkflowRoleSpec,
} from './workflow-roles.js';

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
  /**
   * Where a worker thread imports this workflow from, for roles placed on `'worker'`: the
   * module (`import.meta.url`, an absolute path or a package specifier) and the name of its
   * export that holds what `defineWorkflow` returned. Required with a worker role, refused
   * without one.
   */
  readonly module?: string;
  readonly export?: string;
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
  /** Where worker threads import it from (with `'worker'` roles); else `null`. */
  readonly module: string | null;
  readonly export: string | null;
  /** The handler of one of its roles' agents (`workflow.<name>.<role>`), for worker threads. */
  handlerFor(agent: string): AgentHandler | undefined;
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
    'module',
    'export',
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
  const { module, export: exported } = checkWorkerSource(spec, roles);
  const handlers = new Map(
    Object.entries(roles).map(([role, r]) => [turnAgentName(spec.name, role), turnHandler(r)]),
  );
  const handlerFor: AgentHandlerSource['handlerFor'] = (agent) => handlers.get(agent);
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
    module,
    export: exported,
    handlerFor,
  });
}

/** `module` and `export`: both with a worker role, neither without one. */
function checkWorkerSource(
  spec: WorkflowSpec,
  roles: Readonly<Record<string, WorkflowRoleSpec>>,
): { module: string | null; export: string | null } {
  const workers = Object.keys(roles).filter((r) => roles[r]?.placement === 'worker');
  const given = (['module', 'export'] as const).filter((k) => spec[k] !== undefined);
  if (workers.length === 0) {
    if (given.length > 0) {
      throw new TypeError(
        `defineWorkflow: ${given.join(' and ')} ${given.length > 1 ? 'are' : 'is'} only for roles placed on "worker", and no role is`,
      );
    }
    return { module: null, export: null };
  }
  for (const key of ['module', 'export'] as const) {
    const v = spec[key];
    if (typeof v !== 'string' || v === '') {
      throw new TypeError(
        `defineWorkflow: role ${workers.map((w) => `"${w}"`).join(', ')} runs on a worker thread, which imports the workflow: give ${key} (module: import.meta.url, export: the name this workflow is exported as)`,
      );
    }
  }
  return { module: spec.module as string, export: spec.export as string };
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
      return { name, kind, placement: placementLabel(r.placement) };
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
