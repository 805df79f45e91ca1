/**
 * @module `npm run bench:docs`: copies the benchmark summary (`bench/results/summary.md`,
 * built by the benches) into docs/benchmarks.md, between its two marker comments, so the
 * "current figures" there are generated, never typed. Exits 1, changing nothing, when the
 * markers or the summary are missing.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { RESULTS_DIR, SUMMARY_FILE, SUMMARY_TITLE } from '../bench/summary.js';

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

function count(text: string, part: string): number {
  return text.split(part).length - 1;
}

/**
 * `doc` with what lies between its markers replaced by `content`; `undefined` unless the doc
 * has exactly one start marker followed by exactly one end marker.
 */
export function replaceBetweenMarkers(doc: string, content: string): string | undefined {
  if (count(doc, START_MARKER) !== 1 || count(doc, END_MARKER) !== 1) return undefined;
  const start = doc.indexOf(START_MARKER) + START_MARKER.length;
  const end = doc.indexOf(END_MARKER);
  if (end < start) return undefined;
  return `${doc.slice(0, start)}\n\n${content.trim()}\n\n${doc.slice(end)}`;
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
  const updated = replaceBetweenMarkers(doc, summaryBody(summary));
  if (updated === undefined) {
    io.stderr.write(
      `bench:docs: ${shown(options.docPath)} needs exactly one ${START_MARKER} followed by ` +
        `one ${END_MARKER}, where the generated figures go; nothing written\n`,
    );
    return 1;
  }
  if (updated === doc) {
    io.stdout.write(`${shown(options.docPath)} already shows ${shown(options.summaryPath)}\n`);
    return 0;
  }
  writeFileSync(options.docPath, updated);
  io.stdout.write(`wrote ${shown(options.summaryPath)} into ${shown(options.docPath)}\n`);
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
