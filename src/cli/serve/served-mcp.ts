/**
 * @module `axon.yaml`'s `mcp:` (issue 48, docs/mcp.md): the MCP server of `axon serve`'s
 * `/mcp` — whether it is served, how long an idle session lives, how many sessions may be
 * open — and the budgets of each MCP session's run, which `axon mcp` (stdio) keeps too.
 *
 * @example
 * mcp:
 *   enabled: true
 *   session_idle_ms: 600000
 *   max_sessions: 64
 *   budgets: { max_tokens_out: 20000, max_cost_usd: 1 }
 */
import { z } from 'zod';
import { wireBudgetsSchema } from '../../runs/request-bodies.js';
import type { McpOptions } from '../../server/mcp/mcp-route.js';
import type { WireBudgets } from '../../store/records.js';

const wholePositive = z.number().int().positive();

/** The `mcp:` section of the file. */
export const mcpConfigSchema = z.strictObject({
  /** Serve `/mcp` on `axon serve`; default true. */
  enabled: z.boolean().optional(),
  /** An MCP session with no request for this long is closed, ms; default 1 800 000. */
  session_idle_ms: wholePositive.optional(),
  /** MCP sessions open at once on `axon serve`, at most; default 256. */
  max_sessions: wholePositive.optional(),
  /** The budgets of each MCP session's run (API.md's run `budgets`). */
  budgets: wireBudgetsSchema.optional(),
});

/** The `mcp:` section as the server's and `axon mcp`'s options. */
export function mcpOptionsOf(section: z.output<typeof mcpConfigSchema> | undefined): McpOptions {
  if (section === undefined) return {};
  return {
    ...(section.enabled === undefined ? {} : { enabled: section.enabled }),
    ...(section.session_idle_ms === undefined ? {} : { sessionIdleMs: section.session_idle_ms }),
    ...(section.max_sessions === undefined ? {} : { maxSessions: section.max_sessions }),
    ...(section.budgets === undefined ? {} : { budgets: section.budgets as WireBudgets }),
  };
}
