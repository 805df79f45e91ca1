/**
 * docs/benchmarks.md's table of benches and targets is generated from bench/benches.ts and
 * bench/targets.ts (issue 45): the doc cannot show other targets than the code judges by, a
 * target cannot fall out of it, and every `npm run bench:<name>` script is in it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { describe, expect, it } from 'vitest';
import { BENCHES } from '../../bench/benches.js';
import { textBetween } from '../../bench/doc-markers.js';
import {
  renderTargetTable,
  TARGETS_END,
  TARGETS_START,
  withTargetTable,
} from '../../bench/target-table.js';
import { describeTarget, TARGETS, type Target } from '../../bench/targets.js';

const root = join(import.meta.dirname, '..', '..');
const docPath = join(root, 'docs', 'benchmarks.md');

/** The table's rows (after the header and its rule), as cells. */
function rows(table: string): string[][] {
  return table
    .split('\n')
    .slice(2)
    .map((line) =>
      line
        .slice(1, -1)
        .split(' | ')
        .map((cell) => cell.trim()),
    );
}

describe("docs/benchmarks.md's table of benches and targets", () => {
  it('is what bench/benches.ts and bench/targets.ts generate (npm run bench:docs writes it)', () => {
    const shown = textBetween(readFileSync(docPath, 'utf8'), TARGETS_START, TARGETS_END);
    expect(shown, `${docPath} needs ${TARGETS_START} … ${TARGETS_END}`).toBeDefined();
    expect(shown, 'the table differs from bench/targets.ts: run `npm run bench:docs`').toBe(
      renderTargetTable(),
    );
  });

  it('has a row per bench, each naming every target of its bench, at most ones included', () => {
    const table = rows(renderTargetTable());
    expect(table.map((r) => r[0])).toEqual(BENCHES.map((b) => `\`npm run bench:${b.name}\``));
    for (const target of TARGETS) {
      const row = table.find((r) => r[0] === `\`npm run bench:${target.bench}\``);
      expect(row?.[2]).toContain(`\`${target.kind}.${target.name}\` ${describeTarget(target)}`);
    }
    const container = table.find((r) => r[0] === '`npm run bench:container`');
    expect(container?.[2]).toBe('`ratios.warm_vs_pipe` ≤ 1.3; `ratios.cold_vs_podman_run` ≤ 1.2');
  });

  it('refuses a target whose bench it does not list', () => {
    const stray: Target = {
      bench: 'nowhere',
      kind: 'metrics',
      name: 'x',
      comparison: '>=',
      threshold: 1,
      what: '',
      source: 'issue 45',
    };
    expect(() => renderTargetTable(BENCHES, [...TARGETS, stray])).toThrow(
      /metrics\.x is of bench "nowhere"/,
    );
  });

  it('lists exactly the benches package.json has a bench:<name> script for', () => {
    const scripts = Object.keys(
      (
        JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
          scripts: Record<string, string>;
        }
      ).scripts,
    )
      .filter((s) => s.startsWith('bench:') && s !== 'bench:docs')
      .map((s) => s.slice('bench:'.length))
      .sort();
    expect(BENCHES.map((b) => b.name).sort()).toEqual(scripts);
  });

  it('replaces only what lies between its markers, and needs both', () => {
    const doc = `# B\n\n${TARGETS_START}\n| typed |\n${TARGETS_END}\n\nkept\n`;
    expect(withTargetTable(doc, '| t |')).toBe(
      `# B\n\n${TARGETS_START}\n\n| t |\n\n${TARGETS_END}\n\nkept\n`,
    );
    expect(() => withTargetTable(`# B\n\n${TARGETS_START}\n`)).toThrow(TARGETS_END);
  });

  it('is laid out as Prettier lays out markdown, so the doc stays formatted', async () => {
    const table = renderTargetTable();
    const config = (await resolveConfig(docPath)) ?? {};
    expect(await format(table, { ...config, parser: 'markdown' })).toBe(`${table}\n`);
  });
});
