/**
 * @module `axon.yaml`'s `a2a:` (issue 48, docs/a2a.md): `axon serve`'s A2A server — whether
 * the agent card and `/a2a` are served, the default agent of a message that names no skill,
 * and the endpoint the card names (a server behind a proxy). The default agent is checked
 * once the runtime has its agents: one that is no skill stops the server (exit 2, its line).
 *
 * @example
 * a2a:
 *   enabled: true
 *   default_agent: planner
 *   url: https://agents.example.com/a2a
 */
import { z } from 'zod';
import type { Runtime } from '../../runtime/runtime.js';
import { a2aSkills } from '../../server/a2a/a2a-card.js';
import type { A2aOptions } from '../../server/a2a/a2a-options.js';
import { ServeConfigError } from './config-problems.js';

/** The `a2a:` section of the file. */
export const a2aConfigSchema = z.strictObject({
  /** Serve the agent card and `/a2a`; default true. */
  enabled: z.boolean().optional(),
  /** The agent of a message that names no skill; default none (such a message is refused). */
  default_agent: z.string().min(1).optional(),
  /** The JSON-RPC endpoint the card names; default the scheme and `Host` the card is asked with. */
  url: z
    .string()
    .regex(/^https?:\/\/[^\s/]+\S*$/, 'must be an absolute http(s) URL')
    .optional(),
});

/** The `a2a:` section as the server's options. */
export function a2aOptionsOf(section: z.output<typeof a2aConfigSchema> | undefined): A2aOptions {
  if (section === undefined) return {};
  return {
    ...(section.enabled === undefined ? {} : { enabled: section.enabled }),
    ...(section.default_agent === undefined ? {} : { defaultAgent: section.default_agent }),
    ...(section.url === undefined ? {} : { url: section.url }),
  };
}

/**
 * Throws `ServeConfigError` naming `a2a.default_agent` and its line in `source` when the
 * default agent is not one of the card's skills on `runtime` (a name nobody registered, a
 * durable agent, a workflow role), A2A served or not.
 */
export function checkA2aDefault(
  runtime: Runtime,
  options: A2aOptions,
  source: string,
  lineOf: (key: string) => number | null,
): void {
  const agent = options.defaultAgent;
  if (agent === undefined) return;
  const skills = a2aSkills(runtime).map((s) => s.name);
  if (skills.includes(agent)) return;
  throw new ServeConfigError([
    {
      source,
      line: lineOf('a2a.default_agent'),
      key: 'a2a.default_agent',
      message: `"${agent}" is not an agent served as an A2A skill (${skills.join(', ') || 'none'})`,
    },
  ]);
}
