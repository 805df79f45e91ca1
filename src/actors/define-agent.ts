/** @module Declaring agents: a name, a handler (function or async generator), a timeout. */
import type { AgentDefinition, AgentHandler } from './agent-runtime.js';

/** What {@link defineAgent} takes. */
export interface AgentSpec<TOutput = unknown> {
  readonly name: string;
  readonly description?: string;
  readonly handler: AgentHandler<TOutput>;
  /** Per-invocation timeout; default 30 000 ms (Nerva's in-process default). */
  readonly timeoutMs?: number;
}

/** The default per-invocation agent timeout. */
export const DEFAULT_AGENT_TIMEOUT_MS = 30_000;

const NAME = /^[A-Za-z0-9_.:-]{1,128}$/;

/**
 * Declares an agent.
 *
 * @example
 * const echo = defineAgent({ name: 'echo', handler: async (input) => input.message });
 * const talker = defineAgent({
 *   name: 'talker',
 *   async *handler(input) { for (const word of input.message.split(' ')) yield word + ' '; },
 * });
 */
export function defineAgent<TOutput>(spec: AgentSpec<TOutput>): AgentDefinition<TOutput> {
  if (typeof spec.name !== 'string' || !NAME.test(spec.name)) {
    throw new TypeError(
      `defineAgent: name must match ${NAME.source}, got ${JSON.stringify(spec.name)}`,
    );
  }
  if (typeof spec.handler !== 'function')
    throw new TypeError(`defineAgent(${spec.name}): handler must be a function`);
  const timeoutMs = spec.timeoutMs ?? DEFAULT_AGENT_TIMEOUT_MS;
  if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new RangeError(
      `defineAgent(${spec.name}): timeoutMs must be a positive number, got ${timeoutMs}`,
    );
  }
  return {
    kind: 'agent',
    name: spec.name,
    description: spec.description ?? '',
    handler: spec.handler,
    timeoutMs,
    placement: 'inline',
  };
}
