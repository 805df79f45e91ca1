/**
 * @module The options of `axon serve`'s A2A server (`createServer(runtime, { a2a })`, and
 * `axon.yaml`'s `a2a:`), checked when the server is made: a default agent must be one of the
 * card's skills then, a URL an absolute http(s) one, a router a router.
 */
import type { Router } from '../../orchestrator/route-result.js';
import type { Runtime } from '../../runtime/runtime.js';
import { a2aSkills } from './a2a-card.js';

/** Options of the A2A server; see docs/a2a.md. */
export interface A2aOptions {
  /** Whether the card and the JSON-RPC endpoint are served; default `true`. */
  readonly enabled?: boolean;
  /**
   * The agent of a message that names no skill (and that the router, if any, does not
   * place). Without one such a message goes to the card's first skill.
   */
  readonly defaultAgent?: string;
  /**
   * The front door's router, asked for a message that names no skill; its pick is taken
   * when it is a skill, else the message goes to the default agent.
   */
  readonly router?: Router;
  /**
   * The JSON-RPC endpoint as clients reach it, for the card (a server behind a proxy that
   * ends TLS); default the scheme and `Host` the card was asked with, and `/a2a`.
   */
  readonly url?: string;
}

/** {@link A2aOptions} checked, with their defaults. */
export interface CheckedA2aOptions {
  readonly enabled: boolean;
  readonly defaultAgent: string | null;
  readonly router: Router | null;
  readonly url: string | null;
}

/**
 * `options` checked against `runtime`'s agents: `RangeError` for a default agent that is no
 * skill (a name nobody registered, a durable agent, a workflow role) or a URL that is not an
 * absolute http(s) one, `TypeError` for a router without `classify`.
 */
export function checkA2aOptions(runtime: Runtime, options: A2aOptions = {}): CheckedA2aOptions {
  const enabled = options.enabled ?? true;
  if (typeof enabled !== 'boolean') {
    throw new TypeError('createServer: a2a.enabled must be a boolean');
  }
  const { defaultAgent, router, url } = options;
  if (defaultAgent !== undefined) {
    const skills = a2aSkills(runtime).map((s) => s.name);
    if (!skills.includes(defaultAgent)) {
      throw new RangeError(
        `createServer: a2a.defaultAgent "${defaultAgent}" is not an agent served as an A2A skill (${skills.join(', ') || 'none'})`,
      );
    }
  }
  if (router !== undefined && typeof (router as Partial<Router>).classify !== 'function') {
    throw new TypeError('createServer: a2a.router must have classify(message, ctx)');
  }
  if (url !== undefined && !/^https?:\/\/[^\s/]+\S*$/.test(url)) {
    throw new RangeError(`createServer: a2a.url must be an absolute http(s) URL, got ${url}`);
  }
  return {
    enabled,
    defaultAgent: defaultAgent ?? null,
    router: router ?? null,
    url: url ?? null,
  };
}
