/**
 * @module The benchmark summary: every `bench/results/*.json` judged against
 * `bench/targets.ts`, as markdown in `bench/results/summary.md`. Rebuilt by each bench's
 * `report()` and at the end of `npm run bench`; `npm run bench:docs` copies it into
 * docs/benchmarks.md.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { currentEnvironment, type RunEnvironment } from './environment.js';
import {
  describeTarget,
  formatFigure,
  judge,
  TARGETS,
  type Target,
  type Verdict,
} from './targets.js';

/** Where the benches write their results and the summary. */
export const RESULTS_DIR = join(import.meta.dirname, 'results');
/** The summary's file name, beside the results. */
export const SUMMARY_FILE = 'summary.md';
/** The summary's first line; what follows it is what docs/benchmarks.md shows. */
export const SUMMARY_TITLE = '# Benchmark summary';

// `null` where the bench produced NaN or Infinity (JSON has neither). `commit`, `cpuModel`
// and `date` are absent from results written before the harness recorded them.
const figures = z.record(z.string(), z.number().nullable());
const resultSchema = z.object({
  bench: z.string().min(1),
  node: z.string(),
  cpus: z.number(),
  cpuModel: z.string().optional(),
  commit: z.string().optional(),
  date: z.string().optional(),
  metrics: figures,
  ratios: figures,
});

/** One result file as read. */
export interface LoadedResult {
  readonly file: string;
  readonly bench: string;
  readonly node: string;
  readonly cpus: number;
  readonly cpuModel: string | undefined;
  /** Absent in results written before the harness recorded it. */
  readonly commit: string | undefined;
  /** The result's own date, or the file's modification time when it has none. */
  readonly date: string;
  readonly metrics: Readonly<Record<string, number | null>>;
  readonly ratios: Readonly<Record<string, number | null>>;
}

/** The results of a directory, and the JSON files in it that are not results. */
export interface LoadedResults {
  readonly results: readonly LoadedResult[];
  readonly skipped: readonly { readonly file: string; readonly reason: string }[];
}

/** Reads every `*.json` in `dir` (none when `dir` does not exist). */
export function readResults(dir: string): LoadedResults {
  let files: string[];
  try {
    files = readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort();
  } catch {
    return { results: [], skipped: [] };
  }
  const results: LoadedResult[] = [];
  const skipped: { file: string; reason: string }[] = [];
  for (const file of files) {
    const path = join(dir, file);
    let parsed: z.infer<typeof resultSchema>;
    try {
      parsed = resultSchema.parse(JSON.parse(readFileSync(path, 'utf8')));
    } catch (error) {
      skipped.push({
        file,
        reason: error instanceof SyntaxError ? 'not JSON' : 'not a bench result',
      });
      continue;
    }
    results.push({
      file,
      bench: parsed.bench,
      node: parsed.node,
      cpus: parsed.cpus,
      cpuModel: parsed.cpuModel,
      commit: parsed.commit,
      date: parsed.date ?? statSync(path).mtime.toISOString(),
      metrics: parsed.metrics,
      ratios: parsed.ratios,
    });
  }
  return { results, skipped };
}

/** One target against the figure a result holds for it. */
export interface SummaryRow {
  readonly target: Target;
  readonly value: number | undefined;
  readonly verdict: Verdict;
  /** The result the figure comes from; absent when no result of that bench was found. */
  readonly result: LoadedResult | undefined;
  /** The result was measured at another commit than the summary's (or an unknown one). */
  readonly stale: boolean;
}

/** Judges every target against the results: pure, for the summary and its tests. */
export function summarize(
  results: readonly LoadedResult[],
  commit: string,
  targets: readonly Target[] = TARGETS,
): SummaryRow[] {
  const byBench = new Map(results.map((r) => [r.bench, r]));
  return targets.map((target) => {
    const result = byBench.get(target.bench);
    const raw = result?.[target.kind][target.name];
    const value = typeof raw === 'number' && Number.isFinite(raw) ? raw : undefined;
    return {
      target,
      value,
      verdict: judge(target, value),
      result,
      stale: result !== undefined && result.commit !== commit,
    };
  });
}

/** `2026-11-25 13:20 UTC` from an ISO date; other text as it is. */
function formatDate(date: string): string {
  const d = new Date(date);
  return Number.isNaN(d.getTime()) ? date : `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

function formatCommit(commit: string | undefined): string {
  return commit === undefined ? 'unknown commit' : `\`${commit}\``;
}

