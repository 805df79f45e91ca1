/**
 * @module The inline agent a durable agent's messages run as (issue 46): registered under the
 * durable agent's name, its handler finds the message's turn by its step, hands the durable
 * handler the message and its `ActorContext`, streams what it yields, and takes its result
 * (next state, output) for the message's end. Invoked any other way — `runtime.invoke`, a
 * step submitted to a run — it fails `INVALID_PARAMS`: a durable agent is addressed by key.
 */
import type { SinkEvent } from '../context/stream-sink.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import type { AgentGeneratorHandler, InlineAgentDefinition } from '../actors/agent-runtime.js';
import type { ActorTurn, DurableAgentDefinition } from '../actors/durable-agent.js';
import type { WaitsHost } from './actor-waits.js';
import type { MessageTurn } from './message-turn.js';

/** What the handler needs: its turns, and the waits' host. */
export interface DurableHandlerHost {
  turnOf(stepId: string): MessageTurn | undefined;
  readonly waits: WaitsHost;
}

function isAsyncGenerator(
  value: unknown,
): value is AsyncGenerator<string | SinkEvent, ActorTurn<unknown>, undefined> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { next?: unknown }).next === 'function' &&
    Symbol.asyncIterator in value
  );
}

/** The inline agent of `def`; see the module. */
export function durableHandler(
  def: DurableAgentDefinition,
  host: DurableHandlerHost,
): InlineAgentDefinition {
  const handler: AgentGeneratorHandler = async function* (_input, ctx, runtime) {
    const turn = ctx.stepId === null ? undefined : host.turnOf(ctx.stepId);
    if (!turn) {
      throw new InvalidParamsError(
        `"${def.name}" is a durable agent: it is sent messages by key (runtime.actor("${def.name}", key), POST /v1/agents/${def.name}/{key}/messages), not invoked`,
        { param: 'agent' },
      );
    }
    if (turn.broken) throw turn.broken;
    const returned = def.handler(turn.message, turn.context(ctx, host.waits), runtime);
    const result = isAsyncGenerator(returned) ? yield* returned : await returned;
    return turn.finish(result);
  };
  return {
    kind: 'agent',
    name: def.name,
    description: def.description,
    timeoutMs: def.timeoutMs,
    placement: 'inline',
    handler,
  };
}
