/**
 * @module docs/benchmarks.md's table of benches and targets, generated from
 * `bench/benches.ts` (each bench and what it measures) and `bench/targets.ts` (its targets),
 * between two marker comments. `npm run bench` and `npm run bench:docs` write it;
 * `test/bench/target-table.test.ts` fails when the doc shows another.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { BENCHES, type Bench } from './benches.js';
import { replaceBetween } from './doc-markers.js';
import { markdownTable } from './summary.js';
import { describeTarget, TARGETS, type Target } from './targets.js';

/** Where the table starts in docs/benchmarks.md. */
export const TARGETS_START = '<!-- bench:targets:start -->';
/** Where it ends. */
export const TARGETS_END = '<!-- bench:targets:end -->';

/**
 * The table, as markdown: a row per bench (its script, what it measures, each of its
 * targets as `` `ratios.vs_langgraph` ≥ 40 ``, `—` for none). Throws an `Error` naming a
 * target whose bench is not in `benches`, so no target can fall out of the table.
 */
export function renderTargetTable(
  benches: readonly Bench[] = BENCHES,
  targets: readonly Target[] = TARGETS,
): string {
  const names = new Set(benches.map((b) => b.name));
  const lost = targets.find((t) => !names.has(t.bench));
  if (lost) {
    throw new Error(
      `the target ${lost.kind}.${lost.name} is of bench "${lost.bench}", which bench/benches.ts does not list`,
    );
  }
  return markdownTable(
    ['script', 'what it measures', 'target'],
    benches.map((b) => {
      const own = targets.filter((t) => t.bench === b.name);
      return [
        `\`npm run bench:${b.name}\``,
        b.measures,
        own.length === 0
          ? '—'
          : own.map((t) => `\`${t.kind}.${t.name}\` ${describeTarget(t)}`).join('; '),
      ];
    }),
  );
}

/**
 * `doc` with the table between {@link TARGETS_START} and {@link TARGETS_END}; throws an
 * `Error` naming the markers unless there is exactly one of each, in that order.
 */
export function withTargetTable(doc: string, table: string = renderTargetTable()): string {
  const updated = replaceBetween(doc, TARGETS_START, TARGETS_END, table);
  if (updated === undefined) {
    throw new Error(
      `the doc needs exactly one ${TARGETS_START} followed by one ${TARGETS_END}, where the table of benches and targets goes`,
    );
  }
  return updated;
}

/** Writes the table into the doc at `docPath`; returns whether that changed it. */
export function writeTargetTable(docPath: string): boolean {
  const doc = readFileSync(docPath, 'utf8');
  const updated = withTargetTable(doc);
  if (updated === doc) return false;
  writeFileSync(docPath, updated);
  return true;
}
