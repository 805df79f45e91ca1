/** @module Agent inputs and results, with Nerva's statuses. */
import type { TokenUsage } from '../context/exec-context.js';
import type { ChatMessage } from '../engines/chat-request.js';
import type { AxonError } from '../errors/axon-error.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';

/** What an agent is asked to do (Nerva's `AgentInput`). */
export interface AgentInput {
  readonly message: string;
  readonly args?: Readonly<Record<string, unknown>>;
  /** Tool names the agent may offer a model. */
  readonly tools?: readonly string[];
  readonly history?: readonly ChatMessage[];
}

/** How an invocation ended. */
export type AgentStatus =
  'success' | 'error' | 'timeout' | 'wrong_handler' | 'needs_data' | 'needs_credentials';

/** The result of `invoke`, `delegate` and `invokeChain`. */
export interface AgentResult<TOutput = unknown> {
  readonly status: AgentStatus;
  /** The handler's return value (or, for a streaming handler without one, its tokens joined). */
  readonly output: TOutput | null;
  /** Extra data a `needs_data` / `needs_credentials` / `wrong_handler` outcome carried. */
  readonly data: Readonly<Record<string, unknown>> | null;
  /** The typed error when `status` is `error` or `timeout`. */
  readonly error: AxonError | null;
  /** The agent that handled it. */
  readonly handler: string;
  readonly runId: string;
  readonly stepId: string;
  /** Tokens and cost of this step and all its descendants. */
  readonly usage: TokenUsage;
  readonly durationMs: number;
}

const OUTCOME = Symbol.for('axon.agentOutcome');

/** A non-success outcome a handler returns instead of a value. */
export interface AgentOutcome {
  readonly [OUTCOME]: true;
  readonly status: 'wrong_handler' | 'needs_data' | 'needs_credentials';
  readonly message: string;
  readonly data: Readonly<Record<string, unknown>> | null;
}

/** An outcome of the given status (how one is rebuilt after crossing a thread). */
export function agentOutcome(
  status: AgentOutcome['status'],
  message: string,
  data?: Readonly<Record<string, unknown>>,
): AgentOutcome {
  return { [OUTCOME]: true, status, message, data: data ?? null };
}

/** Return from a handler when the request needs more data from the user. */
export function needsData(message: string, data?: Readonly<Record<string, unknown>>): AgentOutcome {
  return agentOutcome('needs_data', message, data);
}

/** Return from a handler when credentials are missing. */
export function needsCredentials(
  message: string,
  data?: Readonly<Record<string, unknown>>,
): AgentOutcome {
  return agentOutcome('needs_credentials', message, data);
}

/** Return from a handler when the request is not for this agent. */
export function wrongHandler(
  message = 'not handled by this agent',
  data?: Readonly<Record<string, unknown>>,
): AgentOutcome {
  return agentOutcome('wrong_handler', message, data);
}

/** True when a handler's return value is an {@link AgentOutcome}. */
export function isAgentOutcome(value: unknown): value is AgentOutcome {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as Record<symbol, unknown>)[OUTCOME] === true
  );
}

/** The fields an {@link AgentInput} may have; any other is refused rather than ignored. */
const INPUT_FIELDS: ReadonlySet<string> = new Set(['message', 'args', 'tools', 'history']);

/** What a value is, for an error message: `number 42`, `null`, `an array`, ... */
function shapeOf(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'number':
    case 'boolean':
    case 'bigint':
      return `${typeof value} ${String(value)}`;
    case 'string':
      return 'a string';
    case 'object':
      return 'an object';
    default:
      return `a ${typeof value}`;
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** What is wrong with `list` as an array of items that pass `ok`, or `null` if nothing. */
function listProblem(list: unknown, ok: (item: unknown) => boolean): string | null {
  if (!Array.isArray(list)) return shapeOf(list);
  const i = list.findIndex((item) => !ok(item));
  return i < 0 ? null : `${shapeOf(list[i])} at [${i}]`;
}

/**
 * Normalises a string or {@link AgentInput} to an {@link AgentInput}: a string `s` is
 * `{ message: s }`; an object must have a string `message`, and may have `args` (an object
 * of named values), `tools` (tool names) and `history` (chat messages), nothing else.
 *
 * Throws `InvalidParamsError` (`INVALID_PARAMS`) naming the field that is wrong in
 * `details.param` (`input`, `input.message`, `input.args`, ...) and, when given, the agent.
 */
export function toAgentInput(input: string | AgentInput, agent?: string): AgentInput {
  if (typeof input === 'string') return { message: input };
  const of = agent === undefined ? 'agent input' : `input of agent "${agent}"`;
  const refuse = (param: string, what: string): never => {
    throw new InvalidParamsError(`${of}: ${what}`, {
      param,
      details: agent === undefined ? {} : { agent },
    });
  };
  const value: unknown = input;
  if (!isRecord(value)) {
    return refuse(
      'input',
      `expected a string or { message: string, args?: object }, got ${shapeOf(value)}`,
    );
  }
  for (const key of Object.keys(value)) {
    if (!INPUT_FIELDS.has(key)) {
      refuse(
        `input.${key}`,
        `unknown field "${key}" (an agent takes message, args, tools, history)`,
      );
    }
  }
  if (typeof value['message'] !== 'string') {
    refuse('input.message', `message must be a string, got ${shapeOf(value['message'])}`);
  }
  const { args, tools, history } = value;
  if (args !== undefined && !isRecord(args)) {
    refuse('input.args', `args must be an object of named values, got ${shapeOf(args)}`);
  }
  if (tools !== undefined) {
    const wrong = listProblem(tools, (t) => typeof t === 'string');
    if (wrong) refuse('input.tools', `tools must be an array of tool names, got ${wrong}`);
  }
  if (history !== undefined) {
    const wrong = listProblem(history, isRecord);
    if (wrong) refuse('input.history', `history must be an array of chat messages, got ${wrong}`);
  }
  return input;
}
