/**
 * @module A workflow's roles: how each is declared (a `createRole` role, one over an engine,
 * one over an agent), where its turns run (`placement`), and how one turn runs — the handler
 * of the role's agent, the same wherever it runs (in the engine's process, on a worker
 * thread that loaded the workflow's module, on a fleet replica that registered the
 * workflow's agents).
 */
import type { z } from 'zod';
import type { AgentInput } from '../actors/agent-result.js';
import type { AgentFunctionHandler, AgentRuntime } from '../actors/agent-runtime.js';
import type { Role } from '../adapters/create-role.js';
import { extract, type ExtractConfig } from '../adapters/extract.js';
import { threadPrompt, type ThreadContext } from '../adapters/thread-context.js';
import type { ExecContext } from '../context/exec-context.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';

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

/**
 * Where a role's turns run:
 * - `'inline'` (default): in the process of the workflow engine, on its event loop — on a
 *   fleet's API process too (the turn is not queued);
 * - `'worker'`: on a worker thread of that process (the runtime's pool), which imports the
 *   workflow from its `module` and `export` (see `defineWorkflow`);
 * - `{ pool }`: queued on that pool of the runtime's fleet, and run by one of its replicas,
 *   which has the workflow's agents (`workflowAgents`; `axon worker` registers those of its
 *   config).
 */
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

/** What a turn's step answers: the role's raw text and the data read from it. */
export interface TurnOutput {
  readonly raw: string;
  readonly output: unknown;
}

/** The thread as a turn's step input carries it (`args.thread`). */
export interface TurnThread {
  readonly threadId: string;
  readonly workflow: string;
  readonly input: string;
  readonly turns: readonly Pick<ThreadTurn, 'n' | 'role' | 'raw' | 'output'>[];
}

const NAME = /^[a-z][a-z0-9_-]{0,63}$/;

/** The prefix of the agents of workflow roles. */
const TURN_AGENT_PREFIX = 'workflow.';

/**
 * Whether agent `name` runs a workflow role's turns: it takes a thread, not a message, so
 * the front door does not route to it.
 */
export function isTurnAgent(name: string): boolean {
  return name.startsWith(TURN_AGENT_PREFIX);
}

/** The agent name of `role` of workflow `workflow`. */
export function turnAgentName(workflow: string, role: string): string {
  return `${TURN_AGENT_PREFIX}${workflow}.${role}`;
}

/** The placement of a role as the API and CLI show it: `inline`, `worker` or `pool:<id>`. */
export function placementLabel(placement: RolePlacement | undefined): string {
  const p = placement ?? 'inline';
  return typeof p === 'string' ? p : `pool:${p.pool}`;
}

function checkPlacement(where: string, placement: unknown): void {
  if (placement === undefined || placement === 'inline' || placement === 'worker') return;
  const fields = typeof placement === 'object' && placement !== null ? placement : {};
  const pool = (fields as { pool?: unknown }).pool;
  if (
    Object.keys(fields).length === 1 &&
    typeof pool === 'string' &&
    /^[A-Za-z0-9_.-]{1,64}$/.test(pool)
  ) {
    return;
  }
  throw new TypeError(
    `defineWorkflow: ${where}.placement must be "inline", "worker" or { pool: "<pool id>" }, got ${JSON.stringify(placement)}`,
  );
}

const ROLE_KEYS = {
  role: ['role', 'placement'],
  engine: ['kind', 'placement', 'engine', 'model', 'prompt', 'schema', 'extract', 'maxTokens'],
  agent: ['kind', 'placement', 'agent', 'schema', 'extract'],
} as const;

/** Checks role `name`'s declaration; a `TypeError` names what is wrong. */
export function checkRole(name: string, spec: unknown): void {
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
  const allowed: readonly string[] | null =
    'role' in s
      ? ROLE_KEYS.role
      : s['kind'] === 'engine'
        ? ROLE_KEYS.engine
        : s['kind'] === 'agent'
          ? ROLE_KEYS.agent
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
    const max = s['maxTokens'];
    if (max !== undefined && !(typeof max === 'number' && Number.isInteger(max) && max >= 1)) {
      throw new TypeError(
        `defineWorkflow: ${where}.maxTokens must be a whole number >= 1, got ${JSON.stringify(max)}`,
      );
    }
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

function threadOf(input: AgentInput): TurnThread {
  const thread = input.args?.['thread'] as TurnThread | undefined;
  if (typeof thread?.threadId !== 'string' || !Array.isArray(thread.turns)) {
    throw new InvalidParamsError('a workflow turn needs args.thread: the thread so far', {
      param: 'args.thread',
    });
  }
  return thread;
}

/** Seed 001's `ThreadContext` of a thread so far. */
function seedThread(thread: TurnThread): ThreadContext {
  return {
    threadId: thread.threadId,
    start: thread.input,
    steps: thread.turns.map((t) => ({ role: t.role, content: t.raw })),
  };
}

async function runRole(
  spec: WorkflowRoleSpec,
  thread: TurnThread,
  ctx: ExecContext,
  runtime: AgentRuntime,
): Promise<TurnOutput> {
  const seed = seedThread(thread);
  if ('role' in spec) {
    // The role takes its signal from the context when it needs one (not every role does).
    const { raw, meta } = await spec.role.run(seed, { ctx });
    return { raw, output: meta };
  }
  if (spec.kind === 'engine') {
    const answer = await runtime.chat(
      {
        ...(spec.engine === undefined ? {} : { engine: spec.engine }),
        ...(spec.model === undefined ? {} : { model: spec.model }),
        messages: [
          { role: 'system', content: spec.prompt },
          { role: 'user', content: threadPrompt(seed, '').trimStart() },
        ],
        ...(spec.maxTokens === undefined ? {} : { params: { max_tokens: spec.maxTokens } }),
      },
      ctx,
    );
    return {
      raw: answer.text,
      output: await roleOutput(answer.text, spec.schema, spec.extract, ctx.signal),
    };
  }
  // An agent role: the delegated agent's tokens are in its own step, below the turn's.
  const result = await runtime.delegate(
    spec.agent,
    { message: threadPrompt(seed, '').trimStart(), args: { thread } },
    ctx,
  );
  if (result.status !== 'success') {
    throw result.error ?? new Error(`agent ${spec.agent} answered ${result.status}`);
  }
  const raw = typeof result.output === 'string' ? result.output : JSON.stringify(result.output);
  return {
    raw,
    output: spec.schema
      ? await roleOutput(raw, spec.schema, spec.extract, ctx.signal)
      : result.output,
  };
}

/** The handler of a role's agent: one turn, from the thread in `args.thread`. */
export function turnHandler(spec: WorkflowRoleSpec): AgentFunctionHandler<TurnOutput> {
  return async (input, ctx, runtime) => {
    const out = await runRole(spec, threadOf(input), ctx, runtime);
    return { raw: out.raw, output: out.output };
  };
}
