/**
 * @module The "Current figures" table of docs/benchmarks.md, written by `npm run bench`
 * (`run-all.ts`) from the benches it has just run: every figure of every result they wrote,
 * beside its target (`bench/targets.ts`) and whether it met it; a bench that failed, or wrote
 * no result, is one row "not run" with why. Nothing of an earlier run is shown.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { replaceBetween } from './doc-markers.js';
import type { RunEnvironment } from './environment.js';
import { markdownTable, type LoadedResult } from './summary.js';
import {
  describeTarget,
  formatFigure,
  judge,
  TARGETS,
  type Target,
  type Verdict,
} from './targets.js';

/** Where the generated table starts in docs/benchmarks.md. */
export const CURRENT_START = '<!-- bench:current:start -->';
/** Where it ends. */
export const CURRENT_END = '<!-- bench:current:end -->';

/** How one bench of the run went. */
export interface BenchRun {
  /** Its result's `bench` (`inline` for `npm run bench:inline`). */
  readonly bench: string;
  /** Why it failed (its last line on stderr, or its exit code); `null` when it succeeded. */
  readonly error: string | null;
}

/** One row of the table. */
export interface CurrentRow {
  readonly bench: string;
  /** `metrics.<name>` or `ratios.<name>`; `null` for a bench that was not run. */
  readonly figure: string | null;
  readonly value: number | null;
  /** The figure's target, if `bench/targets.ts` has one. */
  readonly target: Target | undefined;
  /** `met`, `missed`, `not measured`; `no target`; or `not run: <why>`. */
  readonly result: Verdict | 'no target' | `not run: ${string}`;
}

/**
 * The rows of a run: for each bench in its order, every figure of the result it wrote during
 * the run (`since` or later), targets first in `targets`' order, then the figures without
 * one by name; then each target its result lacks, `not measured`. A bench that failed, or
 * whose result predates `since`, is one `not run` row.
 */
export function currentRows(
  runs: readonly BenchRun[],
  results: readonly LoadedResult[],
  since: Date,
  targets: readonly Target[] = TARGETS,
): CurrentRow[] {
  const rows: CurrentRow[] = [];
  for (const run of runs) {
    const result = results.find(
      (r) => r.bench === run.bench && new Date(r.date).getTime() >= since.getTime(),
    );
    if (run.error !== null || result === undefined) {
      const why = run.error ?? 'it wrote no result';
      rows.push({
        bench: run.bench,
        figure: null,
        value: null,
        target: undefined,
        result: `not run: ${why}`,
      });
      continue;
    }
    const own = targets.filter((t) => t.bench === run.bench);
    const targeted = new Set(own.map((t) => `${t.kind}.${t.name}`));
    for (const target of own) {
      const raw = result[target.kind][target.name];
      const value = typeof raw === 'number' && Number.isFinite(raw) ? raw : null;
      rows.push({
        bench: run.bench,
        figure: `${target.kind}.${target.name}`,
        value,
        target,
        result: judge(target, value),
      });
    }
    for (const kind of ['metrics', 'ratios'] as const) {
      for (const name of Object.keys(result[kind]).sort()) {
        if (targeted.has(`${kind}.${name}`)) continue;
        const raw = result[kind][name];
        rows.push({
          bench: run.bench,
          figure: `${kind}.${name}`,
          value: typeof raw === 'number' && Number.isFinite(raw) ? raw : null,
          target: undefined,
          result: 'no target',
        });
      }
    }
  }
  return rows;
}

/** `2026-11-25 13:20 UTC` from an ISO date. */
function formatDate(date: string): string {
  const d = new Date(date);
  return Number.isNaN(d.getTime()) ? date : `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

// The figure as shown, unless rounding would carry it across its target (0.9496 shown as
// 0.95 beside "missed"): then all its digits.
function shown(row: CurrentRow): string {
  if (row.value === null) return '—';
  const text = formatFigure(row.value);
  if (row.target === undefined) return text;
  const reread = Number(text.replaceAll(' ', ''));
  return judge(row.target, reread) === row.result ? text : String(row.value);
}

const RESULT_TEXT: Readonly<Record<string, string>> = {
  met: 'met',
  missed: '**missed**',
  'not measured': 'not measured',
  'no target': '—',
};

/** The table and the line above it, as markdown: pure, for tests. */
export function renderCurrentFigures(
  runs: readonly BenchRun[],
  results: readonly LoadedResult[],
  env: RunEnvironment,
  targets: readonly Target[] = TARGETS,
): string {
  const rows = currentRows(runs, results, new Date(env.date), targets);
  const count = (r: CurrentRow['result']): number => rows.filter((x) => x.result === r).length;
  const notRun = rows.filter((r) => r.figure === null).length;
  const head =
    `Measured by one \`npm run bench\` started ${formatDate(env.date)} at commit \`${env.commit}\` ` +
    `(Node ${env.node}, ${env.cpus} × ${env.cpuModel}): ${runs.length - notRun} of ${runs.length} ` +
    `benches run; of the figures with a target, ${count('met')} met, ${count('missed')} missed, ` +
    `${count('not measured')} not measured.`;
  const table = markdownTable(
    ['bench', 'figure', 'measured', 'target', 'result'],
    rows.map((r) => [
      `\`${r.bench}\``,
      r.figure === null ? '—' : `\`${r.figure}\``,
      shown(r),
      r.target === undefined ? '—' : describeTarget(r.target),
      RESULT_TEXT[r.result] ?? r.result,
    ]),
  );
  return `${head}\n\n${table}\n`;
}

/**
 * `doc` with what lies between {@link CURRENT_START} and {@link CURRENT_END} replaced by
 * `content`; throws an `Error` naming the markers unless there is exactly one of each, in
 * that order.
 */
export function withCurrentFigures(doc: string, content: string): string {
  const updated = replaceBetween(doc, CURRENT_START, CURRENT_END, content);
  if (updated === undefined) {
    throw new Error(
      `the doc needs exactly one ${CURRENT_START} followed by one ${CURRENT_END}, where the current figures go`,
    );
  }
  return updated;
}

/** Writes the run's table into the doc at `docPath` (see {@link withCurrentFigures}). */
export function writeCurrentFigures(
  docPath: string,
  runs: readonly BenchRun[],
  results: readonly LoadedResult[],
  env: RunEnvironment,
): void {
  const doc = readFileSync(docPath, 'utf8');
  writeFileSync(docPath, withCurrentFigures(doc, renderCurrentFigures(runs, results, env)));
}
