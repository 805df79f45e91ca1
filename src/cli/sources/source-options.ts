/**
 * @module The options that say where a command reads runs from — `--url` (with `--api-key`)
 * for a server, `--data-dir` for the store a server wrote — and opening that
 * {@link RunSource}. A command that reads runs adds them with {@link addSourceOptions} and
 * opens its source with {@link openSource}, which imports only the kind of source it opens
 * (a server's needs no SQLite, a data dir's no HTTP client).
 */
import { Option, type Command } from 'commander';
import { CliError } from '../cli-error.js';
import type { CommandContext } from '../command-context.js';
import { SERVE_DEFAULTS } from '../cli-defaults.js';
import type { AgentSource } from './agent-source.js';
import type { RunSource } from './run-source.js';
import type { ThreadSource } from './thread-source.js';

/** The source options as commander parses them. */
export interface SourceFlags {
  readonly url?: string | undefined;
  readonly apiKey?: string | undefined;
  readonly dataDir?: string | undefined;
  /** `workflow` and `thread` on a data dir: the `axon.yaml` whose workflows to add. */
  readonly config?: string | undefined;
}

/** Adds `--url`, `--api-key` and `--data-dir` to `command`. */
export function addSourceOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        '--url <base>',
        'Read from the axon server at <base>, e.g. http://127.0.0.1:7070',
      ).conflicts('dataDir'),
    )
    .addOption(
      new Option(
        '--api-key <key>',
        "The server's API key, sent as Authorization: Bearer <key> (default AXON_API_KEY)",
      ),
    )
    .addOption(
      new Option(
        '--data-dir <dir>',
        `Read the store (axon.db) axon serve keeps in <dir> (default AXON_DATA_DIR or ${SERVE_DEFAULTS.dataDir})`,
      ),
    );
}

/**
 * The source `flags` name: the server at `--url`, else the data dir (`--data-dir`, else
 * `AXON_DATA_DIR`, else `./.axon`). `CliError` `USAGE` for `--api-key` without `--url` or a
 * URL that is not http(s); `UNREACHABLE` for a data dir that is not there.
 */
export async function openSource(flags: SourceFlags, ctx: CommandContext): Promise<RunSource> {
  const where = sourceOf(flags, ctx);
  if (where.kind === 'server') {
    const { createServerSource } = await import('./server-source.js');
    return createServerSource({ url: where.url, apiKey: where.apiKey, signal: ctx.signal });
  }
  const { openDataDirSource } = await import('./data-dir-source.js');
  return openDataDirSource({ dir: where.dir, cwd: ctx.cwd });
}

/** Where `flags` point: a server, or a data dir (`CliError` `USAGE` as {@link openSource}). */
function sourceOf(
  flags: SourceFlags,
  ctx: CommandContext,
):
  | { readonly kind: 'server'; readonly url: string; readonly apiKey: string | undefined }
  | { readonly kind: 'dataDir'; readonly dir: string } {
  if (flags.url !== undefined) {
    if (flags.config !== undefined) {
      throw new CliError('USAGE', '--config goes with a data dir (a server has its own)');
    }
    const envKey = ctx.env['AXON_API_KEY'];
    const apiKey = flags.apiKey ?? (envKey === '' ? undefined : envKey);
    return { kind: 'server', url: flags.url, apiKey };
  }
  if (flags.apiKey !== undefined) {
    throw new CliError('USAGE', '--api-key goes with --url (a data dir needs no key)');
  }
  const envDir = ctx.env['AXON_DATA_DIR'];
  const dir =
    flags.dataDir ?? (envDir === undefined || envDir === '' ? SERVE_DEFAULTS.dataDir : envDir);
  return { kind: 'dataDir', dir };
}

/** The data dir `flags` name (`--data-dir`, `AXON_DATA_DIR`, `./.axon`), or `undefined` with `--url`. */
export function dataDirOf(flags: SourceFlags, ctx: CommandContext): string | undefined {
  const where = sourceOf(flags, ctx);
  return where.kind === 'dataDir' ? where.dir : undefined;
}

/** Adds {@link addSourceOptions} and `--config <file>` (the workflows of a data dir). */
export function addThreadSourceOptions(command: Command): Command {
  return addSourceOptions(command).option(
    '--config <file>',
    `With a data dir: the config file whose workflows: to add to the example (default ./${SERVE_DEFAULTS.configFile} if there is one)`,
  );
}

/**
 * The {@link ThreadSource} `flags` name, as {@link openSource}: the server at `--url`, else
 * the data dir, whose workflows are `--config`'s plus the example `code-review`.
 */
export async function openThreadSource(
  flags: SourceFlags,
  ctx: CommandContext,
): Promise<ThreadSource> {
  const where = sourceOf(flags, ctx);
  if (where.kind === 'server') {
    const { createThreadServerSource } = await import('./thread-server-source.js');
    return createThreadServerSource({ url: where.url, apiKey: where.apiKey, signal: ctx.signal });
  }
  const { openThreadDataDirSource } = await import('./thread-data-dir-source.js');
  return openThreadDataDirSource({
    dir: where.dir,
    config: flags.config,
    cwd: ctx.cwd,
    env: ctx.env,
    signal: ctx.signal,
  });
}

/** Runs `body` on the {@link ThreadSource} `flags` name ({@link openThreadSource}), closing it after. */
export async function withThreadSource(
  flags: SourceFlags,
  ctx: CommandContext,
  body: (source: ThreadSource) => Promise<number>,
): Promise<number> {
  const source = await openThreadSource(flags, ctx);
  try {
    return await body(source);
  } finally {
    await source.close();
  }
}

/**
 * The {@link AgentSource} `flags` name, as {@link openSource}: the server at `--url`, else the
 * data dir (`--config`: the configuration of the runtime a message is sent on there).
 */
export async function openAgentSource(
  flags: SourceFlags,
  ctx: CommandContext,
): Promise<AgentSource> {
  const where = sourceOf(flags, ctx);
  if (where.kind === 'server') {
    const { createAgentServerSource } = await import('./agent-server-source.js');
    return createAgentServerSource({ url: where.url, apiKey: where.apiKey, signal: ctx.signal });
  }
  const { openAgentDataDirSource } = await import('./agent-data-dir-source.js');
  return openAgentDataDirSource({
    dir: where.dir,
    config: flags.config,
    cwd: ctx.cwd,
    env: ctx.env,
    stderr: ctx.io.stderr,
    signal: ctx.signal,
  });
}

/** Runs `body` on the {@link AgentSource} `flags` name ({@link openAgentSource}), closing it after. */
export async function withAgentSource(
  flags: SourceFlags,
  ctx: CommandContext,
  body: (source: AgentSource) => Promise<number>,
): Promise<number> {
  const source = await openAgentSource(flags, ctx);
  try {
    return await body(source);
  } finally {
    await source.close();
  }
}
