/**
 * @module `axon runs list`: the recent runs of a server or a data dir, newest first — run
 * id, entry, status, created, duration, tokens, cost — as a table or (`--json`) one JSON
 * array. A command that reads runs is built like this one: source options, `--json`, an
 * action that opens the source, prints, and closes it.
 */
import type { Command } from 'commander';
import { CliError } from '../cli-error.js';
import { commandAction, type CommandContext } from '../command-context.js';
import { EXIT } from '../exit-codes.js';
import { elapsedMs, formatCost, formatCount, formatDuration, formatTime } from '../human-format.js';
import { addJsonOption, printAnswer } from '../json-output.js';
import {
  RUN_STATUSES,
  type RunInfo,
  type RunQuery,
  type RunSource,
  type RunStatusName,
} from '../sources/run-source.js';
import { addSourceOptions, openSource, type SourceFlags } from '../sources/source-options.js';
import { formatTable } from '../table.js';
import { statusPaint, type TerminalStyle } from '../terminal-style.js';

/** How many runs `runs list` shows by default, and at most. */
export const RUNS_LIMIT = { default: 50, max: 500 } as const;

/** The options of `runs list` as commander parses them. */
interface RunsListFlags extends SourceFlags {
  readonly status?: string | undefined;
  readonly limit?: string | undefined;
  readonly json?: boolean | undefined;
}

/** `--limit`, checked: an integer from 1 to {@link RUNS_LIMIT}.max. */
export function parseLimit(value: string | undefined): number {
  if (value === undefined) return RUNS_LIMIT.default;
  const n = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!(Number.isSafeInteger(n) && n >= 1 && n <= RUNS_LIMIT.max)) {
    throw new CliError(
      'USAGE',
      `--limit must be an integer from 1 to ${RUNS_LIMIT.max}, got "${value}"`,
    );
  }
  return n;
}

/**
 * `--status`, checked: one or more of `known`, comma-separated, each once; `undefined` when
 * not given. `CliError` `USAGE` naming the statuses otherwise.
 */
export function parseStatusList<S extends string>(
  value: string | undefined,
  known: readonly S[],
): S[] | undefined {
  if (value === undefined) return undefined;
  const given = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const isKnown = (s: string): s is S => (known as readonly string[]).includes(s);
  if (given.length === 0 || !given.every(isKnown)) {
    throw new CliError(
      'USAGE',
      `--status must be one or more of ${known.join(', ')} (comma-separated), got "${value}"`,
    );
  }
  return [...new Set(given.filter(isKnown))];
}

/** `--status` of `runs list`, checked: statuses of {@link RUN_STATUSES}. */
export function parseStatuses(value: string | undefined): RunStatusName[] | undefined {
  return parseStatusList<RunStatusName>(value, RUN_STATUSES);
}

/** A run as `runs list --json` prints it: the raw figures the table shows. */
export function runJson(run: RunInfo): Record<string, unknown> {
  return {
    run_id: run.run_id,
    entry: run.entry,
    flow_id: run.flow_id,
    status: run.status,
    mode: run.mode,
    created_at: run.created_at,
    ended_at: run.ended_at,
    duration_ms: elapsedMs(run.created_at, run.ended_at),
    tokens_in: run.budget_usage.tokens_in,
    tokens_out: run.budget_usage.tokens_out,
    cost_usd: run.budget_usage.cost_usd,
  };
}

/** What a run started at, for a person: its entry, else its flow, else `-`. */
export function entryOf(run: RunInfo): string {
  return run.entry ?? (run.flow_id === null ? '-' : `flow ${run.flow_id}`);
}

/** The runs as `runs list` prints them: one row each, newest first. */
function runsTable(runs: readonly RunInfo[], style: TerminalStyle): string {
  const rows = runs.map((run) => [
    run.run_id,
    entryOf(run),
    { text: run.status, paint: statusPaint(style, run.status) },
    formatTime(run.created_at),
    formatDuration(elapsedMs(run.created_at, run.ended_at)),
    formatCount(run.budget_usage.tokens_in + run.budget_usage.tokens_out),
    formatCost(run.budget_usage.cost_usd),
  ]);
  return formatTable(
    [
      { header: 'RUN' },
      { header: 'ENTRY' },
      { header: 'STATUS' },
      { header: 'CREATED' },
      { header: 'DURATION', align: 'right' },
      { header: 'TOKENS', align: 'right' },
      { header: 'COST', align: 'right' },
    ],
    rows,
    { header: style.bold },
  );
}

/** Prints the runs `query` asks for from `source`; resolves the exit code. */
async function listRuns(
  query: RunQuery,
  json: boolean,
  source: RunSource,
  ctx: CommandContext,
): Promise<number> {
  const runs = await source.listRuns(query);
  const which = query.status ? ` with status ${query.status.join(' or ')}` : '';
  // --json prints the raw figures (runJson), the table the formatted ones.
  printAnswer(ctx, json, runs.map(runJson), (style) =>
    runs.length === 0 ? `no runs${which} in ${source.description}\n` : runsTable(runs, style),
  );
  return EXIT.OK;
}

/** Adds `axon runs` and its subcommand `list` to `program`. */
export function registerRunsCommand(program: Command, ctx: CommandContext): void {
  const runs = program
    .command('runs')
    .description('The runs a server or a data dir holds (see: axon runs list --help)')
    .helpCommand(false);
  const list = runs
    .command('list')
    .description(
      'List recent runs, newest first: id, entry, status, created, duration, tokens, cost',
    );
  addSourceOptions(list)
    .option('--status <s,...>', `Only runs with these statuses: ${RUN_STATUSES.join(', ')}`)
    .option(
      '--limit <n>',
      `At most this many runs (1 to ${RUNS_LIMIT.max}, default ${RUNS_LIMIT.default})`,
    );
  addJsonOption(list).addHelpText(
    'after',
    `
Without --url it reads the data dir, which needs no server and shows every user's runs;
with --url the server shows the runs its key may see. DURATION is "-" while a run is live.

Examples:
  axon runs list
  axon runs list --status failed,cancelled --limit 10
  axon runs list --url http://127.0.0.1:7070 --api-key "$KEY" --json
`,
  );
  list.action(
    commandAction(ctx, list, async () => {
      const flags = list.opts<RunsListFlags>();
      // Checked before the source is opened: a typo costs no connection.
      const query = { limit: parseLimit(flags.limit), status: parseStatuses(flags.status) };
      const source = await openSource(flags, ctx);
      try {
        return await listRuns(query, flags.json === true, source, ctx);
      } finally {
        await source.close();
      }
    }),
  );
}
