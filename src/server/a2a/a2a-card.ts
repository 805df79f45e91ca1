/**
 * @module `axon serve`'s A2A agent card: the server as one A2A agent whose skills are its
 * registered agents (each by name, with its description) — not durable agents, which are
 * addressed by key, nor workflow roles, which are a thread's turns. Its JSON-RPC interface
 * is served at `url` for protocol 1.0 and 0.3 alike; with API keys the card says a Bearer key
 * is required. A 0.3 client is given the 0.3 shape of the same card (a top-level `url`),
 * with the 1.0 interfaces kept in it.
 */
import { AgentCard, type AgentInterface, type AgentSkill } from '@a2a-js/sdk';
import { duplicateInterfacesForLegacy } from '@a2a-js/sdk/compat/v0_3';
import type { Runtime } from '../../runtime/runtime.js';
import { isTurnAgent } from '../../workflows/turn-agent.js';

/** The media types a message's parts and a task's artifacts may have. */
const MODES = ['text/plain', 'application/json'];
/** The name of the card's security scheme, with keys. */
const BEARER = 'bearer';
/** What the card says of the server. */
const DESCRIPTION =
  "The agents of an axon server. Name one in a message's metadata.skill; a message that names none goes to the server's router or default agent.";

/** An agent served as a skill. */
export interface A2aSkill {
  readonly name: string;
  readonly description: string;
}

/** The agents a message may name now: the runtime's, but its durable agents and workflow roles. */
export function a2aSkills(runtime: Runtime): A2aSkill[] {
  const durable = new Set(runtime.durable.list().map((d) => d.name));
  return runtime.listAgents().filter((a) => !durable.has(a.name) && !isTurnAgent(a.name));
}

/** What a card is made of. */
export interface A2aCardInput {
  readonly skills: readonly A2aSkill[];
  /** The JSON-RPC endpoint, absolute. */
  readonly url: string;
  /** The server's version. */
  readonly version: string;
  /** Whether API keys are configured (the card then requires a Bearer key). */
  readonly keys: boolean;
}

/** The card (the SDK's 1.0 shape). */
export function a2aCard(input: A2aCardInput): AgentCard {
  const v1: AgentInterface = {
    url: input.url,
    protocolBinding: 'JSONRPC',
    tenant: '',
    protocolVersion: '1.0',
  };
  return {
    name: 'axon',
    description: DESCRIPTION,
    supportedInterfaces: duplicateInterfacesForLegacy([v1], ['JSONRPC']),
    provider: undefined,
    version: input.version,
    capabilities: {
      streaming: true,
      pushNotifications: false,
      extensions: [],
      extendedAgentCard: false,
    },
    securitySchemes: input.keys
      ? {
          [BEARER]: {
            scheme: {
              $case: 'httpAuthSecurityScheme',
              value: {
                scheme: 'Bearer',
                bearerFormat: '',
                description: "one of the server's API keys",
              },
            },
          },
        }
      : {},
    securityRequirements: input.keys ? [{ schemes: { [BEARER]: { list: [] } } }] : [],
    defaultInputModes: MODES,
    defaultOutputModes: MODES,
    skills: input.skills.map((s): AgentSkill => ({
      id: s.name,
      name: s.name,
      description: s.description,
      tags: ['agent'],
      examples: [],
      inputModes: [],
      outputModes: [],
      securityRequirements: [],
    })),
    signatures: [],
  };
}

/** The card as A2A 1.0 puts it on the wire (its ProtoJSON). */
export function cardJson(card: AgentCard): unknown {
  return AgentCard.toJSON(card);
}

/**
 * The card as A2A 0.3 puts it on the wire: the endpoint of its 0.3 interface as the
 * top-level `url`, with `preferredTransport` and `protocolVersion`, the skills with their
 * tags, the Bearer scheme in OpenAPI's form; and the 1.0 `supportedInterfaces` too, so a
 * 1.0 client that reads this shape finds its interface.
 */
export function legacyCardJson(card: AgentCard): Record<string, unknown> {
  const legacy = card.supportedInterfaces.find((i) => i.protocolVersion === '0.3');
  const keys = card.securityRequirements.length > 0;
  const v1 = cardJson(card) as { supportedInterfaces?: unknown };
  return {
    protocolVersion: '0.3',
    name: card.name,
    description: card.description,
    version: card.version,
    url: legacy?.url ?? '',
    preferredTransport: 'JSONRPC',
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: card.defaultInputModes,
    defaultOutputModes: card.defaultOutputModes,
    skills: card.skills.map((s) => ({
      id: s.id,
      name: s.name,
      description: s.description,
      tags: s.tags,
    })),
    ...(keys
      ? {
          securitySchemes: {
            [BEARER]: {
              type: 'http',
              scheme: 'bearer',
              description: "one of the server's API keys",
            },
          },
          security: [{ [BEARER]: [] }],
        }
      : {}),
    supportedInterfaces: v1.supportedInterfaces,
  };
}
