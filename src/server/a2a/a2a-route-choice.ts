/**
 * @module Which agent an A2A message goes to, decided before its task is made: the skill
 * its `metadata.skill` names; else the front door's router, when the server has one, if it
 * picks a skill; else the default agent the configuration names; else the card's first skill
 * (issue 48: a message is never refused for naming none). A skill that is not one of the
 * card's, and a message on a server with no skill at all, is refused with
 * `RequestMalformedError` (JSON-RPC `-32602`) saying which skills there are — nothing is run
 * and no task is made.
 */
import type { Message } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import type { ExecContext } from '../../context/exec-context.js';
import type { Router } from '../../orchestrator/route-result.js';
import { agentRequestOf, type AgentRequest } from './a2a-parts.js';

/** The metadata key of a message that names its skill. */
export const SKILL_KEY = 'skill';

/** Where a message goes, and how that was decided. */
export interface A2aRoute {
  /** The agent (the skill) the message's step invokes. */
  readonly agent: string;
  /**
   * `skill`: named by the message; `router`: the front door's router; `default`: the
   * configuration's; `first`: the card's first skill (no default configured).
   */
  readonly by: 'skill' | 'router' | 'default' | 'first';
  /** The agent's input, from the message's parts. */
  readonly input: AgentRequest;
}

/** What {@link chooseA2aRoute} decides with. */
export interface RouteChoiceDeps {
  /** The card's skills now: the agents a message may name. */
  readonly skills: readonly string[];
  /** The front door's router, or `null`. */
  readonly router: Router | null;
  /** The agent of a message that names none and the router does not place, or `null`. */
  readonly defaultAgent: string | null;
  /** The context the router classifies in (the caller's). */
  readonly context: () => ExecContext;
}

/** `skills` for a message: `a, b, c`, or `none` when the server serves none. */
const listed = (skills: readonly string[]): string =>
  skills.length === 0 ? 'none' : skills.join(', ');

/**
 * The route of `message` (see the module). `requestMetadata` is the request's own metadata:
 * a `skill` there is refused rather than ignored, since the skill is the message's.
 */
export async function chooseA2aRoute(
  message: Message,
  requestMetadata: Readonly<Record<string, unknown>> | undefined,
  deps: RouteChoiceDeps,
): Promise<A2aRoute> {
  if (requestMetadata !== undefined && SKILL_KEY in requestMetadata) {
    throw new RequestMalformedError(
      `the skill goes in the message's metadata (message.metadata.${SKILL_KEY}), not the request's`,
    );
  }
  const input = agentRequestOf(message);
  const named: unknown = message.metadata?.[SKILL_KEY];
  if (named !== undefined) {
    if (typeof named !== 'string' || named === '') {
      throw new RequestMalformedError(
        `message.metadata.${SKILL_KEY} must name a skill (a string): one of ${listed(deps.skills)}`,
      );
    }
    if (!deps.skills.includes(named)) {
      throw new RequestMalformedError({
        message: `no skill named "${named}" here; the skills are ${listed(deps.skills)}`,
        metadata: { skill: named },
      });
    }
    return { agent: named, by: 'skill', input };
  }
  if (deps.router) {
    const picked = (await deps.router.classify(input.message, deps.context())).bestHandler;
    if (picked !== null && deps.skills.includes(picked)) {
      return { agent: picked, by: 'router', input };
    }
  }
  if (deps.defaultAgent !== null) return { agent: deps.defaultAgent, by: 'default', input };
  const first = deps.skills[0];
  if (first !== undefined) return { agent: first, by: 'first', input };
  throw new RequestMalformedError(
    `the message names no skill (message.metadata.${SKILL_KEY}) and this server serves none`,
  );
}
