/**
 * @module `axon trace <run_id>`: a run's tree of steps (seed 000's trace tree), each line the
 * step's type and name, status, duration, tokens in and out and cost, then the run's totals;
 * `--json` prints the same tree as one JSON document. Reads a server or a data dir, as
 * `axon runs list` does.
 */
import type { Command } from 'commander';
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
import { addJsonOption, writeJson } from '../json-output.js';
import type { RunInfo, StepInfo } from '../sources/run-source.js';
import { entryOf, failedStepCount, runJson } from './runs-command.js';
import { addSourceOptions, openSource, type SourceFlags } from '../sources/source-options.js';
import {
  buildStepNodes,
  durationOf,
  stepJson,
  stepLabel,
  totalsOf,
  walkStepNodes,
  type StepNode,
  type StepTotals,
} from './step-nodes.js';
import { formatTable, type TableCell } from '../table.js';
import { createTerminalStyle, statusPaint, type TerminalStyle } from '../terminal-style.js';

/** The options of `trace` as commander parses them. */
interface TraceFlags extends SourceFlags {
  readonly json?: boolean | undefined;
}

/**
 * The run's line above the tree: `run <id>: <entry>, <status>, created <time>, took <d>`; the
 * status says how many of its steps failed, when any did (`running · 2 failed steps`).
 */
function runLine(run: RunInfo, failedSteps: number, style: TerminalStyle): string {
  const took =
    run.ended_at === null
      ? ''
      : `, took ${formatDuration(elapsedMs(run.created_at, run.ended_at))}`;
  const status = statusPaint(style, run.status)(formatRunStatus(run.status, failedSteps));
  return `run ${style.bold(run.run_id)}: ${entryOf(run)}, ${status}, created ${formatTime(run.created_at)}${took}\n`;
}

/** The tree and its totals as a table. */
function traceTable(
  run: RunInfo,
  roots: readonly StepNode[],
  totals: StepTotals,
  style: TerminalStyle,
): string {
  const rows: TableCell[][] = [];
  const shown: StepInfo[] = [];
  walkStepNodes(roots, (node, prefix) => {
    const s = node.step;
    shown.push(s);
    rows.push([
      prefix + stepLabel(s),
      { text: s.status, paint: statusPaint(style, s.status) },
      formatDuration(durationOf(s)),
      formatCount(s.budget_usage.tokens_in),
      formatCount(s.budget_usage.tokens_out),
      formatCost(s.budget_usage.cost_usd),
      s.error ? { text: `${s.error.code}: ${s.error.message}`, paint: style.red } : '',
    ]);
  });
  rows.push([
    { text: `total: ${totals.steps} step${totals.steps === 1 ? '' : 's'}`, paint: style.bold },
    { text: run.status, paint: statusPaint(style, run.status) },
    formatDuration(totals.duration_ms),
    formatCount(totals.tokens_in),
    formatCount(totals.tokens_out),
    formatCost(totals.cost_usd),
  ]);
  const anyError = shown.some((s) => s.error !== null);
  const columns = [
    { header: 'STEP' },
    { header: 'STATUS' },
    { header: 'DURATION', align: 'right' as const },
    { header: 'TOKENS IN', align: 'right' as const },
    { header: 'TOKENS OUT', align: 'right' as const },
    { header: 'COST', align: 'right' as const },
    ...(anyError ? [{ header: 'ERROR' }] : []),
  ];
  return formatTable(columns, anyError ? rows : rows.map((r) => r.slice(0, 6)), {
    header: style.bold,
  });
}

/** Prints the trace of `runId` from the source `flags` name; resolves the exit code. */
async function trace(runId: string, flags: TraceFlags, ctx: CommandContext): Promise<number> {
  const source = await openSource(flags, ctx);
  try {
    const run = await source.getRun(runId);
    const steps = await source.listSteps(runId);
    const roots = buildStepNodes(steps);
    const totals = totalsOf(roots, steps);
    const failed = failedStepCount(steps);
    const { io } = ctx;
    if (flags.json) {
      writeJson(io, { run: runJson(run, failed), steps: roots.map(stepJson), totals });
      return EXIT.OK;
    }
    const style = createTerminalStyle(io.stdout, ctx.env);
    io.stdout.write(runLine(run, failed, style));
    io.stdout.write(
      steps.length === 0 ? 'no steps\n' : `\n${traceTable(run, roots, totals, style)}`,
    );
    return EXIT.OK;
  } finally {
    await source.close();
  }
}

/** Adds `axon trace <run_id>` to `program`. */
export function registerTraceCommand(program: Command, ctx: CommandContext): void {
  const command = program
    .command('trace')
    .description("Show a run's tree of steps: status, duration, tokens in/out and cost of each")
    .argument('<run_id>', 'The run, as axon runs list shows it');
  addSourceOptions(command);
  addJsonOption(command).addHelpText(
    'after',
    `
A step's tokens and cost include those of the steps under it (a delegation's are charged
to the agent that delegated); the total adds the top-level steps.

Examples:
  axon trace run_01a215f45e6ebe0cd5fe013d3040537c
  axon trace run_01a215f45e6ebe0cd5fe013d3040537c --url http://127.0.0.1:7070 --json
`,
  );
  command.action(
    commandAction(ctx, command, () =>
      trace(command.processedArgs[0] as string, command.opts<TraceFlags>(), ctx),
    ),
  );
}
