/**
 * @module `axon runs list`: the recent runs of a server or a data dir, newest first — run
 * id, entry, status (with how many of its steps failed), created, duration, tokens, cost — as
 * a table or (`--json`) one JSON array. A command that reads runs is built like this one:
 * source options, `--json`, an action that opens the source, prints, and closes it.
 */
import type { Command } from 'commander';
import { CliError } from '../cli-error.js';
import { commandAction, type CommandContext } from '../command-context.js';
import { EXIT } from '../exit-codes.js';
import {
  elapsedMs,
  formatCost,
  formatCount,
  formatDuration,
  formatRunStatus,
  formatTime,
} from '../human-format.js';
import { addJsonOption, printAnswer } from '../json-output.js';
import {
  RUN_STATUSES,
  type RunInfo,
  type RunQuery,
  type RunSource,
  type RunStatusName,
  type StepInfo,
} from '../sources/run-source.js';
import { addSourceOptions, openSource, type SourceFlags } from '../sources/source-options.js';
import { formatTable } from '../table.js';
import { statusPaint, type TerminalStyle } from '../terminal-style.js';

/** How many runs `runs list` shows by default, and at most. */
export const RUNS_LIMIT = { default: 50, max: 500 } as const;
/** The longest `--entry` (what `GET /v1/runs?entry=` takes). */
const MAX_ENTRY = 256;
/** How many runs' steps `runs list` reads at once, to count the failed ones. */
const STEP_READS = 8;

/** The options of `runs list` as commander parses them. */
interface RunsListFlags extends SourceFlags {
  readonly status?: string | undefined;
  readonly entry?: string | undefined;
  readonly limit?: string | undefined;
  readonly json?: boolean | undefined;
}

/** `--entry`, checked: 1 to 256 characters; `undefined` when not given. */
export function parseEntry(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (value === '' || value.length > MAX_ENTRY) {
    throw new CliError('USAGE', `--entry must be 1 to ${MAX_ENTRY} characters, got "${value}"`);
  }
  return value;
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

/**
 * A run as `runs list --json` prints it: the raw figures the table shows, `failed_steps` how
 * many of its steps failed.
 */
export function runJson(run: RunInfo, failedSteps: number): Record<string, unknown> {
  return {
    run_id: run.run_id,
    entry: run.entry,
    flow_id: run.flow_id,
    status: run.status,
    failed_steps: failedSteps,
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

/** How many of `steps` failed. */
export function failedStepCount(steps: readonly Pick<StepInfo, 'status'>[]): number {
  return steps.reduce((n, step) => (step.status === 'failed' ? n + 1 : n), 0);
}

/**
 * How many steps of each run failed, in the order of `runs`: from each run's steps as the
 * source gives them (API.md's Run has no such figure), {@link STEP_READS} runs at a time.
 */
async function failedStepsOf(source: RunSource, runs: readonly RunInfo[]): Promise<number[]> {
  const counts: number[] = [];
  for (let i = 0; i < runs.length; i += STEP_READS) {
    const batch = runs.slice(i, i + STEP_READS);
    counts.push(
      ...(await Promise.all(
        batch.map(async (run) => failedStepCount(await source.listSteps(run.run_id))),
      )),
    );
  }
  return counts;
}

/** The runs as `runs list` prints them: one row each, newest first. */
function runsTable(
  runs: readonly RunInfo[],
  failed: readonly number[],
  style: TerminalStyle,
): string {
  const rows = runs.map((run, i) => [
    run.run_id,
    entryOf(run),
    {
      text: formatRunStatus(run.status, failed[i] ?? 0),
      paint: statusPaint(style, run.status),
    },
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
  const failed = await failedStepsOf(source, runs);
  const which = [
    query.status ? ` with status ${query.status.join(' or ')}` : '',
    query.entry === undefined ? '' : ` of entry ${query.entry}`,
  ].join('');
  // --json prints the raw figures (runJson), the table the formatted ones.
  printAnswer(
    ctx,
    json,
    runs.map((run, i) => runJson(run, failed[i] ?? 0)),
    (style) =>
      runs.length === 0
        ? `no runs${which} in ${source.description}\n`
        : runsTable(runs, failed, style),
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
    .option('--entry <name>', 'Only runs of this entry (the name a run is listed under), exact')
    .option(
      '--limit <n>',
      `At most this many runs (1 to ${RUNS_LIMIT.max}, default ${RUNS_LIMIT.default})`,
    );
  addJsonOption(list).addHelpText(
    'after',
    `
Without --url it reads the data dir, which needs no server and shows every user's runs;
with --url the server shows the runs its key may see. DURATION is "-" while a run is live.
STATUS says how many of a run's steps failed, when any did: "running · 2 failed steps".

Examples:
  axon runs list
  axon runs list --status failed,cancelled --limit 10
  axon runs list --entry trip-planner
  axon runs list --url http://127.0.0.1:7070 --api-key "$KEY" --json
`,
  );
  list.action(
    commandAction(ctx, list, async () => {
      const flags = list.opts<RunsListFlags>();
      // Checked before the source is opened: a typo costs no connection.
      const query = {
        limit: parseLimit(flags.limit),
        status: parseStatuses(flags.status),
        entry: parseEntry(flags.entry),
      };
      const source = await openSource(flags, ctx);
      try {
        return await listRuns(query, flags.json === true, source, ctx);
      } finally {
        await source.close();
      }
    }),
  );
}
