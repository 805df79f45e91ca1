/**
 * @module `axon list`'s action: the configuration `axon serve` would read here (`--config`,
 * else `./axon.yaml` if there is one), what it registers (`serve/served-list.ts`) as a table —
 * kind, name, where it is declared, description — one line each.
 */
import { CliError } from './cli-error.js';
import type { CommandContext } from './command-context.js';
import { EXIT } from './exit-codes.js';
import { ServeConfigError } from './serve/config-problems.js';
import { loadServeConfig } from './serve/serve-config.js';
import { servedItems } from './serve/served-list.js';
import { formatTable } from './table.js';
import { createTerminalStyle } from './terminal-style.js';

/**
 * Prints what `axon serve` registers on the configuration `config` names (else `./axon.yaml`,
 * if there is one): its agents, tools, workflows, durable agents and schedules, then the
 * examples `axon run` takes. A configuration serve would refuse is a `CliError` (`USAGE`,
 * exit 2) naming the file's line, as serve's.
 */
export async function listServed(config: string | undefined, ctx: CommandContext): Promise<number> {
  let items: Awaited<ReturnType<typeof servedItems>>;
  try {
    const loaded = loadServeConfig({
      flags: config === undefined ? {} : { config },
      env: ctx.env,
      cwd: ctx.cwd,
    });
    items = await servedItems(loaded, ctx.cwd);
  } catch (err) {
    if (err instanceof ServeConfigError) throw new CliError('USAGE', err.message, { cause: err });
    throw err;
  }
  const style = createTerminalStyle(ctx.io.stdout, ctx.env);
  ctx.io.stdout.write(
    formatTable(
      [{ header: 'KIND' }, { header: 'NAME' }, { header: 'FROM' }, { header: 'DESCRIPTION' }],
      items.map((i) => [i.kind, i.name, i.from, i.description]),
      { header: style.bold },
    ),
  );
  return EXIT.OK;
}