// The figure as shown, unless rounding would carry it across the threshold (0.9496 shown as
// 0.95 beside "missed"): then all its digits.
function shownFigure(row: SummaryRow): string {
  if (row.value === undefined) return '—';
  const shown = formatFigure(row.value);
  const reread = Number(shown.replaceAll(' ', ''));
  return judge(row.target, reread) === row.verdict ? shown : String(row.value);
}

function runLabel(row: SummaryRow): string {
  if (row.result === undefined) return 'no result';
  const label = `${formatCommit(row.result.commit)}, ${formatDate(row.result.date)}`;
  return row.stale ? `${label} (not current)` : label;
}

const VERDICT_TEXT: Readonly<Record<Verdict, string>> = {
  met: 'met',
  missed: '**missed**',
  'not measured': 'not measured',
};

/**
 * A markdown table laid out as Prettier lays it out (cells padded to the widest of their
 * column), so docs/benchmarks.md stays formatted after `npm run bench:docs`.
 */
export function markdownTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
): string {
  const escape = (cell: string): string => cell.replaceAll('|', '\\|');
  const cells = [header, ...rows].map((row) => row.map(escape));
  // Code points: every character these tables use is one column wide.
  const width = (cell: string): number => Array.from(cell).length;
  const widths = header.map((_, i) => Math.max(3, ...cells.map((row) => width(row[i] ?? ''))));
  const line = (row: readonly string[]): string =>
    `| ${widths.map((w, i) => (row[i] ?? '') + ' '.repeat(w - width(row[i] ?? ''))).join(' | ')} |`;
  const [head = [], ...body] = cells;
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}

/** The summary as markdown, from results already read: pure, for tests. */
export function renderSummary(
  loaded: LoadedResults,
  env: RunEnvironment,
  targets: readonly Target[] = TARGETS,
): string {
  const rows = summarize(loaded.results, env.commit, targets);
  const count = (v: Verdict): number => rows.filter((r) => r.verdict === v).length;
  const stale = rows.filter((r) => r.stale).length;
  const parts = [
    SUMMARY_TITLE,
    `Built ${formatDate(env.date)} at commit \`${env.commit}\` (Node ${env.node}, ${env.cpus} × ${env.cpuModel}) ` +
      `from \`bench/results/*.json\`: ${count('met')} met, ${count('missed')} missed, ` +
      `${count('not measured')} not measured` +
      (stale > 0 ? `; ${stale} of the figures from a run at another commit ("not current").` : '.'),
    'Each row names the run its figure comes from. A commit ending in `-dirty` had ' +
      'uncommitted changes, so two runs at the same `-dirty` commit may have measured ' +
      'different code. Targets are in `bench/targets.ts`.',
    markdownTable(
      ['bench', 'figure', 'target', 'measured', 'result', 'run'],
      rows.map((r) => [
        `\`${r.target.bench}\``,
        `\`${r.target.kind}.${r.target.name}\``,
        describeTarget(r.target),
        shownFigure(r),
        VERDICT_TEXT[r.verdict],
        runLabel(r),
      ]),
    ),
    'What each target means (the words of the document it comes from):',
    markdownTable(
      ['figure', 'what and target', 'source'],
      targets.map((t) => [`\`${t.bench}: ${t.kind}.${t.name}\``, t.what, t.source]),
    ),
  ];
  if (loaded.results.length > 0) {
    parts.push(
      'The runs:',
      markdownTable(
        ['bench', 'commit', 'date', 'node', 'cpus'],
        [...loaded.results]
          .sort((a, b) => a.bench.localeCompare(b.bench))
          .map((r) => [
            `\`${r.bench}\``,
            formatCommit(r.commit) + (r.commit === env.commit ? '' : ' (not current)'),
            formatDate(r.date),
            r.node,
            r.cpuModel === undefined ? String(r.cpus) : `${r.cpus} × ${r.cpuModel}`,
          ]),
      ),
    );
  }
  if (loaded.skipped.length > 0) {
    parts.push(`Not read: ${loaded.skipped.map((s) => `\`${s.file}\` (${s.reason})`).join(', ')}.`);
  }
  return `${parts.join('\n\n')}\n`;
}

/**
 * Rebuilds `summary.md` from every result in `dir`; returns its path.
 *
 * @example
 * ```ts
 * const path = writeSummary(); // bench/results/summary.md, at this checkout's commit
 * ```
 */
export function writeSummary(
  dir: string = RESULTS_DIR,
  env: RunEnvironment = currentEnvironment(),
): string {
  const path = join(dir, SUMMARY_FILE);
  writeFileSync(path, renderSummary(readResults(dir), env));
  return path;
}
