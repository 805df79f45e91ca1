/**
 * @module `npm run bench:docs`: copies the benchmark summary (`bench/results/summary.md`,
 * built by the benches) into docs/benchmarks.md, between its two marker comments, and writes
 * the table of benches and targets there from `bench/benches.ts` and `bench/targets.ts`
 * (between its own markers), so neither is typed. Exits 1, changing nothing, when either
 * pair of markers or the summary is missing.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { replaceBetween } from '../bench/doc-markers.js';
import { RESULTS_DIR, SUMMARY_FILE, SUMMARY_TITLE } from '../bench/summary.js';
import { renderTargetTable, TARGETS_END, TARGETS_START } from '../bench/target-table.js';

/** Where the generated part starts. */
export const START_MARKER = '<!-- bench:summary:start -->';
/** Where the generated part ends. */
export const END_MARKER = '<!-- bench:summary:end -->';

const root = resolve(import.meta.dirname, '..');

/** Where to write output and errors (the process's streams, or a test's capture). */
export interface BenchDocsIo {
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
}

/**
 * `doc` with what lies between its markers replaced by `content`; `undefined` unless the doc
 * has exactly one start marker followed by exactly one end marker.
 */
export function replaceBetweenMarkers(doc: string, content: string): string | undefined {
  return replaceBetween(doc, START_MARKER, END_MARKER, content);
}

/** The summary without its title: what the doc shows. */
function summaryBody(summary: string): string {
  return summary.startsWith(SUMMARY_TITLE) ? summary.slice(SUMMARY_TITLE.length) : summary;
}

function readOrUndefined(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * Writes the summary at `summaryPath` into the doc at `docPath`; returns the exit code.
 *
 * @example
 * ```ts
 * const code = runBenchDocs({ docPath: 'docs/benchmarks.md', summaryPath: 'bench/results/summary.md' }, process);
 * ```
 */
export function runBenchDocs(
  options: { readonly docPath: string; readonly summaryPath: string },
  io: BenchDocsIo,
): number {
  const shown = (path: string): string => relative(process.cwd(), path) || path;
  const summary = readOrUndefined(options.summaryPath);
  if (summary === undefined) {
    io.stderr.write(
      `bench:docs: no summary at ${shown(options.summaryPath)}; ` +
        'run `npm run bench` (or one `npm run bench:<name>`) first\n',
    );
    return 1;
  }
  const doc = readOrUndefined(options.docPath);
  if (doc === undefined) {
    io.stderr.write(`bench:docs: cannot read ${shown(options.docPath)}\n`);
    return 1;
  }
  const parts = [
    { start: START_MARKER, end: END_MARKER, content: summaryBody(summary), what: 'figures' },
    { start: TARGETS_START, end: TARGETS_END, content: renderTargetTable(), what: 'targets' },
  ];
  let updated = doc;
  for (const part of parts) {
    const next = replaceBetween(updated, part.start, part.end, part.content);
    if (next === undefined) {
      io.stderr.write(
        `bench:docs: ${shown(options.docPath)} needs exactly one ${part.start} followed by ` +
          `one ${part.end}, where the generated ${part.what} go; nothing written\n`,
      );
      return 1;
    }
    updated = next;
  }
  if (updated === doc) {
    io.stdout.write(
      `${shown(options.docPath)} already shows ${shown(options.summaryPath)} and the targets\n`,
    );
    return 0;
  }
  writeFileSync(options.docPath, updated);
  io.stdout.write(
    `wrote ${shown(options.summaryPath)} and the targets into ${shown(options.docPath)}\n`,
  );
  return 0;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === import.meta.filename) {
  const { values } = parseArgs({
    options: { doc: { type: 'string' }, summary: { type: 'string' } },
  });
  process.exitCode = runBenchDocs(
    {
      docPath: resolve(values.doc ?? join(root, 'docs', 'benchmarks.md')),
      summaryPath: resolve(values.summary ?? join(RESULTS_DIR, SUMMARY_FILE)),
    },
    process,
  );
}
