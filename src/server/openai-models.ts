/**
 * @module The models of the OpenAI API (docs/openai-api.md): each registered agent a client
 * may talk to as `agent:<name>`, and the front door as `axon` where the server has one. Not
 * models: durable agents (addressed by a key, which a chat completion has no place for:
 * `/v1/agents/{name}/{key}/messages` sends them messages) and workflows' role agents
 * (`workflow.<name>.<role>`, which take a thread's turn, not a message).
 */
import type { Runtime } from '../runtime/runtime.js';
import { isTurnAgent } from '../workflows/turn-agent.js';
import { openAIRefusal } from './openai-errors.js';

/** The model of the front door. */
export const FRONT_DOOR_MODEL = 'axon';
/** What an agent's model is named by: `agent:<name>`. */
export const AGENT_MODEL_PREFIX = 'agent:';

/** What a model names: an agent, or the front door. */
export type OpenAIModel =
  | { readonly kind: 'agent'; readonly id: string; readonly agent: string }
  | { readonly kind: 'front_door'; readonly id: typeof FRONT_DOOR_MODEL };

/** A model as `GET /v1/models` lists it (OpenAI's model object). */
export interface ModelObject {
  readonly id: string;
  readonly object: 'model';
  /** When the server started, in seconds since the epoch (agents keep no time of their own). */
  readonly created: number;
  readonly owned_by: 'axon';
}

/** The models a server over `runtime` offers, the front door's first; see the module. */
export function modelIds(runtime: Runtime, frontDoor: boolean): string[] {
  const durable = new Set(runtime.durable.list().map((d) => d.name));
  const agents = runtime
    .listAgents()
    .map((a) => a.name)
    .filter((name) => !durable.has(name) && !isTurnAgent(name))
    .sort();
  return [...(frontDoor ? [FRONT_DOOR_MODEL] : []), ...agents.map((a) => AGENT_MODEL_PREFIX + a)];
}

/** The model object of `id`. */
export function modelObject(id: string, created: number): ModelObject {
  return { id, object: 'model', created, owned_by: 'axon' };
}

/**
 * What `model` names; 404 `model_not_found` (param `model`) for anything else: an unknown
 * agent, a durable agent or a role agent (each saying where it is reached instead), a name
 * without `agent:`, or `axon` on a server without a front door.
 */
export function resolveModel(runtime: Runtime, frontDoor: boolean, model: string): OpenAIModel {
  const missing = (why: string): never => {
    throw openAIRefusal(
      404,
      'NOT_FOUND',
      `The model \`${model}\` does not exist: ${why}`,
      'model_not_found',
      'model',
    );
  };
  if (model === FRONT_DOOR_MODEL) {
    if (frontDoor) return { kind: 'front_door', id: FRONT_DOOR_MODEL };
    return missing('this server has no front door (GET /v1/models lists the models)');
  }
  if (!model.startsWith(AGENT_MODEL_PREFIX)) {
    return missing(
      `a model is agent:<name> or ${FRONT_DOOR_MODEL} (GET /v1/models lists the models)`,
    );
  }
  const agent = model.slice(AGENT_MODEL_PREFIX.length);
  if (runtime.durable.list().some((d) => d.name === agent)) {
    return missing(
      `"${agent}" is a durable agent, addressed by a key: send it messages with POST /v1/agents/${agent}/{key}/messages`,
    );
  }
  if (isTurnAgent(agent)) {
    return missing(`"${agent}" is a workflow's role: start a thread of its workflow instead`);
  }
  if (!runtime.listAgents().some((a) => a.name === agent)) {
    return missing(`no agent "${agent}" is registered (GET /v1/models lists the models)`);
  }
  return { kind: 'agent', id: model, agent };
}
