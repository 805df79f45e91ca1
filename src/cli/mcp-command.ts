/**
 * @module `axon mcp`: its option, help and action, which imports what it runs
 * (`serve-mcp-stdio.ts`: the runtime, the store, the MCP SDK) only when it runs.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { SERVE_DEFAULTS } from './cli-defaults.js';
import { commandAction, type CommandContext } from './command-context.js';

const MCP_AFTER = `
It speaks MCP on stdin and stdout (nothing else is written there; logs go to stderr): an
MCP host starts it as a child process, e.g. Claude Desktop's claude_desktop_config.json:
  { "mcpServers": { "axon": { "command": "npx",
      "args": ["axon", "mcp", "--data-dir", "/path/to/.axon"] } } }
Tools: agent_<name> (an agent: { message, args? }), each function tool by its name (its
own schema), actor_<name> (a durable agent's actor: { key, message }). Each call is a step
of the session's run (entry mcp), kept in the data dir: axon runs list, axon trace and the
trace UI of an axon serve on that data dir show it. docs/mcp.md has the rest.
It ends when the host closes stdin, or on SIGINT or SIGTERM (calls in flight are
cancelled, the run is completed), exit 0. A configuration axon serve refuses, one keeping
the store in PostgreSQL or Redis, or a data dir a running axon serve holds (use its /mcp):
one line on stderr, exit 2.

Environment:
  AXON_DATA_DIR           as --data-dir
  AXON_SCRIPTED_TOKEN_MS  delay per scripted token of the examples' engine (default 5)
  AXON_LOG_LEVEL          level of the logs on stderr (default warn)
`;

/** Adds `axon mcp` to `program`. */
export function registerMcpCommand(program: Command, ctx: CommandContext): void {
  const mcp = program
    .command('mcp')
    .description(
      "Serve the agents and tools of a data dir's axon serve to an MCP host over stdio (docs/mcp.md)",
    )
    .option(
      '--data-dir <dir>',
      `The data dir whose store the calls are kept in (default AXON_DATA_DIR, the config's data_dir, else ${SERVE_DEFAULTS.dataDir})`,
    )
    .option(
      '--config <file>',
      "axon serve's YAML configuration: its agents, tools, durable agents, policy and mcp.budgets (default ./axon.yaml, if there is one)",
    )
    .addHelpText('after', MCP_AFTER);
  mcp.action(
    commandAction(ctx, mcp, async () => {
      const o = mcp.opts<Record<string, string | undefined>>();
      const { serveMcpStdio } = await import('./serve-mcp-stdio.js');
      return serveMcpStdio(
        {
          dataDir: o['dataDir'] === undefined ? undefined : resolve(ctx.cwd, o['dataDir']),
          config: o['config'],
          cwd: ctx.cwd,
          env: ctx.env,
          version: ctx.version,
          signal: ctx.signal,
          input: process.stdin,
          output: process.stdout,
        },
        ctx.io,
      );
    }),
  );
}
