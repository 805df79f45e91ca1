/** @module Agent inputs and results, with Nerva's statuses. */
import type { TokenUsage } from '../context/exec-context.js';
import type { ChatMessage } from '../engines/chat-request.js';
import type { AxonError } from '../errors/axon-error.js';

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

/** Normalises a string or {@link AgentInput} to an {@link AgentInput}. */
export function toAgentInput(input: string | AgentInput): AgentInput {
  if (typeof input === 'string') return { message: input };
  if (typeof input !== 'object' || typeof input.message !== 'string') {
    throw new TypeError('agent input must be a string or an object with a string "message"');
  }
  return input;
}
